package source_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/testcorpus"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

func gz(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return out.Bytes()
}

// drain reads every snapshot of src.
func drain(t *testing.T, src snapshot.Source) ([]*snapshot.Snapshot, error) {
	var out []*snapshot.Snapshot
	for {
		s, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

// Open tells every input kind apart by content, whatever the file's name,
// and each Source yields what the kind's own reader yields.
func TestOpenTellsInputsApartByContent(t *testing.T) {
	dumps := testcorpus.Dir(t)
	series, err := os.ReadFile(filepath.Join(dumps, "jdk11-debian-4dumps-ycrash-testdata.txt"))
	require.NoError(t, err)
	javacore, err := os.ReadFile(filepath.Join(dumps, "openj9-javacore-semeru21-macos-aarch64-2024-flamegrapher.txt"))
	require.NoError(t, err)
	jfrFile, err := os.ReadFile("../../pkg/jfr/testdata/locks-jdk17.jfr")
	require.NoError(t, err)
	want, err := threaddump.ParseString(string(series))
	require.NoError(t, err)
	require.Len(t, want, 4)

	dir := t.TempDir()
	rec := filepath.Join(dir, "run.bin")
	w, err := record.Create(rec, record.Header{Version: "test", Start: time.Now(), Target: snapshot.Target{PID: 7, Name: "x", Kind: snapshot.KindNative}})
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, w.Append(&snapshot.Snapshot{Time: time.Unix(int64(1000+i), 0), Interval: time.Second, Threads: []snapshot.OSThread{{TID: 7, Name: "main"}}}))
	}
	require.NoError(t, w.Close())
	recBytes, err := os.ReadFile(rec)
	require.NoError(t, err)

	for _, tc := range []struct {
		name      string
		content   []byte
		snapshots int
		check     func(t *testing.T, s []*snapshot.Snapshot)
	}{
		{"dumps.txt", series, 4, func(t *testing.T, s []*snapshot.Snapshot) {
			for i := range want {
				assert.Equal(t, len(want[i].Threads), len(s[i].Dump.Threads))
			}
		}},
		{"dumps.log.gz", gz(t, series), 4, nil},
		{"javacore.txt", javacore, 1, func(t *testing.T, s []*snapshot.Snapshot) { assert.NotEmpty(t, s[0].Dump.Threads) }},
		{"any-name", jfrFile, -1, func(t *testing.T, s []*snapshot.Snapshot) {
			waits := 0
			for _, x := range s {
				waits += len(x.Waits)
			}
			assert.Positive(t, waits, "a JFR recording yields its waits")
		}},
		{"rec.jfr.gz", gz(t, jfrFile), -1, nil},
		{"recording.txt", recBytes, 3, func(t *testing.T, s []*snapshot.Snapshot) {
			assert.Equal(t, "main", s[0].Threads[0].Name)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			require.NoError(t, os.WriteFile(path, tc.content, 0o644))
			for _, viaStdin := range []bool{false, true} {
				name := path
				if viaStdin {
					name = source.StdinName
				}
				src, err := source.Open(name, bytes.NewReader(tc.content))
				require.NoError(t, err)
				got, err := drain(t, src)
				require.NoError(t, err)
				require.NoError(t, src.Close())
				if tc.snapshots >= 0 {
					assert.Len(t, got, tc.snapshots)
				} else {
					assert.NotEmpty(t, got)
				}
				if viaStdin {
					assert.Equal(t, "standard input", src.Name())
				} else {
					assert.Equal(t, path, src.Name())
				}
				if tc.check != nil {
					tc.check(t, got)
				}
			}
		})
	}
}

// What cannot be read is a clear error, and a file that fails part way
// keeps what came before it.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := source.Open(dir, nil)
	assert.ErrorContains(t, err, "is a directory, not a dump file")
	_, err = source.Open(filepath.Join(dir, "missing"), nil)
	assert.ErrorIs(t, err, os.ErrNotExist)

	src, err := source.Open(source.StdinName, strings.NewReader("no dump here\njust a log line\n"))
	require.NoError(t, err)
	got, err := drain(t, src)
	assert.Empty(t, got)
	assert.ErrorContains(t, err, "standard input")

	jfrFile, err := os.ReadFile("../../pkg/jfr/testdata/locks-jdk17.jfr")
	require.NoError(t, err)
	src, err = source.Open(source.StdinName, bytes.NewReader(jfrFile[:len(jfrFile)*2/3]))
	require.NoError(t, err)
	_, err = drain(t, src)
	assert.Error(t, err, "a cut recording ends with an error, not a silent end")
}
