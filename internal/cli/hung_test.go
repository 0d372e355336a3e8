package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// hungRun runs the ctprof binary with args, killing it (by its pid) if it
// outlives limit, and returns its exit code, stdout, stderr and how long
// it ran.
func hungRun(t *testing.T, limit time.Duration, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	bin, err := buildCtprof()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	werr := cmd.Run()
	took := time.Since(start)
	require.NoError(t, ctx.Err(), "ctprof %s ran past %s; stderr: %s", strings.Join(args, " "), limit, errOut.String())
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, werr)
	}
	t.Logf("ctprof %s: exit %d in %s", strings.Join(args, " "), code, took.Round(time.Millisecond))
	return code, out.String(), errOut.String(), took
}

// findingOf returns the JSON summary's first finding of kind, or nil.
func findingOf(doc map[string]any, kind string) map[string]any {
	for _, f := range doc["findings"].([]any) {
		if f := f.(map[string]any); f["kind"] == kind {
			return f
		}
	}
	return nil
}

// allStopped reads the JVM's threads from /proc, as the test's own truth.
func allStopped(pid int) bool {
	ts := testjvm.ThreadStates(pid)
	for _, th := range ts {
		if th.State != 'T' && th.State != 't' {
			return false
		}
	}
	return len(ts) > 0
}

// waitState polls /proc until the JVM's threads are all stopped (want)
// or none is.
func waitState(t *testing.T, pid int, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ts := testjvm.ThreadStates(pid)
		stopped := 0
		for _, th := range ts {
			if th.State == 'T' || th.State == 't' {
				stopped++
			}
		}
		if want && stopped == len(ts) && stopped > 0 || !want && stopped == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "threads of pid %d: %v", pid, ts)
		time.Sleep(20 * time.Millisecond)
	}
}

// attachTriggers lists the .attach_pid files in the JVM's working
// directory and /tmp: after ctprof, none may be left.
func attachTriggers(pid int) []string {
	var out []string
	for _, dir := range []string{filepath.Join("/proc", strconv.Itoa(pid), "cwd"), filepath.Join("/proc", strconv.Itoa(pid), "root", "tmp")} {
		m, _ := filepath.Glob(filepath.Join(dir, ".attach_pid*"))
		out = append(out, m...)
	}
	return out
}

// A JVM stopped with SIGSTOP: a one-shot answers at once with the stopped
// finding, --duration is kept, ctprof sends the JVM nothing (no trigger
// file, no SIGQUIT that would print a dump when it resumes), and once the
// JVM is continued a dump works, whether its attach listener ran before
// the stop or not.
func TestAttachStoppedJVM(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "SyncSingleton", "4")
			pid := strconv.Itoa(p.PID)
			// Continue it whatever happens, so the cleanup's kill and
			// reap are not held (SIGKILL ends a stopped process too).
			t.Cleanup(func() { _ = syscall.Kill(p.PID, syscall.SIGCONT) })
			for round, listener := range []string{"no attach listener yet", "attach listener running"} {
				require.NoError(t, syscall.Kill(p.PID, syscall.SIGSTOP))
				waitState(t, p.PID, true)

				code, out, errOut, took := hungRun(t, 20*time.Second, "attach", pid, "--count", "1", "--format", "json")
				require.Equal(t, 0, code, errOut)
				assert.Less(t, took, 10*time.Second, "%s: a one-shot of a stopped JVM answers within 10 s", listener)
				var doc map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				f := findingOf(doc, "process-stopped")
				require.NotNil(t, f, "%s: findings %v", listener, doc["findings"])
				assert.Contains(t, f["summary"], "The process is stopped (SIGSTOP or a debugger: no tracer")
				assert.Equal(t, "critical", f["severity"])
				assert.Equal(t, float64(0), doc["dumps"])
				// The finding is true of /proc as the test reads it.
				assert.True(t, allStopped(p.PID), "every thread of the JVM is stopped")

				if round == 0 {
					rec := filepath.Join(t.TempDir(), "stopped.ctprof")
					code, out, errOut, took = hungRun(t, 20*time.Second, "attach", pid, "--duration", "5s", "--format", "json", "--record", rec)
					require.Equal(t, 0, code, errOut)
					assert.Less(t, took, 7*time.Second, "--duration 5s of a stopped JVM ends within 7 s")
					// The recording's replay gives the live run's finding.
					require.NoError(t, json.Unmarshal([]byte(out), &doc))
					live := findingOf(doc, "process-stopped")
					require.NotNil(t, live, "findings %v", doc["findings"])
					code, out, errOut = run(t, "", "report", rec, "--format", "json")
					require.Equal(t, 0, code, errOut)
					var replay map[string]any
					require.NoError(t, json.Unmarshal([]byte(out), &replay))
					assert.Equal(t, live, findingOf(replay, "process-stopped"), "report of the recording")
				}
				assert.Empty(t, attachTriggers(p.PID), "no trigger file left")

				require.NoError(t, syscall.Kill(p.PID, syscall.SIGCONT))
				waitState(t, p.PID, false)
				code, out, errOut, _ = hungRun(t, 60*time.Second, "attach", pid, "--count", "1", "--format", "json")
				require.Equal(t, 0, code, errOut)
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				assert.Equal(t, float64(1), doc["dumps"], "%s: a dump works once the JVM runs again; warnings: %v", listener, doc["warnings"])
				assert.Nil(t, findingOf(doc, "process-stopped"))
				assert.Empty(t, attachTriggers(p.PID), "no trigger file left")
			}
			// ctprof never signalled the stopped JVM: a SIGQUIT handled
			// after the trigger was gone would have printed a dump.
			assert.NotContains(t, string(p.Log()), "Full thread dump")
			assert.False(t, p.Exited())
		})
	}
}

// reachingRE reads the time to reach each safepoint from -Xlog:safepoint.
var reachingRE = regexp.MustCompile(`Reaching safepoint: (\d+) ns`)

// A time-to-safepoint stall: "matcher-3" runs a counted loop compiled
// without safepoint polls while the allocators wait at the safepoint
// their collection asked for. A one-shot names the looping thread within
// 10 s, and the JVM's own safepoint log shows the stall was real.
func TestAttachSafepointStall(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			o := testjvm.Options{SafepointLog: true}
			if jdk.Major >= 25 {
				// The listener runs from the start: the one-shot's request
				// goes out before ctprof has parsed its command line
				// (jvm.EarlyDump) and meets the stall there. On JDK 17
				// ctprof starts the listener, which the stall holds back.
				o.JVMFlags = []string{"-XX:+StartAttachListener"}
			}
			// Loops of about 24 s: the one-shot (5 s) and the Ctrl-C
			// (1 s) fit in one with room, a loop that ends meanwhile is
			// retried below, and the test waits out each loop's end
			// for the JVM's own log (60 s loops cost a minute a JDK).
			p := testjvm.StartWith(t, jdk, "SafepointStall", o, "24")
			p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("STALL begin")) })
			var doc map[string]any
			for try := 0; ; try++ {
				ended := bytes.Count(p.Log(), []byte("STALL end"))
				p.WaitForSafepointStall(t, time.Second, 3*time.Minute)
				code, out, errOut, took := hungRun(t, 30*time.Second, "attach", strconv.Itoa(p.PID), "--count", "1", "--format", "json")
				require.Equal(t, 0, code, errOut)
				assert.Less(t, took, 10*time.Second, "a one-shot names the stall within 10 s")
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				// A loop that ended meanwhile leaves nothing to name.
				if bytes.Count(p.Log(), []byte("STALL end")) == ended || try == 2 {
					break
				}
			}
			f := findingOf(doc, "safepoint-stall")
			require.NotNil(t, f, "findings %v; warnings %v", doc["findings"], doc["warnings"])
			assert.Contains(t, f["summary"], `thread "matcher-3" keeps running`)
			assert.Contains(t, f["summary"], "The JVM has not reached a safepoint for")
			assert.Contains(t, f["summary"], "every other Java thread waits")
			assert.Contains(t, strings.Join(toStrings(f["evidence"]), "\n"), "the VM Thread woke", "the VM Thread polls for the safepoint")
			assert.Nil(t, findingOf(doc, "gc-pause"))

			// Ctrl-C while the JVM does not answer: the run stops at once,
			// and the summary still names the thread. A loop that ended
			// meanwhile (its length is calibrated on a loaded machine)
			// leaves nothing to name: the next one is tried.
			for try := 0; ; try++ {
				ended := bytes.Count(p.Log(), []byte("STALL end"))
				p.WaitForSafepointStall(t, 500*time.Millisecond, 3*time.Minute)
				took, doc := ctrlC(t, p.PID)
				if bytes.Count(p.Log(), []byte("STALL end")) != ended && try < 2 {
					continue
				}
				assert.Less(t, took, 2*time.Second, "Ctrl-C is kept whatever the JVM does")
				f := findingOf(doc, "safepoint-stall")
				require.NotNil(t, f, "findings %v", doc["findings"])
				assert.Contains(t, f["summary"], `thread "matcher-3"`)
				break
			}

			// The JVM's own log: once the loop ends, a safepoint that took
			// seconds to reach, as long as the stall ctprof saw at least.
			p.WaitForLog(t, 3*time.Minute, func(log []byte) bool { return bytes.Contains(log, []byte("STALL end")) })
			var longest int64
			deadline := time.Now().Add(10 * time.Second)
			for longest < 3e9 && time.Now().Before(deadline) {
				b, _ := os.ReadFile(filepath.Join(filepath.Dir(p.LogPath()), "safepoints.log"))
				for _, m := range reachingRE.FindAllSubmatch(b, -1) {
					n, _ := strconv.ParseInt(string(m[1]), 10, 64)
					longest = max(longest, n)
				}
				time.Sleep(100 * time.Millisecond)
			}
			assert.GreaterOrEqual(t, longest, int64(3e9), "the safepoint log shows a stall of seconds")
			assert.Empty(t, attachTriggers(p.PID), "no trigger file left")
		})
	}
}

// gcPauseRE reads the JVM's own log of its pauses (-Xlog:gc).
var gcPauseRE = regexp.MustCompile(`Pause Full \(System\.gc\(\)\) .* ([0-9.]+)ms`)

// A JVM in long full collections (LongGCPause: the serial collector over
// a large live set, one System.gc() after another): the one-shot's dump
// waits behind a collection, and the finding says a garbage collection
// stops the JVM, not a thread that does not reach a safepoint. The
// JVM's GC log shows pauses longer than the deadline ctprof gave up at.
func TestAttachLongGCPause(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			gcLog := filepath.Join(t.TempDir(), "gc.log")
			p := testjvm.StartWith(t, jdk, "LongGCPause", testjvm.Options{JVMFlags: []string{"-Xlog:gc:file=" + gcLog}})
			p.WaitForLog(t, 2*time.Minute, func(log []byte) bool { return bytes.Contains(log, []byte("\nGC ")) })
			var f map[string]any
			var doc map[string]any
			// The request may land in the moment between two collections:
			// a few tries.
			for try := 0; try < 3 && f == nil; try++ {
				code, out, errOut, took := hungRun(t, 30*time.Second, "attach", strconv.Itoa(p.PID), "--count", "1", "--dump-timeout", "1s", "--format", "json")
				require.Equal(t, 0, code, errOut)
				assert.Less(t, took, 10*time.Second)
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				f = findingOf(doc, "gc-pause")
			}
			require.NotNil(t, f, "findings %v; warnings %v", doc["findings"], doc["warnings"])
			assert.Contains(t, f["summary"], "A garbage collection has kept the JVM stopped for")
			assert.Nil(t, findingOf(doc, "safepoint-stall"))
			assert.Contains(t, strings.Join(toStrings(f["evidence"]), "\n"), "hsperfdata: a collection began")

			// The JVM's own GC log: full collections longer than ctprof's
			// one-second deadline.
			var longest float64
			for _, m := range gcPauseRE.FindAllSubmatch(readFile(t, gcLog), -1) {
				ms, _ := strconv.ParseFloat(string(m[1]), 64)
				longest = max(longest, ms)
			}
			assert.Greater(t, longest, 1000.0, "the GC log shows full collections over a second")
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// ctrlC runs `ctprof attach PID` on a JVM that does not answer, sends it
// SIGINT (by its pid) once its first request has waited two seconds, and
// returns how long it took to end after that, and its summary.
func ctrlC(t *testing.T, pid int) (time.Duration, map[string]any) {
	t.Helper()
	bin, err := buildCtprof()
	require.NoError(t, err)
	cmd := exec.Command(bin, "attach", strconv.Itoa(pid), "--format", "json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Its first tick asks for a dump at once: wait until ctprof says it
	// samples, then two seconds of the JVM's silence.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), "sampling pid") {
		require.True(t, time.Now().Before(deadline), "ctprof did not start: %s", errOut.String())
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	sent := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("ctprof did not end within 10 s of Ctrl-C")
	}
	took := time.Since(sent)
	t.Logf("ctprof ended %s after Ctrl-C", took.Round(time.Millisecond))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	return took, doc
}
