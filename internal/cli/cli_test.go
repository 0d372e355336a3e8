package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"github.com/ctprof/ctprof/internal/testcorpus"
	"github.com/ctprof/ctprof/internal/testgolden"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// run executes ctprof with args and returns exit code, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testgolden.Check(t, filepath.Join("testdata", "golden", name), got, *update, "go test ./internal/cli -update")
}

// TestGoldenCorpus pins the JSON and text summaries of every real-world
// dump, so any change in what ctprof says about them is seen in review.
func TestGoldenCorpus(t *testing.T) {
	dir := sharedDumps(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(base, func(t *testing.T) {
			code, out, errOut := run(t, "", "analyze", "--format", "json", f)
			require.Equal(t, 0, code, errOut)
			// Paths differ between machines; the golden keeps the base name.
			out = strings.ReplaceAll(out, dir+string(filepath.Separator), "")
			var doc map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			golden(t, base+".json", []byte(out))

			code, out, errOut = run(t, "", "analyze", f)
			require.Equal(t, 0, code, errOut)
			out = strings.ReplaceAll(out, dir+string(filepath.Separator), "")
			golden(t, base+".txt", []byte(out))
		})
	}
}

func TestJSONContract(t *testing.T) {
	dir := sharedDumps(t)
	code, out, errOut := run(t, "", "analyze", "-f", "json", filepath.Join(dir, "jdk8-play-devmode-monitor-contention.txt"))
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Schema  int            `json:"schema"`
		Dumps   int            `json:"dumps"`
		Threads int            `json:"threads"`
		States  map[string]int `json:"states"`
		Locks   []struct {
			Kind, Class, Address string
			Owner                *string
			OwnerFrame           *string `json:"owner_frame"`
			Waiters              int
			WaitFrame            *string `json:"wait_frame"`
		} `json:"locks"`
		Deadlocks []struct{ Threads []string } `json:"deadlocks"`
		Pools     []struct {
			Name    string
			Threads int
		} `json:"pools"`
		Findings []struct{ Kind, Severity, Summary string } `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 1, doc.Schema)
	assert.Equal(t, 1, doc.Dumps)
	assert.Equal(t, 44, doc.Threads)
	assert.Equal(t, 15, doc.States["BLOCKED"])
	require.NotEmpty(t, doc.Locks)
	l := doc.Locks[0]
	assert.Equal(t, "monitor", l.Kind)
	assert.Equal(t, 8, l.Waiters)
	require.NotNil(t, l.Owner)
	assert.Equal(t, "New I/O worker #7", *l.Owner)
	require.NotNil(t, l.OwnerFrame)
	assert.Equal(t, "sun.misc.Unsafe.park(Native Method)", *l.OwnerFrame)
	require.NotNil(t, l.WaitFrame)
	assert.Contains(t, *l.WaitFrame, "DevServerStart")
	assert.Equal(t, "application-akka.actor.default-dispatcher-N", doc.Pools[0].Name)
	assert.Equal(t, 9, doc.Pools[0].Threads)
	require.NotEmpty(t, doc.Findings)
	assert.Equal(t, "lock-hotspot", doc.Findings[0].Kind)
	assert.Empty(t, doc.Deadlocks)
}

func TestAnalyzeDeadlocksFromCorpus(t *testing.T) {
	dir := sharedDumps(t)
	code, out, _ := run(t, "", "analyze", "--format=json", filepath.Join(dir, "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	require.Equal(t, 0, code)
	var doc struct {
		Deadlocks []struct {
			Threads []string
			Source  string
		}
		Findings []struct{ Kind, Severity string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Deadlocks, 3)
	for _, d := range doc.Deadlocks {
		assert.Equal(t, "jvm+ctprof", d.Source, d.Threads)
	}
	assert.Equal(t, "deadlock", doc.Findings[0].Kind)
	assert.Equal(t, "critical", doc.Findings[0].Severity)
}

func TestAnalyzeSeries(t *testing.T) {
	dir := sharedDumps(t)
	code, out, _ := run(t, "", "analyze", "--format=json", filepath.Join(dir, "jdk11-debian-4dumps-ycrash-testdata.txt"))
	require.Equal(t, 0, code)
	var doc struct {
		Dumps     int
		ThreadCPU []struct {
			Thread     string
			CPUSeconds float64 `json:"cpu_seconds"`
		} `json:"thread_cpu"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 4, doc.Dumps)
	require.NotEmpty(t, doc.ThreadCPU)
	// cpu= grows between the dumps for the busiest thread.
	assert.Greater(t, doc.ThreadCPU[0].CPUSeconds, 0.0)
}

func TestAnalyzeStdinAndFolded(t *testing.T) {
	dir := sharedDumps(t)
	b, err := os.ReadFile(filepath.Join(dir, "jdk8-play-devmode-monitor-contention.txt"))
	require.NoError(t, err)
	code, out, errOut := run(t, string(b), "analyze", "--format", "folded", "-")
	require.Equal(t, 0, code, errOut)
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sp := strings.LastIndexByte(line, ' ')
		require.Greater(t, sp, 0, line)
		var n int
		_, err := fmtSscan(line[sp+1:], &n)
		require.NoError(t, err, line)
		total += n
		// Root first: the outermost frame of a Java thread is a run method.
		assert.NotContains(t, line[:sp], "\n")
	}
	dumps, err := threaddump.ParseBytes(b)
	require.NoError(t, err)
	want := 0
	for _, th := range dumps[0].AllThreads() {
		if len(th.Frames) > 0 {
			want++
		}
	}
	assert.Equal(t, want, total, "one sample per thread that has a stack")
}

func TestExitCodesAndErrors(t *testing.T) {
	tmp := t.TempDir()
	notDump := filepath.Join(tmp, "notes.txt")
	require.NoError(t, os.WriteFile(notDump, []byte("hello\nworld\n"), 0o644))
	jrockit := filepath.Join(tmp, "jrockit.txt")
	require.NoError(t, os.WriteFile(jrockit, []byte("===== FULL THREAD DUMP ===============\nOracle JRockit(R)\n"), 0o644))
	tests := []struct {
		name    string
		args    []string
		code    int
		errPart string
	}{
		{"no args", []string{"analyze"}, ExitUsage, "needs at least one FILE"},
		{"unknown flag", []string{"analyze", "--bogus", "x"}, ExitUsage, "unknown flag: --bogus"},
		{"unknown command", []string{"bogus"}, ExitUsage, "unknown command"},
		{"bad format", []string{"analyze", "--format", "xml", notDump}, ExitUsage, `unknown --format "xml"`},
		{"missing file", []string{"analyze", filepath.Join(tmp, "nope.txt")}, ExitFailure, "no such file"},
		{"not a dump", []string{"analyze", notDump}, ExitFailure, "no thread dump found"},
		{"jrockit", []string{"analyze", jrockit}, ExitFailure, "not supported: this looks like a JRockit"},
		{"directory", []string{"analyze", tmp}, ExitFailure, "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Empty(t, out)
			assert.True(t, strings.HasPrefix(errOut, "ctprof: "), errOut)
			assert.Contains(t, errOut, tc.errPart)
			assert.NotContains(t, errOut, "goroutine", "no stack traces")
		})
	}
}

func TestOneBadFileAmongGoodOnesLosesNothing(t *testing.T) {
	dir := sharedDumps(t)
	bad := filepath.Join(t.TempDir(), "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("garbage\n"), 0o644))
	code, out, errOut := run(t, "", "analyze", "-f", "json", bad, filepath.Join(dir, "jdk8-play-devmode-monitor-contention.txt"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, errOut, "bad.txt: no thread dump found (skipped")
	var doc struct{ Dumps int }
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 1, doc.Dumps)
}

func TestHelpAndVersion(t *testing.T) {
	code, out, _ := run(t, "", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Exit codes: 0 success, 1 failure")
	assert.Contains(t, out, "ctprof analyze dump.txt")
	code, out, _ = run(t, "", "analyze", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Thread.dump_to_file")
	assert.Contains(t, out, "--format")
	code, out, _ = run(t, "", "--version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "ctprof "), out)
	code, out, _ = run(t, "", "completion", "bash")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "__start_ctprof")
}

func TestHostileNamesAreEscapedInText(t *testing.T) {
	dump := "Full thread dump OpenJDK 64-Bit Server VM (17 mixed mode):\n\n" +
		"\"evil\x1b[2J\x1b]0;pwned\x07\" #5 prio=5 os_prio=0 tid=0x1 nid=0x2 waiting for monitor entry [0x0]\n" +
		"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat a.B.c(B.java:1)\n\t- waiting to lock <0x10> (a a.B)\n\n" +
		"\"</script><script>alert(1)</script>\" #6 prio=5 os_prio=0 tid=0x3 nid=0x4 waiting for monitor entry [0x0]\n" +
		"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat a.B.c(B.java:1)\n\t- waiting to lock <0x10> (a a.B)\n\n" +
		"\"owner\" #7 prio=5 os_prio=0 tid=0x5 nid=0x6 runnable [0x0]\n   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:2)\n\t- locked <0x10> (a a.B)\n\n" +
		"JNI global refs: 1, weak refs: 0\n"
	code, out, errOut := run(t, dump, "analyze", "-")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "\x1b", "no raw escape sequences reach the terminal")
	assert.NotContains(t, out, "\x07")
	assert.Contains(t, out, `\x1b[2J`)
	code, out, _ = run(t, dump, "analyze", "-f", "json", "-")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "</script>", "JSON escapes < and >")
	assert.Contains(t, out, `\u003c/script\u003e`)
}

func sharedDumps(t *testing.T) string { t.Helper(); return testcorpus.Dir(t) }
