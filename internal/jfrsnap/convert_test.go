package jfrsnap_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// record runs scenario on j with a recording, waits until its log has
// `lines` more lines matching progress, and returns the JFR.dump file.
func recordJFR(t *testing.T, j testjvm.JDK, scenario string, progress *regexp.Regexp, lines int) string {
	t.Helper()
	dir := t.TempDir()
	jfc := testjvm.JFRLockSettingsFile(t)
	p := testjvm.StartWith(t, j, scenario, testjvm.Options{JVMFlags: []string{
		"-XX:StartFlightRecording=name=ctprof-test,settings=" + jfc,
	}})
	want := len(progress.FindAll(p.Log(), -1)) + lines
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return len(progress.FindAll(log, -1)) >= want })
	f := filepath.Join(dir, "rec.jfr")
	p.Jcmd(t, "JFR.dump", "name=ctprof-test", "filename="+f)
	p.Stop()
	return f
}

// readSnapshots reads a recording with small batches.
func readSnapshots(t *testing.T, file string, opts jfrsnap.Options) ([]*snapshot.Snapshot, *jfrsnap.Reader) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, jfrsnap.IsJFR(data))
	r := jfrsnap.NewReader(bytes.NewReader(data), "rec.jfr", opts)
	var out []*snapshot.Snapshot
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		out = append(out, s)
	}
	return out, r
}

func allJDKFrames(st []threaddump.Frame) bool {
	for _, f := range st {
		if !threaddump.IsJDKClass(f.Class) {
			return false
		}
	}
	return true
}

func hasFrame(st []threaddump.Frame, class, method string) bool {
	for _, f := range st {
		if f.Class == class && f.Method == method {
			return true
		}
	}
	return false
}

var waitedRE = regexp.MustCompile(`(?m)^WAITED \d+ \d+$`)

// TestJFRReaderJfrLocks reads real recordings of JfrLocks (JDK 17 and 25)
// and checks each wait kind the scenario makes, the batches' bounds and
// order, and the thread dumps the recording holds.
func TestJFRReaderJfrLocks(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			file := recordJFR(t, j, "JfrLocks", waitedRE, 25)
			const batch = 200
			snaps, r := readSnapshots(t, file, jfrsnap.Options{MaxEvents: batch, MaxSpan: 500 * time.Millisecond})
			var monitor, wait, park, dumps int
			var last time.Time
			for _, s := range snaps {
				assert.LessOrEqual(t, len(s.Waits)+len(s.GCPauses), batch)
				assert.False(t, s.Time.Before(last), "snapshot times go back: %v after %v", s.Time, last)
				last = s.Time
				if s.Dump != nil {
					dumps++
					assert.Empty(t, s.Waits)
					assert.NotEmpty(t, s.Dump.Threads)
				}
				var from, to time.Time
				for _, w := range s.Waits {
					if from.IsZero() || w.Start.Before(from) {
						from = w.Start
					}
					to = w.Start
					assert.LessOrEqual(t, len(w.Stack), snapshot.MaxWaitEventFrames)
					assert.Positive(t, w.OSThreadID, "%s has the waiter's tid", w.Event)
					switch {
					case w.Class == "JfrLocks$Monitor":
						monitor++
						assert.Equal(t, "monitor", w.Kind)
						assert.Equal(t, "jdk.JavaMonitorEnter", w.Event)
						assert.True(t, strings.HasPrefix(w.Thread, "monitor-"), w.Thread)
						assert.True(t, strings.HasPrefix(w.Other, "monitor-"), "previous owner %q", w.Other)
						assert.True(t, hasFrame(w.Stack, "JfrLocks", "enterMonitor"))
					case w.Class == "JfrLocks$Signal":
						wait++
						assert.Equal(t, "wait", w.Kind)
						assert.Equal(t, "waiter", w.Thread)
						if !w.TimedOut {
							assert.Equal(t, "notifier", w.Other, "the notifier ends a wait()")
						}
					case strings.HasPrefix(w.Class, "java.util.concurrent.locks.ReentrantLock$"):
						park++
						assert.Equal(t, "synchronizer", w.Kind)
						assert.True(t, strings.HasPrefix(w.Thread, "park-"), w.Thread)
						assert.NotZero(t, w.Address)
					}
					if w.Kind == "wait" || w.Kind == "condition" {
						assert.False(t, allJDKFrames(w.Stack), "an idle JDK thread's wait is dropped: %s %v", w.Thread, w.Stack)
					}
				}
				// A batch spans at most MaxSpan of recording time (by
				// start; events arrive in commit order, roughly).
				if !from.IsZero() {
					assert.Less(t, to.Sub(from), 2*time.Second)
				}
			}
			assert.Greater(t, monitor, 20, "monitor enters")
			assert.Greater(t, wait, 20, "wait() on the signal")
			assert.Greater(t, park, 20, "parks on the ReentrantLock")
			assert.Positive(t, dumps, "jdk.ThreadDump events become dumps")
			assert.Equal(t, dumps, r.Dumps)
			assert.Greater(t, len(snaps), 3, "the recording comes in several batches")
		})
	}
}

var pinnedRE = regexp.MustCompile(`(?m)^PINNED \d+$`)

// TestJFRReaderPinned: on JDK 25, virtual threads sleeping inside a native
// call's upcall are recorded as pinned, with their stack.
func TestJFRReaderPinned(t *testing.T) {
	j := testjvm.JDK25(t)
	require.True(t, testjvm.Supports(t, j, "JfrPinned"))
	file := recordJFR(t, j, "JfrPinned", pinnedRE, 15)
	snaps, _ := readSnapshots(t, file, jfrsnap.Options{})
	pinned, long := 0, 0
	for _, s := range snaps {
		for _, w := range s.Waits {
			if w.Kind != "pinned" {
				continue
			}
			pinned++
			assert.Equal(t, "jdk.VirtualThreadPinned", w.Event)
			assert.True(t, strings.HasPrefix(w.Thread, "vt-pinned-"), w.Thread)
			assert.True(t, hasFrame(w.Stack, "JfrPinned", "sortInNative"), "%v", w.Stack)
			if w.Duration >= time.Millisecond && hasFrame(w.Stack, "JfrPinned", "compare") {
				long++ // the 2 ms sleep in the upcall
			}
		}
	}
	assert.Greater(t, pinned, 50, fmt.Sprintf("pinned events in %d snapshots", len(snaps)))
	assert.Greater(t, long, pinned*9/10, "most pins are the upcall's sleeps")
}

// TestJFRReaderDamaged: a cut recording yields what came before the cut,
// then an error naming the source; text is not JFR.
func TestJFRReaderDamaged(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "pkg", "jfr", "testdata", "locks-jdk17.jfr"))
	require.NoError(t, err)
	require.True(t, jfrsnap.IsJFR(data))
	assert.False(t, jfrsnap.IsJFR([]byte("2024-01-01 Full thread dump")))

	r := jfrsnap.NewReader(bytes.NewReader(data[:len(data)*2/3]), "cut.jfr", jfrsnap.Options{})
	var err2 error
	for err2 == nil {
		_, err2 = r.Next()
	}
	require.Error(t, err2)
	if !errors.Is(err2, io.EOF) {
		assert.Contains(t, err2.Error(), "cut.jfr")
	}
}
