package source_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/testcorpus"
)

// nextWithin returns the next snapshot of src, failing the test when none
// comes within d.
func nextWithin(t *testing.T, src snapshot.Source, d time.Duration) *snapshot.Snapshot {
	t.Helper()
	type res struct {
		s   *snapshot.Snapshot
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan res, 1)
	go func() {
		s, err := src.Next(ctx)
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.s
	case <-time.After(d):
		cancel()
		<-ch
		t.Fatalf("no dump within %s", d)
		return nil
	}
}

func corpusDump(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join(testcorpus.Dir(t), name))
	require.NoError(t, err)
	return b
}

func appendFile(t *testing.T, path string, parts ...[]byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	for _, p := range parts {
		_, err = f.Write(p)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// A followed file gives each dump a moment after it is written, not at the
// next dump; then the dumps of a new file at the path (rotation) and of the
// file written again from its start (truncation); the end of ctx ends it.
func TestFollowFileRotationTruncation(t *testing.T) {
	a := corpusDump(t, "jdk25-windows-jcmd-pid-preamble-minecraft-lattice.txt")
	b := corpusDump(t, "jdk17-selenium-cdp-deadlock-parking-not-jvm-detected.txt")
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendFile(t, path, []byte("INFO starting\n"), a, []byte("INFO after the dump\n"))

	src, err := source.Follow(path, nil)
	require.NoError(t, err)
	defer src.Close()
	s := nextWithin(t, src, 5*time.Second)
	threadsA := len(s.Dump.Threads)
	assert.Positive(t, threadsA)

	// A log line cut in the middle, then the rest of it and a dump.
	appendFile(t, path, []byte("INFO half a li"))
	time.Sleep(50 * time.Millisecond)
	appendFile(t, path, []byte("ne\n"), b)
	s = nextWithin(t, src, 5*time.Second)
	threadsB := len(s.Dump.Threads)
	assert.NotEqual(t, threadsA, threadsB)

	// Rotation: the old file gets one more dump before it is renamed; a
	// new file at the path gets the next.
	appendFile(t, path, a)
	require.NoError(t, os.Rename(path, path+".1"))
	appendFile(t, path, []byte("INFO new file\n"), b)
	assert.Len(t, nextWithin(t, src, 5*time.Second).Dump.Threads, threadsA, "the old file is read to its end")
	assert.Len(t, nextWithin(t, src, 5*time.Second).Dump.Threads, threadsB, "then the new file from its start")

	// Truncation (copytruncate): the file is cut to nothing and written
	// again, shorter than what was read (a is smaller than b).
	require.NoError(t, os.Truncate(path, 0))
	appendFile(t, path, []byte("INFO restarted\n"), a)
	s = nextWithin(t, src, 5*time.Second)
	assert.Len(t, s.Dump.Threads, threadsA)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = src.Next(ctx)
	assert.True(t, errors.Is(err, io.EOF), "%v", err)
	assert.Less(t, time.Since(start), 3*time.Second)
	ws := src.Warnings()
	assert.Contains(t, ws, path+": a new file replaced it once (rotation); the old one was read to its end, the new one from its start")
	assert.Contains(t, ws, path+": it was truncated once; it was read again from its start")
}

// A pipe that stays open gives each dump a moment after it is written; its
// end ends the Source.
func TestFollowPipe(t *testing.T) {
	a := corpusDump(t, "jdk8-play-devmode-monitor-contention.txt")
	pr, pw := io.Pipe()
	src, err := source.Follow(source.StdinName, pr)
	require.NoError(t, err)
	defer src.Close()
	assert.Equal(t, "standard input", src.Name())
	go func() { _, _ = pw.Write(append([]byte("log line\n"), a...)) }()
	s := nextWithin(t, src, 5*time.Second)
	assert.Positive(t, len(s.Dump.Threads))
	go func() { _, _ = pw.Write(a) }()
	nextWithin(t, src, 5*time.Second)
	require.NoError(t, pw.Close())
	_, err = src.Next(context.Background())
	assert.True(t, errors.Is(err, io.EOF), "%v", err)
}
