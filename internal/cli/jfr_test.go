package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

var waitedLineRE = regexp.MustCompile(`(?m)^WAITED (\d+) (\d+)$`)

// jfrRecording is a JfrLocks run's recording and the workload's own
// figure of its monitor waits at the moment the recording was dumped.
type jfrRecording struct {
	file         string
	waitedNanos  int64
	waitedAtMsec int64
}

// recordJfrLocks runs JfrLocks (args) on j with a recording, lets it run
// `window` (by its WAITED lines, one per 100 ms), dumps the recording to
// file and reads the workload's own waited total closest to the dump.
func recordJfrLocks(t *testing.T, j testjvm.JDK, file string, window time.Duration, args ...string) jfrRecording {
	t.Helper()
	jfc := testjvm.JFRLockSettingsFile(t)
	p := testjvm.StartWith(t, j, "JfrLocks", testjvm.Options{JVMFlags: []string{
		"-XX:StartFlightRecording=name=ctprof-test,settings=" + jfc,
	}}, args...)
	want := len(waitedLineRE.FindAll(p.Log(), -1)) + int(window/(100*time.Millisecond))
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return len(waitedLineRE.FindAll(log, -1)) >= want })
	p.Jcmd(t, "JFR.dump", "name=ctprof-test", "filename="+file)
	after := time.Now().UnixMilli()
	// One more line after the dump, so the closest line is known.
	n := len(waitedLineRE.FindAll(p.Log(), -1))
	log := p.WaitForLog(t, 30*time.Second, func(log []byte) bool { return len(waitedLineRE.FindAll(log, -1)) > n })
	p.Stop()
	// The dump takes the data up to when the JVM handles the command,
	// near the end of the jcmd call (most of which is jcmd's own JVM
	// starting).
	mid := after
	rec := jfrRecording{file: file}
	best := int64(-1)
	for _, m := range waitedLineRE.FindAllSubmatch(log, -1) {
		at, _ := strconv.ParseInt(string(m[1]), 10, 64)
		ns, _ := strconv.ParseInt(string(m[2]), 10, 64)
		if d := abs64(at - mid); best < 0 || d < best {
			best, rec.waitedNanos, rec.waitedAtMsec = d, ns, at
		}
	}
	require.GreaterOrEqual(t, best, int64(0), "no WAITED line")
	return rec
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

type jfrDoc struct {
	Timelines []struct {
		ID     string
		Series []struct {
			Name   string
			Points [][2]float64
		}
	}
	JFR *struct {
		Events      int64   `json:"events"`
		WaitSeconds float64 `json:"wait_seconds"`
	} `json:"jfr"`
	Locks []struct {
		ID, Kind, Class, Resource string
		DumpsSeen                 int `json:"dumps_seen"`
		JFR                       *struct {
			Events         int64            `json:"events"`
			WaitSeconds    float64          `json:"wait_seconds"`
			P50Ms          float64          `json:"p50_ms"`
			P99Ms          float64          `json:"p99_ms"`
			MaxMs          float64          `json:"max_ms"`
			Kinds          map[string]int64 `json:"kinds"`
			PreviousOwners []struct {
				Thread string
				Events int64
			} `json:"previous_owners"`
			Notifiers []struct {
				Thread string
				Events int64
			} `json:"notifiers"`
			Sites []struct{ Frame string } `json:"sites"`
		} `json:"jfr"`
	} `json:"locks"`
	Findings []struct{ Kind, Summary string } `json:"findings"`
}

// TestAnalyzeJFRMatchesWorkload: `ctprof analyze x.jfr -f json` on
// recordings JDK 17 and 25 wrote of JfrLocks. The monitor's wait_seconds
// is within 15 % of the workload's own nanoTime measure over the same
// window; the wait() carries its notifier; the ReentrantLock's parks are
// kind synchronizer; the text summary says the JFR sentence.
func TestAnalyzeJFRMatchesWorkload(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			rec := recordJfrLocks(t, j, filepath.Join(t.TempDir(), "x.jfr"), 4*time.Second)
			code, out, errOut := run(t, "", "analyze", rec.file, "-f", "json")
			require.Equal(t, 0, code, errOut)
			var doc jfrDoc
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			require.NotNil(t, doc.JFR)
			found := map[string]bool{}
			for _, l := range doc.Locks {
				if l.JFR == nil {
					continue
				}
				switch {
				case l.Class == "JfrLocks$Monitor":
					found["monitor"] = true
					own := float64(rec.waitedNanos) / 1e9
					t.Logf("monitor waits: JFR %.3f s, workload %.3f s", l.JFR.WaitSeconds, own)
					assert.InEpsilon(t, own, l.JFR.WaitSeconds, 0.15, "JFR %.3f s, workload %.3f s", l.JFR.WaitSeconds, own)
					assert.Positive(t, l.DumpsSeen, "joined with the recording's thread dumps")
					require.NotEmpty(t, l.JFR.PreviousOwners)
					assert.True(t, strings.HasPrefix(l.JFR.PreviousOwners[0].Thread, "monitor-"))
					assert.LessOrEqual(t, l.JFR.P50Ms, l.JFR.P99Ms)
					assert.LessOrEqual(t, l.JFR.P99Ms, l.JFR.MaxMs)
				case l.Class == "JfrLocks$Signal":
					found["signal"] = true
					// The lock's kind may be a dump's (a waiter seen
					// re-acquiring it); the recording's waits are wait().
					assert.Positive(t, l.JFR.Kinds["wait"])
					require.NotEmpty(t, l.JFR.Notifiers)
					assert.Equal(t, "notifier", l.JFR.Notifiers[0].Thread)
				case strings.HasPrefix(l.Class, "java.util.concurrent.locks.ReentrantLock$"):
					found["park"] = true
					assert.Equal(t, "synchronizer", l.Kind)
					assert.Positive(t, l.JFR.Kinds["synchronizer"])
					assert.Contains(t, l.JFR.Sites[0].Frame, "JfrLocks.takeLock")
				}
			}
			assert.Equal(t, map[string]bool{"monitor": true, "signal": true, "park": true}, found)
			// The recording's CPU load joins the timeline (one sample a
			// second, as the settings ask).
			var load []string
			for _, tl := range doc.Timelines {
				if tl.ID == "jvm_cpu_load" {
					for _, sr := range tl.Series {
						load = append(load, sr.Name)
						assert.NotEmpty(t, sr.Points, sr.Name)
					}
				}
			}
			assert.Equal(t, []string{"JVM user", "JVM system", "machine total"}, load)

			code, out, errOut = run(t, "", "analyze", rec.file)
			require.Equal(t, 0, code, errOut)
			assert.Regexp(t, `monitor JfrLocks\$Monitor .*JFR: threads waited \d+ times, .* in all, p50 .* ms, p99 .* ms, max .* ms, mostly behind thread "monitor-\d"`, out)
			assert.Contains(t, out, "JFR recording: ")
		})
	}
}

// TestAnalyzeJFRPinned: on JDK 25 a virtual thread blocked in native code
// while mounted is reported from the recording.
func TestAnalyzeJFRPinned(t *testing.T) {
	j := testjvm.JDK25(t)
	jfc := testjvm.JFRLockSettingsFile(t)
	p := testjvm.StartWith(t, j, "JfrPinned", testjvm.Options{JVMFlags: []string{
		"--enable-native-access=ALL-UNNAMED", "-XX:StartFlightRecording=name=ctprof-test,settings=" + jfc,
	}})
	pinned := regexp.MustCompile(`(?m)^PINNED \d+$`)
	n := len(pinned.FindAll(p.Log(), -1))
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return len(pinned.FindAll(log, -1)) >= n+15 })
	file := filepath.Join(t.TempDir(), "pinned.jfr")
	p.Jcmd(t, "JFR.dump", "name=ctprof-test", "filename="+file)
	p.Stop()
	code, out, errOut := run(t, "", "analyze", file, "-f", "json")
	require.Equal(t, 0, code, errOut)
	var doc jfrDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	var events int64
	for _, l := range doc.Locks {
		if l.Resource == "pinned" && l.JFR != nil {
			assert.Equal(t, "pinned", l.Kind)
			events += l.JFR.Events
		}
	}
	assert.Greater(t, events, int64(50))
	found := false
	for _, f := range doc.Findings {
		if strings.Contains(f.Summary, "pinned to their carrier thread") && strings.Contains(f.Summary, "JfrPinned.compare") {
			found = true
		}
	}
	assert.True(t, found, "a finding names the pinned virtual threads: %+v", doc.Findings)
}

var jfrGoldenFile = filepath.Join("testdata", "jfr", "jfrlocks-jdk17.jfr")

// TestAnalyzeJFRGolden pins the text summary of a small recording of our
// own workload (testdata/jfr, made by a JDK 17 JVM when run with -update),
// and reads its pprof export with go tool pprof.
func TestAnalyzeJFRGolden(t *testing.T) {
	if *update {
		abs, err := filepath.Abs(jfrGoldenFile)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		recordJfrLocks(t, testjvm.JDK17(t), abs, time.Second, "2")
	}
	code, out, errOut := run(t, "", "analyze", jfrGoldenFile)
	require.Equal(t, 0, code, errOut)
	golden(t, "jfr-jfrlocks-jdk17.txt", []byte(out))

	pb := filepath.Join(t.TempDir(), "waits.pb.gz")
	code, _, errOut = run(t, "", "analyze", jfrGoldenFile, "-f", "json", "--pprof", pb)
	require.Equal(t, 0, code, errOut)
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "go tool pprof reads the export")
	cmd := exec.Command(goTool, "tool", "pprof", "-sample_index=delay", "-top", "-nodecount=5", pb)
	top, err := cmd.CombinedOutput()
	require.NoError(t, err, string(top))
	assert.Contains(t, string(top), "Type: delay")
	assert.Regexp(t, `JfrLocks\.(enterMonitor|takeLock|awaitSignal|awaitReply)`, string(top))
	cmd = exec.Command(goTool, "tool", "pprof", "-sample_index=contentions", "-top", pb)
	top, err = cmd.CombinedOutput()
	require.NoError(t, err, string(top))
	assert.Contains(t, string(top), "Type: contentions")
}

// A recording shipped gzipped (recording.jfr.gz) reads as the recording
// itself; a gzipped thread dump still reads as a dump.
func TestAnalyzeGzippedJFR(t *testing.T) {
	plain, err := os.ReadFile(jfrGoldenFile)
	require.NoError(t, err)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err = zw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	gz := filepath.Join(t.TempDir(), "rec.jfr.gz")
	require.NoError(t, os.WriteFile(gz, zipped.Bytes(), 0o644))

	code, want, errOut := run(t, "", "analyze", jfrGoldenFile)
	require.Equal(t, 0, code, errOut)
	code, got, errOut := run(t, "", "analyze", gz)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, want, got)
	assert.Contains(t, got, "JFR recording:")

	dump := "\"main\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\tat App.main(App.java:1)\n\n"
	var zd bytes.Buffer
	zw = gzip.NewWriter(&zd)
	_, err = zw.Write([]byte("Full thread dump OpenJDK 64-Bit Server VM (17 mixed mode):\n\n" + dump))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	code, out, errOut := run(t, zd.String(), "analyze", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 thread dump")
}
