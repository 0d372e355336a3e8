package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// ctprofRecordingRE matches a ctprof recording in JFR.check's output, with
// its state.
var ctprofRecordingRE = regexp.MustCompile(`name=(ctprof-\d+-\d+) .*\((\w+)\)`)

// ctprofRecordings lists the ctprof recordings JFR.check shows, by name,
// with their state, asked through ctprof's own attach client (cheap enough
// to poll; the JDK's jcmd gives the final word in the tests).
func ctprofRecordings(t *testing.T, pid int) map[string]string {
	t.Helper()
	info, err := jvm.Inspect("/proc", pid)
	require.NoError(t, err)
	out, err := jvm.Jcmd(context.Background(), info, "JFR.check")
	require.NoError(t, err)
	return parseRecordings(string(out))
}

func parseRecordings(check string) map[string]string {
	m := map[string]string{}
	for _, sm := range ctprofRecordingRE.FindAllStringSubmatch(check, -1) {
		m[sm[1]] = sm[2]
	}
	return m
}

// waitForRecording waits until ctprof (pid ctprofPID) has a running
// recording in the JVM and returns its name.
func waitForRecording(t *testing.T, jvmPID, ctprofPID int, p *ctprofProc) string {
	t.Helper()
	prefix := "ctprof-" + strconv.Itoa(ctprofPID) + "-"
	deadline := time.Now().Add(60 * time.Second)
	for {
		for name, state := range ctprofRecordings(t, jvmPID) {
			if strings.HasPrefix(name, prefix) && state == "running" {
				return name
			}
		}
		require.True(t, time.Now().Before(deadline), "no running ctprof recording:\n%s", p.stderr.String())
		time.Sleep(200 * time.Millisecond)
	}
}

// jcmdHasNoCtprofRecording is the final word, from the JDK's own jcmd.
func jcmdHasNoCtprofRecording(t *testing.T, p *testjvm.Process) {
	t.Helper()
	check := string(p.Jcmd(t, "JFR.check"))
	assert.Empty(t, parseRecordings(check), "ctprof recordings left:\n%s", check)
}

// ctprofJFRDirs are ctprof's recording directories for pid in /tmp (the
// test JVMs share the host's /tmp).
func ctprofJFRDirs(t *testing.T, pid int) []string {
	t.Helper()
	m, err := filepath.Glob("/tmp/ctprof-jfr-" + strconv.Itoa(pid) + "-*")
	require.NoError(t, err)
	return m
}

// attach --jfr stops and removes its recording however the run ends: at
// --duration, on Ctrl-C, and when the target exits (then nothing is left
// to stop, and ctprof's directory in the JVM's /tmp is removed all the
// same).
func TestAttachJFRLeavesNoRecording(t *testing.T) {
	for _, end := range []string{"duration", "SIGINT", "target exit"} {
		t.Run(end, func(t *testing.T) {
			target := testjvm.Start(t, testjvm.JDK17(t), "JfrLocks")
			args := []string{"attach", strconv.Itoa(target.PID), "--jfr", "--interval", "200ms", "--format", "json"}
			if end == "duration" {
				args = append(args, "--duration", "8s")
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "summary.json"))
			require.NoError(t, err)
			defer out.Close()
			p := startCtprof(t, nil, out, args...)
			p.waitLine(t, "sampling pid")
			name := waitForRecording(t, target.PID, p.cmd.Process.Pid, p)
			require.Len(t, ctprofJFRDirs(t, target.PID), 1, "ctprof's directory for the dumps")
			switch end {
			case "SIGINT":
				// Two more seconds of the workload's reports (it waits all the
				// while), still before ctprof's first read at 5 s: the
				// waits reach the summary only by the read at Ctrl-C.
				seen := bytes.Count(target.Log(), []byte("WAITED "))
				target.WaitForLog(t, 30*time.Second, func(log []byte) bool { return bytes.Count(log, []byte("WAITED ")) >= seen+20 })
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
			case "target exit":
				target.Stop()
			}
			require.NoError(t, p.wait(t), "ctprof after %s:\n%s", end, p.stderr.String())
			if end == "target exit" {
				assert.Contains(t, p.stderr.String(), "exited after")
			} else {
				jcmdHasNoCtprofRecording(t, target)
				for _, l := range strings.Split(p.stderr.String(), "\n") {
					if !strings.Contains(l, "the pause budget") {
						assert.NotContains(t, l, "JFR", "no JFR complaint:\n%s", p.stderr.String())
					}
				}
			}
			assert.Empty(t, ctprofJFRDirs(t, target.PID), "ctprof's directory is removed")
			b, err := os.ReadFile(out.Name())
			require.NoError(t, err)
			var doc struct {
				JFR *struct {
					Events int64 `json:"events"`
				} `json:"jfr"`
				Warnings []string `json:"warnings"`
			}
			require.NoError(t, json.Unmarshal(b, &doc), "%s", b)
			if end != "target exit" {
				require.NotNil(t, doc.JFR, "recorded waits in the summary (recording %s)", name)
				assert.Positive(t, doc.JFR.Events)
			}
			for _, w := range doc.Warnings {
				if strings.HasPrefix(w, "the pause budget") {
					continue // dumps held back by the budget, which counts the recording's pauses: no complaint
				}
				assert.NotContains(t, w, "JFR")
			}
		})
	}
}

// A killed ctprof cannot stop its recording: the recording ends by itself
// within its duration, and writes no file (a JDK 21+ recording with a
// duration and no destination would write one into the JVM's working
// directory). Its directory in the JVM's /tmp stays until the next
// ctprof that records the JVM, which removes it.
func TestAttachJFRRecordingEndsByItselfAfterSIGKILL(t *testing.T) {
	const recordingDuration = 15 * time.Second
	target := testjvm.Start(t, testjvm.JDK25(t), "JfrLocks")
	p := startCtprof(t, nil, nil, "attach", strconv.Itoa(target.PID), "--jfr", "--jfr-duration", recordingDuration.String(), "--interval", "500ms")
	p.waitLine(t, "sampling pid")
	name := waitForRecording(t, target.PID, p.cmd.Process.Pid, p)
	require.NoError(t, p.cmd.Process.Kill())
	killed := time.Now()
	_ = p.wait(t)
	t.Cleanup(func() {
		for _, d := range ctprofJFRDirs(t, target.PID) {
			_ = os.RemoveAll(d) // what a killed ctprof could not remove
		}
	})
	for {
		if len(ctprofRecordings(t, target.PID)) == 0 {
			break
		}
		require.Less(t, time.Since(killed), recordingDuration+10*time.Second, "recording %s still there", name)
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("the recording ended %s after ctprof was killed", time.Since(killed).Round(100*time.Millisecond))
	jcmdHasNoCtprofRecording(t, target)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(target.LogPath()), "*.jfr"))
	require.NoError(t, err)
	assert.Empty(t, files, "no recording written into the JVM's working directory")

	left := ctprofJFRDirs(t, target.PID)
	require.Len(t, left, 1, "the killed ctprof's directory")
	code, _, stderr := run(t, "", "attach", strconv.Itoa(target.PID), "--jfr", "--duration", "2s", "--interval", "500ms")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, ctprofJFRDirs(t, target.PID), "the next ctprof removed it, and its own")
}

// WAITED lines of JfrLocks: epoch millis and the monitor-wait total (ns).
var waitedRE = regexp.MustCompile(`(?m)^WAITED (\d+) (\d+)$`)

// waitedAt interpolates the workload's own monitor-wait total at t.
func waitedAt(t *testing.T, log []byte, at time.Time) float64 {
	t.Helper()
	type point struct{ ms, ns float64 }
	var pts []point
	for _, m := range waitedRE.FindAllSubmatch(log, -1) {
		ms, _ := strconv.ParseFloat(string(m[1]), 64)
		ns, _ := strconv.ParseFloat(string(m[2]), 64)
		pts = append(pts, point{ms, ns})
	}
	x := float64(at.UnixNano()) / 1e6
	for k := 1; k < len(pts); k++ {
		if pts[k].ms >= x && pts[k-1].ms <= x {
			f := (x - pts[k-1].ms) / (pts[k].ms - pts[k-1].ms)
			return pts[k-1].ns + f*(pts[k].ns-pts[k-1].ns)
		}
	}
	t.Fatalf("no WAITED lines around %s", at)
	return 0
}

// A live attach --jfr run measures the monitor waits the workload measures
// itself (nanoTime around synchronized), within 15 % over the same window,
// and names the previous owners and the notifier.
func TestAttachJFRWaitsMatchTheWorkload(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			target := testjvm.Start(t, jdk, "JfrLocks")
			var doc struct {
				JFR struct {
					Events int64     `json:"events"`
					First  time.Time `json:"first"`
					Last   time.Time `json:"last"`
				} `json:"jfr"`
				Locks []struct {
					Class string `json:"class"`
					JFR   *struct {
						WaitSeconds    float64 `json:"wait_seconds"`
						PreviousOwners []struct {
							Thread string `json:"thread"`
						} `json:"previous_owners"`
						Notifiers []struct {
							Thread string `json:"thread"`
						} `json:"notifiers"`
					} `json:"jfr"`
				} `json:"locks"`
			}
			code, out, errOut := run(t, "", "attach", strconv.Itoa(target.PID), "--jfr", "--jfr-threshold", "0", "--duration", "12s", "--format", "json")
			require.Equal(t, 0, code, errOut)
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			require.Positive(t, doc.JFR.Events)
			var monitor, signal float64
			var owners, notifiers []string
			for _, l := range doc.Locks {
				if l.JFR == nil {
					continue
				}
				switch l.Class {
				case "JfrLocks$Monitor":
					monitor = l.JFR.WaitSeconds
					for _, o := range l.JFR.PreviousOwners {
						owners = append(owners, o.Thread)
					}
				case "JfrLocks$Signal":
					signal = l.JFR.WaitSeconds
					for _, o := range l.JFR.Notifiers {
						notifiers = append(notifiers, o.Thread)
					}
				}
			}
			from, to := doc.JFR.First, doc.JFR.Last
			require.Greater(t, to.Sub(from), 3*time.Second, "a window of several reads")
			own := workloadWaited(t, target, from, to)
			t.Logf("%s: JFR %.3f s, the workload %.3f s over %s", jdk.Name, monitor, own, to.Sub(from).Round(time.Millisecond))
			require.Positive(t, own)
			assert.InDelta(t, own, monitor, 0.15*own, "JfrLocks$Monitor wait_seconds")
			assert.Subset(t, []string{"monitor-1", "monitor-2", "monitor-3"}, owners)
			assert.NotEmpty(t, owners)
			assert.Positive(t, signal)
			assert.Equal(t, []string{"notifier"}, notifiers)
		})
	}
}

// serve --jfr records each JVM target: its waits reach /metrics as
// ctprof_lock_wait_seconds_total, and the recording is stopped when serve
// stops.
func TestServeJFR(t *testing.T) {
	target := testjvm.Start(t, testjvm.JDK17(t), "JfrLocks")
	t.Run("serve", func(t *testing.T) {
		url, _ := startServe(t, "--pid", strconv.Itoa(target.PID), "--interval", "500ms", "--jfr", "--jfr-threshold", "1ms")
		waitSeries(t, url, target.PID, "JFR wait seconds of JfrLocks$Monitor", func(s map[string]float64) bool {
			for k, v := range s {
				if strings.HasPrefix(k, "ctprof_lock_wait_seconds_total{") && strings.Contains(k, "JfrLocks$Monitor") && v > 0 {
					return true
				}
			}
			return false
		})
		assert.Len(t, ctprofRecordings(t, target.PID), 1, "one recording for the target")
	}) // serve is stopped (as by Ctrl-C) when the subtest ends
	jcmdHasNoCtprofRecording(t, target)
	assert.Empty(t, ctprofJFRDirs(t, target.PID))
}

func TestJFRFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"attach", "1", "--jfr-threshold", "5ms"}, "--jfr-threshold needs --jfr"},
		{[]string{"attach", "1", "--jfr-duration", "1m"}, "--jfr-duration needs --jfr"},
		{[]string{"attach", "1", "--jfr", "--jfr-threshold", "-1ms"}, "must not be negative"},
		{[]string{"attach", "1", "--jfr", "--jfr-duration", "5s"}, "at least 15s"},
		{[]string{"serve", "--pid", "1", "--jfr-threshold", "5ms"}, "--jfr-threshold needs --jfr"},
		{[]string{"serve", "--pid", "1", "--jfr", "--jfr-threshold", "-1s"}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, "", tc.args...)
			assert.Equal(t, 2, code, errOut)
			assert.Contains(t, errOut, tc.msg)
		})
	}
	code, out, _ := run(t, "", "attach", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "--jfr-threshold duration")
	assert.Contains(t, out, "ends by itself within 2 minutes")
	assert.NotContains(t, out, "--jfr-duration", "a hidden flag")
}

// While the GC moves the contended objects (a small heap, a thread that
// churns through arrays, full collections that compact), the recording's
// waits still land on the resources the dumps show: the monitor's resource
// measures what the workload measures itself within 15 %, the resources'
// totals add up to the recording's, no address is listed twice and no lock
// the dumps saw is listed as "in no thread dump".
func TestAttachJFRResourcesAcrossGCMoves(t *testing.T) {
	jdk := testjvm.JDK17(t)
	target := testjvm.StartWith(t, jdk, "JfrLocks", testjvm.Options{JVMFlags: []string{"-Xmx48m", "-XX:+UseSerialGC"}}, "3", "churn")
	var doc struct {
		JFR struct {
			Events      int64     `json:"events"`
			WaitSeconds float64   `json:"wait_seconds"`
			First       time.Time `json:"first"`
			Last        time.Time `json:"last"`
		} `json:"jfr"`
		Locks []struct {
			Class     string   `json:"class"`
			Address   string   `json:"address"`
			Addresses []string `json:"addresses"`
			DumpsSeen int      `json:"dumps_seen"`
			Site      string   `json:"site"`
		} `json:"locks"`
		Sites []struct {
			ID        string `json:"id"`
			Class     string `json:"class"`
			DumpsSeen int    `json:"dumps_seen"`
			JFR       *struct {
				Events      int64   `json:"events"`
				WaitSeconds float64 `json:"wait_seconds"`
			} `json:"jfr"`
		} `json:"contention_sites"`
	}
	code, out, errOut := run(t, "", "attach", strconv.Itoa(target.PID), "--jfr", "--jfr-threshold", "0", "--duration", "12s", "--interval", "500ms", "--format", "json",
		// Dumps throughout the run, whatever the host's load: the premise
		// is a monitor the dumps see at more than one address. On this
		// small, churning heap the JVM's own collections stop it about
		// three quarters of the time, and the time its threads take to
		// reach those safepoints is booked against the budget with the
		// recording's start (hsperfdata cannot tell whose they were).
		"--pause-budget", "50")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Positive(t, doc.JFR.Events)

	moved := false
	seenAddr := map[string]bool{}
	dumpClasses := map[string]bool{}
	for _, l := range doc.Locks {
		if l.Class == "JfrLocks$Monitor" && len(l.Addresses) > 1 {
			moved = true
		}
		if l.DumpsSeen > 0 {
			dumpClasses[l.Class] = true
		}
	}
	if !moved {
		t.Logf("summary: %s", out)
	}
	require.True(t, moved, "the GC moved the monitor during the run (its addresses): the test's premise")
	for _, l := range doc.Locks {
		assert.False(t, seenAddr[l.Address], "address %s listed twice", l.Address)
		seenAddr[l.Address] = true
		if l.DumpsSeen == 0 {
			assert.False(t, dumpClasses[l.Class], "%s %s listed as seen in the recording only, while the dumps saw its class", l.Class, l.Address)
		}
	}
	var sum, monitor float64
	var events int64
	for _, s := range doc.Sites {
		if s.JFR == nil {
			continue
		}
		sum += s.JFR.WaitSeconds
		events += s.JFR.Events
		t.Logf("resource %s: dumps_seen %d, JFR %d waits %.3f s", s.ID, s.DumpsSeen, s.JFR.Events, s.JFR.WaitSeconds)
		if s.Class == "JfrLocks$Monitor" {
			monitor += s.JFR.WaitSeconds
			assert.Positive(t, s.DumpsSeen, "the monitor's resource is the one the dumps show")
		}
	}
	assert.Equal(t, doc.JFR.Events, events, "the resources' JFR waits add up to the recording's")
	assert.InDelta(t, doc.JFR.WaitSeconds, sum, 1e-3*doc.JFR.WaitSeconds+1e-3, "the resources' JFR seconds add up to the recording's")

	from, to := doc.JFR.First, doc.JFR.Last
	own := workloadWaited(t, target, from, to)
	t.Logf("JFR at the monitor's resource %.3f s, the workload %.3f s over %s", monitor, own, to.Sub(from).Round(time.Millisecond))
	require.Positive(t, own)
	assert.InDelta(t, own, monitor, 0.15*own, "JfrLocks$Monitor's resource wait_seconds")
}

// workloadWaited is the thread-seconds JfrLocks measured itself waiting to
// enter its monitor between from and to. The last waits a run read may be
// newer than the workload's latest line: it waits for the next one.
func workloadWaited(t *testing.T, target *testjvm.Process, from, to time.Time) float64 {
	t.Helper()
	log := target.WaitForLog(t, 30*time.Second, func(log []byte) bool {
		m := waitedRE.FindAllSubmatch(log, -1)
		if len(m) == 0 {
			return false
		}
		ms, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
		return time.UnixMilli(ms).After(to)
	})
	return (waitedAt(t, log, to) - waitedAt(t, log, from)) / 1e9
}
