package analysis

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testgolden"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The labelled corpus: real third-party libraries under load
// (testdata/javalibs, jars pinned in testdata/javalibs/libraries.txt and
// fetched by `make javalibs`). For each case the test takes `jcmd
// Thread.print -l` dumps of the running workload and labels every thread
// from the dump text with rules written for that library here, by someone
// who knows what the workload does, independent of ctprof's wait model.
// Then the same dump bytes go through ctprof and its verdict per thread
// (Summary.Waits) and its top resource are checked against the labels.

// Truth verdicts of a labelled thread.
const (
	truthContention = "contention" // cannot go on until another thread acts
	truthIdle       = "idle"       // a worker, loop or service waiting for its next unit of work
	truthRunning    = "running"    // RUNNABLE, doing work (or in I/O: not contention)
	truthSleep      = "sleep"      // Thread.sleep, parkNanos with no blocker as a pause
)

// threadTruth is what a thread of a dump is doing, by the case's rules.
type threadTruth struct {
	// Verdict is one of the truth verdicts, or "" for a thread the case
	// does not label (it is then left out of the counts).
	Verdict string
	// Resource names what a contended thread waits for, in the case's own
	// words ("connection pool", "table lock"): the waiters of one resource
	// share it. The top resource is the one with the most waiters summed
	// over the dumps.
	Resource string
}

// corpusCase is one library under load.
type corpusCase struct {
	// workload is testdata/javalibs/<workload>.java; args its arguments.
	workload string
	args     []string
	// kind is the sort of library: "pool", "http", "logging", "cache",
	// "database", "messaging", "search", "scheduler".
	kind string
	// dumps is how many dumps to take (default 6).
	dumps int
	// ready reports whether a dump shows the load the case is about; the
	// test waits (bounded) for such a dump before each one it keeps.
	ready func(stacks []testjvm.ThreadStack) bool
	// label is the truth about one thread of a dump. Threads it leaves
	// unlabelled fall back to jvmThreadTruth (the JVM's own threads).
	label func(st testjvm.ThreadStack) threadTruth
	// topFrame is a substring of the frame where ctprof must say the top
	// resource's waiters call in (e.g. "HikariPool.getConnection" or
	// "ConcurrentBag.borrow"); several alternatives separated by "|".
	topFrame string
}

// corpusCases are registered by the corpus_*_jvm_test.go files.
var corpusCases []corpusCase

// jvmThreadTruth labels the threads every HotSpot JVM runs whatever the
// program: its service threads are idle (or running) by design.
func jvmThreadTruth(st testjvm.ThreadStack) threadTruth {
	switch {
	case st.State == "": // VM-internal threads (GC, compiler): no Java state
		return threadTruth{}
	case st.Name == "Reference Handler", st.Name == "Finalizer", st.Name == "Signal Dispatcher",
		st.Name == "Common-Cleaner", st.Name == "Attach Listener", st.Name == "Notification Thread",
		st.Name == "Service Thread", st.Name == "Monitor Deflation Thread",
		strings.Contains(st.Name, "CompilerThread"), st.Name == "Sweeper thread",
		st.Name == "JFR Recorder Thread", st.Name == "JFR Periodic Tasks", st.Name == "process reaper",
		strings.HasPrefix(st.Name, "JFR "):
		if strings.HasPrefix(st.State, "RUNNABLE") {
			return threadTruth{Verdict: truthRunning}
		}
		return threadTruth{Verdict: truthIdle}
	case st.Name == "main" && st.Has("java.lang.Thread.sleep"):
		// The workloads' main threads print progress once a second.
		return threadTruth{Verdict: truthSleep}
	}
	return threadTruth{}
}

// basicTruth labels a thread by its state alone: RUNNABLE is running, a
// top frame in Thread.sleep is a sleep. ok is false for a waiting thread,
// which the case's rules must label.
func basicTruth(st testjvm.ThreadStack) (threadTruth, bool) {
	if strings.HasPrefix(st.State, "RUNNABLE") {
		return threadTruth{Verdict: truthRunning}, true
	}
	for _, l := range st.Lines {
		if strings.HasPrefix(l, "at ") {
			if strings.HasPrefix(l, "at java.lang.Thread.sleep") {
				return threadTruth{Verdict: truthSleep}, true
			}
			break
		}
	}
	return threadTruth{}, false
}

// nidRE reads a thread's native id from its header line.
var nidRE = regexp.MustCompile(` nid=(0x[0-9a-fA-F]+|[0-9]+)`)

func nidOf(header string) int64 {
	m := nidRE.FindStringSubmatch(header)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseInt(m[1], 0, 64)
	if err != nil {
		return 0
	}
	return v
}

// labelDump applies a case's truth to every thread of a dump, by nid.
func labelDump(c corpusCase, dump []byte) map[int64]threadTruth {
	out := map[int64]threadTruth{}
	for _, st := range testjvm.ThreadStacks(dump) {
		tr := c.label(st)
		if tr.Verdict == "" {
			tr = jvmThreadTruth(st)
		}
		if tr.Verdict == "" {
			continue
		}
		if nid := nidOf(st.Header); nid != 0 {
			out[nid] = tr
		}
	}
	return out
}

// corpusScore is the comparison of ctprof's verdicts with the truth.
type corpusScore struct {
	tp, fp, fn, tn int
	// misses lists a few disagreements for the log.
	misses []string
}

func (s *corpusScore) add(o corpusScore) {
	s.tp += o.tp
	s.fp += o.fp
	s.fn += o.fn
	s.tn += o.tn
	s.misses = append(s.misses, o.misses...)
}

func (s corpusScore) precision() float64 { return ratio(s.tp, s.tp+s.fp) }
func (s corpusScore) recall() float64    { return ratio(s.tp, s.tp+s.fn) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// scoreDump compares ctprof's verdict on each labelled thread of one dump
// (Summary.Waits of an Aggregator given that dump alone) with the truth.
func scoreDump(t *testing.T, truth map[int64]threadTruth, dump []byte) corpusScore {
	a := New()
	addDump(t, a, dump)
	got := map[int64]ThreadWait{}
	for _, w := range a.Summary().Waits {
		got[w.TID] = w
	}
	var sc corpusScore
	for nid, tr := range truth {
		w, listed := got[nid]
		want := tr.Verdict == truthContention
		is := listed && w.Verdict == VerdictContention
		switch {
		case want && is:
			sc.tp++
		case want:
			sc.fn++
		case is:
			sc.fp++
		default:
			sc.tn++
		}
		if want != is && len(sc.misses) < 6 {
			sc.misses = append(sc.misses, fmt.Sprintf("nid %d %s: truth %s (%s), ctprof %s (%s) at %s", nid, w.Thread, tr.Verdict, tr.Resource, w.Verdict, w.Reason, w.Frame))
		}
	}
	return sc
}

// truthTop is the resource with the most contended labels over the dumps,
// and its mean number of waiters per dump.
func truthTop(truths []map[int64]threadTruth) (string, float64) {
	sum := map[string]int{}
	for _, tr := range truths {
		for _, x := range tr {
			if x.Verdict == truthContention {
				sum[x.Resource]++
			}
		}
	}
	best, n := "", 0
	for r, k := range sum {
		if k > n || k == n && r < best {
			best, n = r, k
		}
	}
	return best, float64(n) / float64(max(len(truths), 1))
}

// topResource is ctprof's resource with the most waiters on average.
func topResource(s *Summary) *ContentionSite {
	var best *ContentionSite
	for i := range s.ContentionSites {
		cs := &s.ContentionSites[i]
		if best == nil || cs.AvgWaiters > best.AvgWaiters {
			best = cs
		}
	}
	return best
}

// corpusUpdate rewrites the kept dumps of the corpus (testdata/corpus).
var corpusUpdate = flag.Bool("update-corpus", false, "keep the corpus test's dumps under testdata/corpus")

// update rewrites the golden files of the kept corpus.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/corpus")

// TestJVMLibraryCorpus runs every corpus case on JDK 17 (or 25, see
// CTPROF_CORPUS_JDK), labels every
// thread of its jcmd dumps, and measures ctprof's "contention" verdict
// against the labels: precision and recall over all labelled threads
// (goal: both at least 97 %), and per library whether the top resource
// is named at the right frame with its average waiters within 25 %.
func TestJVMLibraryCorpus(t *testing.T) {
	require.NotEmpty(t, corpusCases)
	// JDK 17 by default; CTPROF_CORPUS_JDK=25 runs the corpus on Temurin 25.
	j := testjvm.JDK17(t)
	if os.Getenv("CTPROF_CORPUS_JDK") == "25" {
		j = testjvm.JDK25(t)
	}
	var total corpusScore
	var table []string
	for _, c := range corpusCases {
		n := c.dumps
		if n == 0 {
			n = 6
		}
		var sc corpusScore
		ok := t.Run(c.workload, func(t *testing.T) {
			p := testjvm.StartLib(t, j, c.workload, c.args...)
			var dumps [][]byte
			for i := 0; i < n; i++ {
				dumps = append(dumps, p.WaitForDump(t, 2*time.Minute, func(d []byte) bool {
					return c.ready(testjvm.ThreadStacks(d))
				}, "-l"))
				time.Sleep(300 * time.Millisecond)
			}
			p.Stop()
			if *corpusUpdate {
				keepCorpusDumps(t, c.workload, dumps)
			}
			sc = scoreCase(t, c, dumps)
		})
		total.add(sc)
		table = append(table, fmt.Sprintf("%-28s %-9s precision %.3f recall %.3f (tp %d fp %d fn %d tn %d) passed=%v",
			c.workload, c.kind, sc.precision(), sc.recall(), sc.tp, sc.fp, sc.fn, sc.tn, ok))
	}
	t.Logf("corpus on %s:\n%s\nall: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)",
		j.Name, strings.Join(table, "\n"), total.precision(), total.recall(), total.tp, total.fp, total.fn, total.tn)
	assert.GreaterOrEqual(t, total.precision(), 0.97, "precision of contention over the corpus")
	assert.GreaterOrEqual(t, total.recall(), 0.97, "recall of contention over the corpus")
}

// scoreCase labels and scores one case's dumps and checks its top
// resource; it logs what it found.
func scoreCase(t *testing.T, c corpusCase, dumps [][]byte) corpusScore {
	t.Helper()
	var sc corpusScore
	var truths []map[int64]threadTruth
	all := New()
	for _, d := range dumps {
		tr := labelDump(c, d)
		truths = append(truths, tr)
		sc.add(scoreDump(t, tr, d))
		addDump(t, all, d)
	}
	name, avg := truthTop(truths)
	s := all.Summary()
	top := topResource(s)
	t.Logf("%s: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d); truth's top resource %q, %.2f waiters on average",
		c.workload, sc.precision(), sc.recall(), sc.tp, sc.fp, sc.fn, sc.tn, name, avg)
	for _, m := range sc.misses {
		t.Logf("  miss: %s", m)
	}
	if assert.NotNil(t, top, "ctprof names no resource") {
		t.Logf("  ctprof's top resource: %s at %s, %.2f waiters on average (%d instances)", top.Class, top.WaitFrame, top.AvgWaiters, top.Instances)
		matched := false
		for _, alt := range strings.Split(c.topFrame, "|") {
			matched = matched || strings.Contains(top.WaitFrame, alt)
		}
		assert.True(t, matched, "top resource at %s, want a frame with %q", top.WaitFrame, c.topFrame)
		assert.InEpsilon(t, avg, top.AvgWaiters, 0.25, "average waiters of the top resource")
		// The top resource is a finding of its own, among the first: the
		// finding names its call site, or (one instance, a monitor its
		// waiters enter from several methods) its class.
		method := top.WaitFrame
		if i := strings.IndexByte(method, '('); i > 0 {
			method = method[:i]
		}
		class := top.Class[strings.LastIndexByte(top.Class, '.')+1:]
		found := false
		for i, f := range s.Findings {
			names := strings.Contains(f.Summary, method) || top.Instances == 1 && strings.Contains(f.Summary, " "+class+" ")
			found = found || i < 3 && f.Kind == FindingLockHotspot && names
		}
		assert.True(t, found, "no lock-hotspot finding among the first three names the top resource at %s", method)
	}
	for i, f := range s.Findings {
		if i == 3 {
			break
		}
		t.Logf("  finding %d: [%s] %s", i+1, f.Severity, f.Summary)
	}
	return sc
}

// keepCorpusDumps writes a case's dumps under testdata/corpus/<workload>.
func keepCorpusDumps(t *testing.T, workload string, dumps [][]byte) {
	dir := filepath.Join("testdata", "corpus", workload)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	old, _ := filepath.Glob(filepath.Join(dir, "dump-*.txt"))
	for _, f := range old {
		require.NoError(t, os.Remove(f))
	}
	for i, d := range dumps {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("dump-%d.txt", i+1)), d, 0o644))
	}
}

// TestCorpusKeptDumps replays the dumps TestJVMLibraryCorpus kept under
// testdata/corpus (refreshed with -update-corpus) through the labels and
// ctprof, without a JVM: a change to the wait model shows here as a
// changed score or top resource, and the golden file of each case pins
// ctprof's verdict on every thread and its first findings (-update).
func TestCorpusKeptDumps(t *testing.T) {
	var total corpusScore
	seen := 0
	for _, c := range corpusCases {
		files, _ := filepath.Glob(filepath.Join("testdata", "corpus", c.workload, "dump-*.txt"))
		if len(files) == 0 {
			continue
		}
		seen++
		t.Run(c.workload, func(t *testing.T) {
			sort.Strings(files)
			var dumps [][]byte
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				dumps = append(dumps, b)
			}
			total.add(scoreCase(t, c, dumps))
			// The kept dumps a second apart, whatever the parse takes: the
			// resources' thread-seconds, which order resources of equal
			// peaks, must not depend on the machine's speed.
			a := New()
			for i, dump := range dumps {
				at := time.Unix(1_700_000_000+int64(i), 0)
				d := parseDump(t, dump)
				d.Time = at
				a.Add(&snapshot.Snapshot{Time: at, Dump: d})
			}
			sum := a.Summary()
			testgolden.Check(t, filepath.Join("testdata", "corpus", c.workload, "verdicts.golden"), corpusGolden(sum), *update, "go test ./internal/analysis -run TestCorpusKeptDumps -update")
			for _, f := range sum.Findings {
				assert.NotEmpty(t, f.Subject, "every finding says what it is about (FindingKey): %s", f.Summary)
			}
		})
	}
	if seen == 0 {
		t.Fatalf("no kept corpus dumps under testdata/corpus (TestJVMLibraryCorpus -update-corpus writes them)")
	}
	t.Logf("kept corpus: precision %.3f recall %.3f (tp %d fp %d fn %d tn %d)", total.precision(), total.recall(), total.tp, total.fp, total.fn, total.tn)
	assert.GreaterOrEqual(t, total.precision(), 0.97, "precision of contention over the kept corpus")
	assert.GreaterOrEqual(t, total.recall(), 0.97, "recall of contention over the kept corpus")
}

// corpusGolden is what the golden file pins of a case: the verdict of
// every thread of the last dump that is not running, the resources and
// the first findings.
func corpusGolden(s *Summary) []byte {
	var b strings.Builder
	for _, w := range s.Waits {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", w.Thread, w.Verdict, w.Resource, w.Reason)
	}
	b.WriteString("\nresources:\n")
	for i, cs := range s.ContentionSites {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "%s\tpeak %d avg %.3f instances %d striped %v ownerless %v\n", cs.ID, cs.Waiters, cs.AvgWaiters, cs.Instances, cs.Striped, cs.Ownerless)
	}
	b.WriteString("\nfindings:\n")
	for i, f := range s.Findings {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "[%s] %s\n", f.Severity, f.Summary)
	}
	return []byte(b.String())
}
