package diff_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/diff"
	"github.com/ctprof/ctprof/internal/diffinput"
	"github.com/ctprof/ctprof/internal/testgolden"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testdata/before.txt and after.txt are three `jcmd <pid> Thread.print -l`
// dumps each of the CapacityFix scenario (testdata/java): before, 8
// workers queue on one Catalog monitor; after the fix ("3 split"), 3
// workers hold it half as long and a Stats monitor takes the other half.
const beforeFile, afterFile = "testdata/before.txt", "testdata/after.txt"

func load(t *testing.T, name string) *diff.Side {
	t.Helper()
	s, err := diffinput.Load(context.Background(), name, strings.NewReader(""), diffinput.LoadOptions{})
	require.NoError(t, err)
	return s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testgolden.Check(t, filepath.Join("testdata", "golden", name), got, *update, "go test ./internal/diff -update")
}

// TestGoldenDumpFiles pins the text and diff.JSON of the diff of two fixed dump
// files, so any change in what diff says shows in review.
func TestGoldenDumpFiles(t *testing.T) {
	doc := diff.Compare(load(t, beforeFile), load(t, afterFile), diff.Options{})
	var text, js bytes.Buffer
	require.NoError(t, diff.Text(&text, doc, diff.TextOptions{}))
	require.NoError(t, diff.JSON(&js, doc))
	golden(t, "capacity-fix.txt", text.Bytes())
	golden(t, "capacity-fix.json", js.Bytes())
}

// One dump of the convoy (testdata/before-one-dump.txt, the first of
// before.txt) against the three of the fix: a single dump stands for no
// time, so its side of thread-seconds is not a measurement and no
// verdict rests on it (issue 37: it read "0 → 4, worse"), and the notes
// say why; average waiters, peaks and shares still compare.
func TestOneDumpSideHasNoThreadSecondsVerdict(t *testing.T) {
	doc := diff.Compare(load(t, "testdata/before-one-dump.txt"), load(t, afterFile), diff.Options{})
	var text, js bytes.Buffer
	require.NoError(t, diff.Text(&text, doc, diff.TextOptions{}))
	require.NoError(t, diff.JSON(&js, doc))
	golden(t, "capacity-fix-one-dump.txt", text.Bytes())
	golden(t, "capacity-fix-one-dump.json", js.Bytes())

	for _, fg := range doc.Figures {
		if fg.ID == "blocked_thread_seconds" {
			assert.Nil(t, fg.Before)
			assert.NotNil(t, fg.After)
			assert.Empty(t, fg.Verdict)
			assert.Equal(t, "before: 1 dump: thread-seconds not measured", fg.NoVerdict)
		}
		if fg.ID == "waiters_avg" {
			assert.Equal(t, "better", fg.Verdict, "average waiters still compare")
		}
	}
	for _, r := range doc.Resources {
		assert.Empty(t, r.BlockedThreadSeconds.Verdict, r.ID)
		assert.Nil(t, r.BlockedThreadSeconds.Before, r.ID)
		assert.NotEmpty(t, r.BlockedThreadSeconds.NoVerdict, r.ID)
	}
	catalog := findResource(doc, "CapacityFix$Catalog")
	require.NotNil(t, catalog)
	assert.Equal(t, "better", catalog.AvgWaiters.Verdict)
	assert.Contains(t, doc.Notes, "before: 1 dump: thread-seconds not measured (they need 3); compare average waiters and shares")
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.Contains(line, "thread-seconds") && strings.Contains(line, "→") {
			assert.Contains(t, line, "thread-seconds not measured")
			assert.NotContains(t, line, "worse")
		}
	}

	// Three dumps a side: thread-seconds have their verdict.
	full := diff.Compare(load(t, beforeFile), load(t, afterFile), diff.Options{})
	for _, fg := range full.Figures {
		if fg.ID == "blocked_thread_seconds" {
			assert.NotEmpty(t, fg.Verdict)
			assert.Empty(t, fg.NoVerdict)
		}
	}
}

// blockedOn counts, per dump of a file, the threads whose lock line says
// they wait to enter a monitor of class: the dumps' own BLOCKED count.
func blockedOn(t *testing.T, file, class string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var per []int
	for _, d := range strings.Split(string(b), "Full thread dump")[1:] {
		per = append(per, countLines(d, "- waiting to lock <", "(a "+class+")"))
	}
	return per
}

func countLines(s, a, b string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, a) && strings.Contains(l, b) {
			n++
		}
	}
	return n
}

func stats(per []int) (avg float64, peak int, share float64) {
	seen := 0
	for _, n := range per {
		avg += float64(n)
		peak = max(peak, n)
		if n > 0 {
			seen++
		}
	}
	return avg / float64(len(per)), peak, float64(seen) / float64(len(per))
}

func findResource(doc *diff.Document, class string) *diff.Resource {
	for i := range doc.Resources {
		if doc.Resources[i].Class == class {
			return &doc.Resources[i]
		}
	}
	return nil
}

// TestResourcesMatchTheDumps checks each resource's figures on both sides
// against the dumps' own lines, and the statuses both ways round.
func TestResourcesMatchTheDumps(t *testing.T) {
	before, after := load(t, beforeFile), load(t, afterFile)
	for _, dir := range []struct {
		name     string
		doc      *diff.Document
		from, to string
		appeared string
	}{
		{"forward", diff.Compare(before, after, diff.Options{}), beforeFile, afterFile, "appeared"},
		{"reversed", diff.Compare(after, before, diff.Options{}), afterFile, beforeFile, "gone"},
	} {
		t.Run(dir.name, func(t *testing.T) {
			for _, class := range []string{"CapacityFix$Catalog", "CapacityFix$Stats"} {
				fromAvg, fromPeak, fromShare := stats(blockedOn(t, dir.from, class))
				toAvg, toPeak, toShare := stats(blockedOn(t, dir.to, class))
				r := findResource(dir.doc, class)
				if fromPeak == 0 && toPeak == 0 {
					assert.Nil(t, r, "%s: no waiter in either run", class)
					continue
				}
				require.NotNil(t, r, "%s", class)
				// The summary keeps averages to three decimals.
				assert.InDelta(t, fromAvg, *r.AvgWaiters.Before, 5e-4, class)
				assert.InDelta(t, toAvg, *r.AvgWaiters.After, 5e-4, class)
				assert.Equal(t, float64(fromPeak), *r.PeakWaiters.Before, class)
				assert.Equal(t, float64(toPeak), *r.PeakWaiters.After, class)
				assert.InDelta(t, fromShare, *r.BlockedShare.Before, 5e-4, class)
				assert.InDelta(t, toShare, *r.BlockedShare.After, 5e-4, class)
				want := "both"
				switch {
				case fromPeak == 0:
					want = "appeared"
				case toPeak == 0:
					want = "gone"
				}
				assert.Equal(t, want, r.Status, class)
			}
			stats := findResource(dir.doc, "CapacityFix$Stats")
			require.NotNil(t, stats, "the fixture's after run waits on Stats")
			assert.Equal(t, dir.appeared, stats.Status)
		})
	}
}

// Names read from a dump reach the terminal escaped, and the diff.JSON escapes
// markup.
func TestHostileNamesEscaped(t *testing.T) {
	name := "evil\x1b[31m<script>\u202e"
	dump := "2026-11-23 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):\n\n" +
		thread(1, name+" 1", "RUNNABLE", "- locked", name) +
		thread(2, name+" 2", "BLOCKED (on object monitor)", "- waiting to lock", name) +
		thread(3, name+" 3", "BLOCKED (on object monitor)", "- waiting to lock", name)
	dumps, err := threaddump.ParseBytes([]byte(dump))
	require.NoError(t, err)
	require.Len(t, dumps[0].Threads, 3)
	path := filepath.Join(t.TempDir(), "hostile.txt")
	require.NoError(t, os.WriteFile(path, []byte(dump), 0o644))
	doc := diff.Compare(load(t, beforeFile), load(t, path), diff.Options{})
	var text, js bytes.Buffer
	require.NoError(t, diff.Text(&text, doc, diff.TextOptions{}))
	require.NoError(t, diff.JSON(&js, doc))
	assert.NotContains(t, text.String(), "\x1b", "no raw escape reaches the terminal")
	assert.NotContains(t, text.String(), "\u202e", "no raw bidi override reaches the terminal")
	assert.Contains(t, text.String(), "evil")
	assert.NotContains(t, js.String(), "<script>")
	assert.Contains(t, js.String(), `\u003cscript\u003e`)
}

func thread(i int, name, state, lockLine, lock string) string {
	status := "runnable"
	if strings.HasPrefix(state, "BLOCKED") {
		status = "waiting for monitor entry"
	}
	return "\"" + name + "\" #" + string(rune('0'+i)) + " prio=5 os_prio=0 cpu=1.00ms elapsed=5.00s tid=0x00007f000000000" + string(rune('0'+i)) + " nid=0x10" + string(rune('0'+i)) + " " + status + "  [0x00007f0000a00000]\n" +
		"   java.lang.Thread.State: " + state + "\n" +
		"\tat evil.Svc.run(Svc.java:20)\n" +
		"\t" + lockLine + " <0x0000000700000001> (a " + lock + ")\n" +
		"\tat java.lang.Thread.run(Thread.java:833)\n\n"
}

func TestNormalizeFrame(t *testing.T) {
	for in, want := range map[string]string{
		"CapacityFix$$Lambda$1/0x00007fdf95001000.run":          "CapacityFix$$Lambda.run",
		"Foo$$Lambda/0x0000000801234567.run":                    "Foo$$Lambda.run",
		"Foo$$Lambda$14.run":                                    "Foo$$Lambda.run",
		"jdk.internal.reflect.GeneratedMethodAccessor12.invoke": "jdk.internal.reflect.GeneratedMethodAccessor.invoke",
		"com.sun.proxy.$Proxy42.call":                           "com.sun.proxy.$Proxy.call",
		"CapacityFix$Catalog.lookup(CapacityFix.java:24)":       "CapacityFix$Catalog.lookup(CapacityFix.java:24)",
	} {
		assert.Equal(t, want, diff.NormalizeFrame(in), in)
	}
}

// A recording's exact waits are compared per resource: its waits, their
// total and the p99 of its busiest instance, as the summary has them.
func TestJFRFigures(t *testing.T) {
	const rec = "../cli/testdata/jfr/jfrlocks-jdk17.jfr"
	side := load(t, rec)
	require.NotNil(t, side.Summary.JFR)
	doc := diff.Compare(load(t, beforeFile), side, diff.Options{})
	var checked int
	for _, cs := range side.Summary.ContentionSites {
		if cs.JFR == nil {
			continue
		}
		var r *diff.Resource
		for i := range doc.Resources {
			if doc.Resources[i].ID == cs.ID {
				r = &doc.Resources[i]
			}
		}
		require.NotNil(t, r, cs.ID)
		require.NotNil(t, r.JFREvents)
		assert.Nil(t, r.JFREvents.Before, "the before run has no recording")
		assert.Equal(t, float64(cs.JFR.Events), *r.JFREvents.After, cs.ID)
		assert.InDelta(t, cs.JFR.WaitSeconds, *r.JFRWaitSeconds.After, 1e-6, cs.ID)
		var p99 float64
		var most int64
		for _, l := range side.Summary.Locks {
			if l.Site == cs.ID && l.JFR != nil && l.JFR.Events > most {
				most, p99 = l.JFR.Events, l.JFR.P99Ms
			}
		}
		assert.InDelta(t, p99, *r.JFRP99Ms.After, 1e-6, cs.ID)
		checked++
	}
	assert.Positive(t, checked)
	var figs []string
	for _, fg := range doc.Figures {
		figs = append(figs, fg.ID)
	}
	assert.Contains(t, figs, "jfr_wait_seconds")
	assert.Contains(t, strings.Join(doc.Notes, "\n"), "only one run has a JFR recording")

	same := diff.Compare(side, side, diff.Options{})
	for _, r := range same.Resources {
		assert.Equal(t, "both", r.Status)
		assert.Equal(t, "same", r.AvgWaiters.Direction, r.ID)
		if r.JFRP99Ms != nil {
			assert.Equal(t, "same", r.JFRP99Ms.Direction, r.ID)
		}
	}
}

// Live runs: futexes are matched by symbol (their addresses differ from
// run to run), threads per connection, CPU and pool rates have both sides.
func TestLiveFigures(t *testing.T) {
	sym := "pool_lock (app+0x4040)"
	run := func(addr string, waiters float64, threads, conns int, slope float64, cpu float64) *diff.Side {
		return &diff.Side{Name: addr, Kind: "profile", Summary: &analysis.Summary{
			Schema: analysis.SchemaVersion, Samples: 10, Threads: threads,
			Target:               &analysis.TargetSummary{PID: 1, Name: "app", Kind: "native", CPUs: 2},
			CPUPercent:           cpu,
			Connections:          &analysis.ConnectionSummary{Established: conns},
			ThreadsPerConnection: &analysis.ThreadsPerConnection{Ratio: float64(threads) / float64(conns), Slope: &slope},
			Scheduling:           &analysis.Scheduling{RunQueueWaitShare: 0.3, WaitingForCPUAvg: 0.5, RunnableAvg: 1.5, CPUs: 2},
			ContextSwitches:      &analysis.ContextSwitchSummary{VoluntaryPerSecond: 100, InvoluntaryPerSecond: 10},
			Locks:                []analysis.LockSummary{{ID: "futex||" + addr, Kind: "futex", Class: "pool_lock", Address: addr, Symbol: &sym, AvgWaiters: waiters, Waiters: 3, BlockedShare: 0.5}},
			Pools:                []analysis.PoolSummary{{Name: "worker-N", Threads: threads - 1, CPUPercent: cpu}},
		}}
	}
	doc := diff.Compare(run("0x7f0000001000", 2.5, 41, 20, 2, 150), run("0x7f5555551000", 0.5, 11, 20, 0.5, 120), diff.Options{})
	require.Len(t, doc.Resources, 1, "one futex, whatever its address")
	r := doc.Resources[0]
	assert.Equal(t, "futex|pool_lock", r.ID)
	assert.Equal(t, "both", r.Status)
	assert.Equal(t, 2.5, *r.AvgWaiters.Before)
	assert.Equal(t, "better", r.AvgWaiters.Verdict)
	figs := map[string]diff.Figure{}
	for _, fg := range doc.Figures {
		figs[fg.ID] = fg
	}
	for _, id := range []string{"cpu_percent", "run_queue_wait_share", "waiting_for_cpu_avg", "runnable_avg", "voluntary_per_second", "involuntary_per_second", "connections", "threads_per_connection", "threads_per_connection_slope"} {
		require.Contains(t, figs, id)
	}
	tpc := figs["threads_per_connection"]
	assert.InDelta(t, 2.05, *tpc.Before, 1e-9)
	assert.InDelta(t, 0.55, *tpc.After, 1e-9)
	assert.Equal(t, "better", tpc.Verdict)
	assert.Equal(t, "same", figs["run_queue_wait_share"].Direction)
	require.Len(t, doc.Pools, 1)
	require.NotNil(t, doc.Pools[0].CPUPercent)
	assert.Equal(t, 150.0, *doc.Pools[0].CPUPercent.Before)
	assert.Empty(t, doc.Pools[0].CPUPercent.Verdict, "more CPU is neither better nor worse")
}

// A JSON summary is input like a dump: whatever it says reaches the
// terminal escaped, its kinds and severities too.
func TestHostileSummaryEscaped(t *testing.T) {
	evil := "\x1b]0;pwned\x07"
	s := &analysis.Summary{Schema: analysis.SchemaVersion, Dumps: 1,
		ContentionSites: []analysis.ContentionSite{{ID: "k|c|f", Kind: evil, Class: evil, WaitFrame: evil, AvgWaiters: 1}},
		Pools:           []analysis.PoolSummary{{Name: evil, Threads: 2}},
		Findings:        []analysis.Finding{{Kind: evil, Severity: evil, Summary: evil}},
	}
	doc := diff.Compare(load(t, beforeFile), &diff.Side{Name: evil, Kind: "summary", Summary: s}, diff.Options{})
	var text bytes.Buffer
	require.NoError(t, diff.Text(&text, doc, diff.TextOptions{}))
	assert.NotContains(t, text.String(), "\x1b")
	assert.NotContains(t, text.String(), "\x07")
}
