package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/browsertest"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// The reports of the two ways people use ctprof on a JVM, opened in a real
// headless Chromium: a series of dumps taken with the JDK's jcmd, and a
// live attach. Both of a contended JVM (SyncSingleton: 8 request threads
// on one synchronized method).

func artifactsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", browsertest.ArtifactsDir)
}

// checkContendedReport asserts what both reports must show.
func checkContendedReport(t *testing.T, path string) {
	t.Helper()
	p := browsertest.Open(t, path)
	pixels := browsertest.CheckReport(t, p)
	assert.Contains(t, pixels, "chart-flame")
	text := browsertest.Eval[string](t, p, `document.body.innerText`)
	assert.Contains(t, text, "SyncSingleton.handle(SyncSingleton.java:29)", "the lock table names where the threads wait")
	assert.Contains(t, text, "request-N", "the pool table")

	browsertest.CheckFlameZoom(t, p)
	// A view of the monitor's waiters exists; switching to it redraws.
	views := browsertest.Eval[[]string](t, p, `Array.prototype.map.call(document.querySelectorAll("#flame-view option"), function (o) { return o.value })`)
	var lockView string
	for _, v := range views {
		if strings.HasPrefix(v, "lock:monitor|SyncSingleton|") {
			lockView = v
		}
	}
	require.NotEmpty(t, lockView, "views: %v", views)
	browsertest.Eval[bool](t, p, `(function () { var s = document.getElementById("flame-view"); s.value = `+strconv.Quote(lockView)+`; s.dispatchEvent(new Event("change")); return true })()`)
	assert.Equal(t, lockView, browsertest.Flame(t, p).View)
	browsertest.CheckFlameSearch(t, p, "SyncSingleton.handle")
	t.Log("screenshot:", p.Screenshot(t, artifactsDir()))
}

func TestHTMLReportOfJVMDumpSeries(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	first := p.WaitForDump(t, dumpTimeout, func(d []byte) bool { return testjvm.CountLines(d, "- waiting to lock") >= 3 }, "-l")
	series := append([]byte(nil), first...)
	for i := 0; i < 2; i++ {
		series = append(series, p.ThreadPrint(t, "-l")...)
	}
	dir := t.TempDir()
	dumps := filepath.Join(dir, "series.txt")
	require.NoError(t, os.WriteFile(dumps, series, 0o644))
	out := func(name string) string { return filepath.Join(dir, name) }

	code, stdout, stderr := run(t, "", "analyze", "--html", out("r.html"), "--pprof", out("r.pb.gz"), "--folded", out("r.folded"), "--speedscope", out("r.speedscope.json"), dumps)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "SyncSingleton", "the summary still prints")
	for _, what := range []string{"HTML report", "pprof profile", "folded stacks", "speedscope profile"} {
		assert.Contains(t, stderr, "wrote the "+what)
	}
	checkContendedReport(t, out("r.html"))

	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	top, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=blocked", out("r.pb.gz")).CombinedOutput()
	require.NoError(t, err, "%s", top)
	assert.Contains(t, string(top), "SyncSingleton.handle")
	folded, err := os.ReadFile(out("r.folded"))
	require.NoError(t, err)
	assert.Contains(t, string(folded), "SyncSingleton.serve;SyncSingleton.handle ")
}

func TestHTMLReportOfLiveAttach(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	path := filepath.Join(t.TempDir(), "live.html")
	code, _, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "10", "--interval", "300ms", "--html", path)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "wrote the HTML report to "+path)
	checkContendedReport(t, path)

	page, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(page), "pid "+strconv.Itoa(p.PID))
	assert.Contains(t, string(page), "overhead ctprof caused")
	for _, id := range []string{"chart-timeline-threads_by_state", "chart-timeline-context_switches", "chart-timeline-cpu", "chart-timeline-run_queue_wait", "chart-timeline-connections_threads"} {
		assert.Contains(t, string(page), `id="`+id+`"`)
	}
}

func TestOutputFlagsFailEarly(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "d.txt")
	require.NoError(t, os.WriteFile(dump, []byte("\"main\" #1 prio=5 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\tat A.b(A.java:1)\n\n"), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"same path twice", []string{"--html", filepath.Join(dir, "x"), "--pprof", filepath.Join(dir, "x")}, 2, "would both be written to"},
		{"missing directory", []string{"--html", filepath.Join(dir, "no", "such", "r.html")}, 1, "cannot write the HTML report"},
		{"a directory", []string{"--folded", dir}, 1, "it is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append(append([]string{"analyze"}, c.args...), dump)...)
			assert.Equal(t, c.code, code)
			assert.Contains(t, stderr, c.msg)
			assert.Empty(t, stdout, "nothing ran")
		})
	}
	// attach checks before it samples: no target is even looked at.
	code, _, stderr := run(t, "", "attach", "1", "--html", filepath.Join(dir, "no", "r.html"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot write the HTML report")
}
