package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/browsertest"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// ctprof diff on two runs of a real contended JVM (the CapacityFix
// scenario): before, 8 workers queue on one Catalog monitor; after the fix,
// 3 workers hold it half as long and wait on a Stats monitor the first
// run never touched. Each run is taken three ways, as users take them: jcmd
// dumps written to files, a recording (attach --record), and the JSON
// summaries of both; diff must say the same of each, and what it says of
// the hot monitor is checked against the dumps themselves.

const (
	catalogClass = "CapacityFix$Catalog"
	statsClass   = "CapacityFix$Stats"
	catalogSite  = "monitor|CapacityFix$Catalog|CapacityFix$Catalog.lookup"
	statsSite    = "monitor|CapacityFix$Stats|CapacityFix$Stats.record"
)

// capturedRun is one run of the scenario: a directory of jcmd dumps (one
// file each) and a recording.
type capturedRun struct {
	dumps     string
	recording string
}

// captureRun starts the scenario with args, takes four `jcmd Thread.print
// -l` dumps into files (the first once cond holds, so the run shows what
// it is about), then records it with attach --record, with a dump at most
// samples (a pause budget the test's JVM can afford).
func captureRun(t *testing.T, dir, name string, cond func([]byte) bool, args ...string) capturedRun {
	t.Helper()
	p := testjvm.Start(t, testjvm.JDK17(t), "CapacityFix", args...)
	cr := capturedRun{dumps: filepath.Join(dir, name), recording: filepath.Join(dir, name+".ctprof")}
	require.NoError(t, os.MkdirAll(cr.dumps, 0o755))
	dumps := [][]byte{p.WaitForDump(t, dumpTimeout, cond, "-l")}
	for i := 0; i < 3; i++ {
		dumps = append(dumps, p.ThreadPrint(t, "-l"))
	}
	for i, d := range dumps {
		require.NoError(t, os.WriteFile(filepath.Join(cr.dumps, fmt.Sprintf("dump-%d.txt", i+1)), d, 0o644))
	}
	code, _, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "8", "--interval", "500ms", "--pause-budget", "20", "--record", cr.recording)
	require.Equal(t, 0, code, stderr)
	p.Stop()
	return cr
}

// waiterCounts are, per dump, the threads the dump itself shows waiting to
// enter a monitor of class.
type waiterCounts []int

func (w waiterCounts) avg() float64 {
	s := 0
	for _, n := range w {
		s += n
	}
	return float64(s) / float64(len(w))
}

func (w waiterCounts) peak() int {
	m := 0
	for _, n := range w {
		m = max(m, n)
	}
	return m
}

// dumpFileCounts counts "- waiting to lock <…> (a class)" lines per dump
// file of a directory: the jcmd dumps' own BLOCKED count.
func dumpFileCounts(t *testing.T, dir, class string) waiterCounts {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out waiterCounts
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, testjvm.CountLines(b, "- waiting to lock <", "(a "+class+")"))
	}
	return out
}

// recordingCounts counts, per thread dump a recording holds, the threads
// whose lock line says they wait to enter a monitor of class.
func recordingCounts(t *testing.T, path, class string) waiterCounts {
	t.Helper()
	r, err := source.OpenRecording(path)
	require.NoError(t, err)
	defer r.Close()
	var out waiterCounts
	for {
		s, err := r.Next(context.Background())
		if err != nil {
			break
		}
		if s.Dump == nil {
			continue
		}
		n := 0
		for _, th := range s.Dump.Threads {
			for _, l := range th.Locks {
				if l.Action == threaddump.LockWaitingToLock && l.Lock.Class == class {
					n++
				}
			}
		}
		out = append(out, n)
	}
	require.GreaterOrEqual(t, len(out), 2, "the recording holds a series of dumps (--pause-budget 20)")
	return out
}

// diffDoc is the part of diff's JSON the test reads.
type diffDoc struct {
	Before, After struct {
		Kind  string
		Dumps int
	}
	Resources []struct {
		ID, Class, Status string
		AvgWaiters        diffChange `json:"avg_waiters"`
		PeakWaiters       diffChange `json:"peak_waiters"`
	}
	Findings struct {
		Appeared, Gone []struct{ Kind, Summary string }
	}
	Figures []struct {
		ID string
		diffChange
	}
}

type diffChange struct {
	Before, After *float64
	Direction     string
	Verdict       string
}

func diffJSON(t *testing.T, args ...string) diffDoc {
	t.Helper()
	code, out, stderr := run(t, "", append([]string{"diff", "--format", "json"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var doc diffDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

func (d diffDoc) resource(id string) *struct {
	ID, Class, Status string
	AvgWaiters        diffChange `json:"avg_waiters"`
	PeakWaiters       diffChange `json:"peak_waiters"`
} {
	for i := range d.Resources {
		if d.Resources[i].ID == id {
			return &d.Resources[i]
		}
	}
	return nil
}

// checkResource asserts a resource's waiters on both sides are what the
// runs' own dumps show, and its status follows from them.
func checkResource(t *testing.T, doc diffDoc, id string, before, after waiterCounts) {
	t.Helper()
	r := doc.resource(id)
	if before.peak() == 0 && after.peak() == 0 {
		assert.Nil(t, r, "%s: no waiter in either run's dumps", id)
		return
	}
	require.NotNil(t, r, "%s (before %v, after %v)", id, before, after)
	// The summary keeps averages to three decimals.
	assert.InDelta(t, before.avg(), *r.AvgWaiters.Before, 5e-4, "%s before: the dumps show %v", id, before)
	assert.InDelta(t, after.avg(), *r.AvgWaiters.After, 5e-4, "%s after: the dumps show %v", id, after)
	assert.Equal(t, float64(before.peak()), *r.PeakWaiters.Before, id)
	assert.Equal(t, float64(after.peak()), *r.PeakWaiters.After, id)
	want := "both"
	switch {
	case before.peak() == 0:
		want = "appeared"
	case after.peak() == 0:
		want = "gone"
	}
	assert.Equal(t, want, r.Status, id)
}

func TestDiffOfRealJVMRuns(t *testing.T) {
	dir := t.TempDir()
	before := captureRun(t, dir, "before", func(d []byte) bool {
		return testjvm.CountLines(d, "- waiting to lock <", "(a "+catalogClass+")") >= 3
	}, "8")
	after := captureRun(t, dir, "after", func(d []byte) bool {
		return testjvm.CountLines(d, "- waiting to lock <", "(a "+statsClass+")") >= 1
	}, "3", "split")

	t.Run("dump files", func(t *testing.T) {
		doc := diffJSON(t, before.dumps, after.dumps)
		assert.Equal(t, 4, doc.Before.Dumps)
		assert.Equal(t, 4, doc.After.Dumps)
		cb, ca := dumpFileCounts(t, before.dumps, catalogClass), dumpFileCounts(t, after.dumps, catalogClass)
		require.GreaterOrEqual(t, cb.peak(), 3, "the first before dump was taken with 3 or more waiting")
		checkResource(t, doc, catalogSite, cb, ca)
		sb, sa := dumpFileCounts(t, before.dumps, statsClass), dumpFileCounts(t, after.dumps, statsClass)
		require.Zero(t, sb.peak(), "unsplit, no worker touches Stats")
		require.Positive(t, sa.peak(), "the first after dump was taken with a Stats waiter")
		checkResource(t, doc, statsSite, sb, sa)
		assert.Equal(t, "appeared", doc.resource(statsSite).Status)

		// The other way round, Stats is gone.
		rev := diffJSON(t, after.dumps, before.dumps)
		assert.Equal(t, "gone", rev.resource(statsSite).Status)
		checkResource(t, rev, catalogSite, ca, cb)

		// The text says the same, in words.
		code, out, stderr := run(t, "", "diff", before.dumps, after.dumps)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, out, "RESOURCES (matched by class and wait site)")
		assert.Regexp(t, `monitor CapacityFix\$Stats at CapacityFix\$Stats\.record\(CapacityFix\.java:\d+\)  \[APPEARED\]`, out)
	})

	t.Run("recordings", func(t *testing.T) {
		doc := diffJSON(t, before.recording, after.recording)
		assert.Equal(t, "profile", doc.Before.Kind)
		for _, c := range []struct{ id, class string }{{catalogSite, catalogClass}, {statsSite, statsClass}} {
			checkResource(t, doc, c.id, recordingCounts(t, before.recording, c.class), recordingCounts(t, after.recording, c.class))
		}
		var cpu bool
		for _, f := range doc.Figures {
			if f.ID == "cpu_percent" {
				cpu = f.Before != nil && f.After != nil
			}
		}
		assert.True(t, cpu, "recordings are live runs: CPU on both sides")
	})

	t.Run("JSON summaries", func(t *testing.T) {
		summary := func(args ...string) string {
			code, out, stderr := run(t, "", append([]string{"--format", "json"}, args...)...)
			require.Equal(t, 0, code, stderr)
			return out
		}
		files := func(d string) []string {
			f, err := filepath.Glob(filepath.Join(d, "*.txt"))
			require.NoError(t, err)
			return f
		}
		write := func(name, content string) string {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			return p
		}
		bj := write("before.json", summary(append([]string{"analyze"}, files(before.dumps)...)...))
		aj := write("after.json", summary(append([]string{"analyze"}, files(after.dumps)...)...))
		fromJSON := diffJSON(t, bj, aj)
		assert.Equal(t, "summary", fromJSON.Before.Kind)
		fromDumps := diffJSON(t, before.dumps, after.dumps)
		assert.Equal(t, fromDumps.Resources, fromJSON.Resources, "a summary compares as the dumps it was made of")
		checkResource(t, fromJSON, catalogSite, dumpFileCounts(t, before.dumps, catalogClass), dumpFileCounts(t, after.dumps, catalogClass))

		// A recording's summary (report --format json) against dumps.
		rj := write("before-rec.json", summary("report", before.recording))
		mixed := diffJSON(t, rj, after.dumps)
		checkResource(t, mixed, catalogSite, recordingCounts(t, before.recording, catalogClass), dumpFileCounts(t, after.dumps, catalogClass))
		// And from standard input.
		code, out, stderr := run(t, string(mustRead(t, bj)), "diff", "--format", "json", "-", after.dumps)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, out, `"name": "standard input"`)
	})

	t.Run("HTML", func(t *testing.T) {
		page := filepath.Join(dir, "diff.html")
		code, out, stderr := run(t, "", "diff", "--html", page, before.recording, after.recording)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "wrote the HTML comparison to "+page)
		assert.Contains(t, out, "RESOURCES")
		p := browsertest.Open(t, page)
		pixels := browsertest.CheckReport(t, p)
		assert.Contains(t, pixels, "chart-flame", "the differential flame graph is drawn")
		text := browsertest.Eval[string](t, p, `document.body.innerText`)
		assert.Contains(t, text, catalogClass)
		assert.Contains(t, text, "worker-N")
		assert.Equal(t, "after:all", browsertest.Flame(t, p).View)
		browsertest.CheckFlameZoom(t, p)
		t.Log("screenshot:", p.Screenshot(t, artifactsDir()))
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// The command's words: its arguments and flags are checked before any
// input is read.
func TestDiffUsage(t *testing.T) {
	dir := t.TempDir()
	empty := t.TempDir()
	dump := filepath.Join(dir, "d.txt")
	require.NoError(t, os.WriteFile(dump, []byte("\"main\" #1 prio=5 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\tat A.b(A.java:1)\n\n"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"one run", []string{dump}, 2, "two runs"},
		{"both stdin", []string{"-", "-"}, 2, "only one of BEFORE and AFTER"},
		{"format", []string{"--format", "folded", dump, dump}, 2, "unknown --format"},
		{"negative throughput", []string{"--before-throughput", "-1", dump, dump}, 2, "must not be negative"},
		{"html replaces an input", []string{"--html", dump, dump, dump}, 2, "would replace the input"},
		{"missing", []string{dump, filepath.Join(dir, "nope")}, 1, "after: open"},
		{"empty directory", []string{dump, empty}, 1, "holds no files"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, "", append([]string{"diff"}, c.args...)...)
			assert.Equal(t, c.code, code, stderr)
			assert.Contains(t, stderr, c.msg)
		})
	}
	code, out, _ := run(t, "", "diff", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"ctprof diff before.ctprof after.ctprof", "--before-throughput", "differential flame graph", "APPEARED or GONE"} {
		assert.Contains(t, out, want)
	}
	// The throughput the user gives is compared.
	code, out, stderr := run(t, "", "diff", "--before-throughput", "100", "--after-throughput", "180", dump, dump)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `throughput\s+100\.00 → 180\.00\s+\+80\.00 \(\+80 %\), better`, out)
	assert.False(t, strings.Contains(out, "\x1b"))
}
