package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/termtext"
)

func row(lock string, waiters int, seconds float64) lockRow {
	return lockRow{key: lockKey{lock: lock}, waiters: waiters, seconds: seconds}
}

func names(rows []lockRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.key.lock)
	}
	return out
}

// The lock selection over a sequence of scrapes: which locks are named,
// and what "other" holds, with top K = 2.
func TestLockSelectorKeepsCountersMonotonic(t *testing.T) {
	type scrape struct {
		rows         []lockRow
		named        []string
		otherSeconds float64
		otherWaiters int
	}
	tests := []struct {
		name    string
		scrapes []scrape
	}{
		{"fills free slots, hottest first", []scrape{
			{[]lockRow{row("a", 1, 1), row("b", 2, 5), row("c", 0, 3)}, []string{"b", "c"}, 1, 1},
		}},
		{"a named lock keeps its name when a newcomer is only a little hotter", []scrape{
			{[]lockRow{row("a", 0, 10), row("b", 0, 8)}, []string{"a", "b"}, 0, 0},
			{[]lockRow{row("a", 0, 10), row("b", 0, 8), row("c", 0, 9)}, []string{"a", "b"}, 9, 0},
		}},
		{"a clearly hotter lock takes the weakest name; other never drops", []scrape{
			{[]lockRow{row("a", 0, 10), row("b", 0, 8), row("c", 0, 1)}, []string{"a", "b"}, 1, 0},
			// c's second earlier in other stays there; its growth shows
			// under its own name from now on.
			{[]lockRow{row("a", 0, 10), row("b", 0, 8), row("c", 2, 20)}, []string{"a", "c"}, 1, 0},
			// b counts in other with what it adds after it lost its name.
			{[]lockRow{row("a", 0, 10), row("b", 1, 9), row("c", 2, 25)}, []string{"a", "c"}, 1 + 1, 1},
		}},
		{"a lock the Aggregator forgot frees its slot without lowering other", []scrape{
			{[]lockRow{row("a", 0, 10), row("b", 0, 8), row("c", 0, 2)}, []string{"a", "b"}, 2, 0},
			{[]lockRow{row("a", 0, 10), row("c", 0, 3)}, []string{"a", "c"}, 2, 0},
			{[]lockRow{row("a", 0, 10)}, []string{"a"}, 2, 0},
		}},
		{"ties are broken by name, so the choice is stable", []scrape{
			{[]lockRow{row("z", 0, 1), row("y", 0, 1), row("x", 0, 1)}, []string{"x", "y"}, 1, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newLockSelector(2)
			prevOther := 0.0
			for i, sc := range tc.scrapes {
				named, other := s.update(sc.rows)
				assert.Equal(t, sc.named, names(named), "scrape %d", i)
				assert.Equal(t, sc.otherSeconds, other.seconds, "scrape %d other seconds", i)
				assert.Equal(t, sc.otherWaiters, other.waiters, "scrape %d other waiters", i)
				assert.GreaterOrEqual(t, other.seconds, prevOther)
				prevOther = other.seconds
				assert.Equal(t, otherLockKey, other.key)
			}
		})
	}
}

// A named series never goes below what it exported, even when a lock
// summed into it disappears from the Summary.
func TestLockSelectorNamedSeriesNeverDrop(t *testing.T) {
	s := newLockSelector(10)
	named, _ := s.update([]lockRow{row("a", 1, 7)})
	require.Len(t, named, 1)
	named, _ = s.update([]lockRow{row("a", 1, 5)})
	assert.Equal(t, 7.0, named[0].seconds)
	named, _ = s.update([]lockRow{row("a", 1, 8)})
	assert.Equal(t, 8.0, named[0].seconds)
}

// Locks whose labels coincide are summed into one series.
func TestGroupLocksSumsCollidingLabels(t *testing.T) {
	frame := "Foo.bar(Foo.java:1)"
	rows := groupLocks([]analysis.LockSummary{
		{Kind: "monitor", Class: "com.a.Foo", WaitFrame: &frame, CurrentWaiters: 2, BlockedThreadSeconds: 1.5},
		{Kind: "monitor", Class: "org.b.Foo", WaitFrame: &frame, CurrentWaiters: 1, BlockedThreadSeconds: 0.5},
		{Kind: "futex", Class: "contended_mutex", CurrentWaiters: 3, BlockedThreadSeconds: 4},
		{Kind: "futex", Class: "", CurrentWaiters: 1, BlockedThreadSeconds: 1},
	}, lockLabels{})
	assert.Equal(t, []lockRow{
		{key: lockKey{"monitor Foo", frame}, waiters: 3, seconds: 2},
		{key: lockKey{"futex contended_mutex", ""}, waiters: 3, seconds: 4},
		{key: lockKey{"futex (unknown)", ""}, waiters: 1, seconds: 1},
	}, rows)
}

func TestTopPools(t *testing.T) {
	pools := []analysis.PoolSummary{
		{Name: "worker-N", Threads: 20}, {Name: "io-N", Threads: 5}, {Name: "other", Threads: 2},
		{Name: "gc", Threads: 5}, {Name: "main", Threads: 1},
		{Name: strings.Repeat("x", 300) + "a", Threads: 1}, {Name: strings.Repeat("x", 300) + "b", Threads: 1},
	}
	named, other := topPools(pools, 3)
	assert.Equal(t, []poolRow{{"worker-N", 20}, {"gc", 5}, {"io-N", 5}}, named)
	// A pool really called "other", main, and the two long names that
	// became one label.
	assert.Equal(t, 2+1+2, other)
	named, other = topPools(pools, 10)
	assert.Len(t, named, 5)
	assert.Equal(t, 2, other)
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	tests := []struct{ in, want string }{
		{"pool-N-thread-N", "pool-N-thread-N"},
		{"", ""},
		{"tab\there\nnew", "tab here new"},
		{"esc\x1b[31mred", "esc [31mred"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"quote\"and\\back", "quote\"and\\back"},
		{"line\u2028sep", "line sep"},
		{"evil\u202egnp.exe", "evil gnp.exe"},
		{"iso\u2066late\u2069d", "iso late d"},
		{long, strings.Repeat("é", 62) + "…"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("a", 129), strings.Repeat("a", 125) + "…"},
	}
	for _, tc := range tests {
		got := LabelValue(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.LessOrEqual(t, len(got), maxLabelBytes)
	}
}

func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "a", "tab\t", "\xff\xfe", strings.Repeat("线", 60), "</script>", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := LabelValue(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 from %q: %q", s, got)
		}
		if len(got) > maxLabelBytes {
			t.Fatalf("%d bytes from %q", len(got), s)
		}
		for _, r := range got {
			if termtext.Unsafe(r) {
				t.Fatalf("unsafe rune %U in %q from %q", r, got, s)
			}
		}
		if len(s) <= maxLabelBytes && utf8.ValidString(s) && !strings.ContainsFunc(s, termtext.Unsafe) && got != s {
			t.Fatalf("clean %q changed to %q", s, got)
		}
		if LabelValue(got) != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, LabelValue(got))
		}
	})
}

// The JVM's own counters come from hsperfdata, whose reader (internal/jvm)
// is not written yet, so no live run fills Summary.JVM today; this checks
// their formatting from a Summary with the fields set.
func TestJVMCounters(t *testing.T) {
	s := &analysis.Summary{Samples: 3, Target: &analysis.TargetSummary{PID: 7, Name: "java", Kind: "jvm"}, JVM: &analysis.JVMSummary{
		LiveThreads: 40, DaemonThreads: 30, PeakThreads: 45, StartedThreads: 120,
		Safepoints: 900, SafepointSeconds: 1.25, GCSeconds: 3.5,
		Sync: map[string]int64{"ContendedLockAttempts": 77, "MonExtant": 5, "Parks": 12},
	}}
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfo{PID: 7, Name: "java", Kind: "jvm"}, frozen{s})
	mfs := gather(t, c)
	l := map[string]string{"pid": "7", "target": "java"}
	for name, want := range map[string]float64{
		"ctprof_jvm_live_threads": 40, "ctprof_jvm_daemon_threads": 30, "ctprof_jvm_peak_threads": 45,
		"ctprof_jvm_threads_started_total": 120, "ctprof_jvm_safepoints_total": 900,
		"ctprof_jvm_safepoint_seconds_total": 1.25, "ctprof_jvm_gc_seconds_total": 3.5,
	} {
		v, ok := find(mfs, name, l)
		assert.True(t, ok, name)
		assert.Equal(t, want, v, name)
	}
	events := map[string]float64{}
	for _, m := range mfs["ctprof_jvm_monitor_events_total"].GetMetric() {
		events[label(m, "event")] = value(m)
	}
	// MonExtant is a gauge of the JVM's internals, not an event count.
	assert.Equal(t, map[string]float64{"ContendedLockAttempts": 77, "Parks": 12}, events)
}

// fullSummary has every part the Collector exports, and more locks,
// pools and waking pools than any top K.
func fullSummary() *analysis.Summary {
	frame := "Hot.path(Hot.java:1)"
	s := &analysis.Summary{
		Samples: 10, Dumps: 2, Errors: 1,
		Target:               &analysis.TargetSummary{PID: 1, Name: "java", Kind: "jvm", CPUs: 2},
		States:               map[string]int{"RUNNABLE": 3, "BLOCKED": 2, "WEIRD": 1},
		OSStates:             map[string]int{"running": 3, "sleeping": 40},
		Totals:               &analysis.Totals{CPUSeconds: 1},
		Connections:          &analysis.ConnectionSummary{Established: 5},
		ThreadsPerConnection: &analysis.ThreadsPerConnection{Ratio: 9},
		Deadlocks:            []analysis.DeadlockSummary{{Threads: []string{"a", "b"}}},
		SampleCost:           &analysis.SampleCost{AvgSeconds: 0.001, PeakSeconds: 0.002, TargetPauseSeconds: new(float64)},
		JVM:                  &analysis.JVMSummary{Sync: map[string]int64{}},
	}
	for _, ev := range monitorEvents {
		s.JVM.Sync[ev] = 1
	}
	for i := 0; i < 100; i++ {
		s.Pools = append(s.Pools, analysis.PoolSummary{Name: fmt.Sprintf("pool%d-", i), Threads: i})
		s.Locks = append(s.Locks, analysis.LockSummary{Kind: "monitor", Class: fmt.Sprintf("C%d", i), WaitFrame: &frame, CurrentWaiters: 1, BlockedThreadSeconds: float64(i)})
		s.Wakeups = append(s.Wakeups, analysis.Wakeup{Pool: fmt.Sprintf("w%d-", i), PerSecond: 10})
	}
	return s
}

// However much a target has, its series stay within 4 × top + 54 (the
// bound docs/prometheus.md states).
func TestSeriesBound(t *testing.T) {
	s := fullSummary()
	for _, top := range []int{1, 10, 25} {
		c := NewCollector(CollectorOptions{Top: top})
		c.Register(TargetInfo{PID: 1, Name: "java", Kind: "jvm"}, frozen{s})
		n := 0
		for name, mf := range gather(t, c) {
			if name != "ctprof_build_info" {
				n += len(mf.GetMetric())
			}
		}
		assert.Equal(t, 4*top+54, n, "top %d", top)
	}
}

// docs/prometheus.md lists every metric, and only those.
func TestDocsListEveryMetric(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "prometheus.md"))
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(ctprof_[a-z_]+)` \\| (gauge|counter) \\|").FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = m[2]
	}
	exported := map[string]bool{}
	for _, d := range allDescs {
		exported[descName(d)] = true
		assert.True(t, documented[descName(d)] != "", "%s is not in docs/prometheus.md's table", descName(d))
	}
	// The documented type is the exported one.
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfo{PID: 1, Name: "java", Kind: "jvm"}, frozen{fullSummary()})
	for name, mf := range gather(t, c) {
		assert.Equal(t, strings.ToLower(mf.GetType().String()), documented[name], name)
	}
	for m := range documented {
		assert.True(t, exported[m], "docs/prometheus.md lists %s, which is not exported", m)
	}
}

// A lock keeps the labels it was first exported with: its principal wait
// kind and its most common frame may change as samples accumulate, and a
// counter that changed labels would start a new series while "other"
// counted a flipped lock's whole total a second time.
func TestLockLabelsStayWhileTheKindAndSiteMove(t *testing.T) {
	enter, relock := "Cache.get(Cache.java:42)", "Cache.get(Cache.java:47)"
	lock := func(id, kind, class string, site *string, seconds float64) analysis.LockSummary {
		return analysis.LockSummary{ID: id, Kind: kind, Class: class, WaitFrame: site, CurrentWaiters: 1, BlockedThreadSeconds: seconds}
	}
	labels, sel := lockLabels{}, newLockSelector(1)
	scrape := func(locks ...analysis.LockSummary) ([]lockRow, lockRow) {
		labels.keep(locks)
		return sel.update(groupLocks(locks, labels))
	}

	named, other := scrape(lock("hot", "monitor", "com.x.Cache", &enter, 10), lock("cold", "monitor", "com.x.Pool", &enter, 2))
	require.Equal(t, []lockRow{{key: lockKey{"monitor Cache", enter}, waiters: 1, seconds: 10}}, named)
	assert.Equal(t, 2.0, other.seconds)

	// Both locks' waiters now mostly re-lock after a wait, at another line.
	named, other = scrape(lock("hot", "relock", "com.x.Cache", &relock, 12), lock("cold", "relock", "com.x.Pool", &relock, 3))
	require.Equal(t, []lockRow{{key: lockKey{"monitor Cache", enter}, waiters: 1, seconds: 12}}, named, "the named series keeps its labels")
	assert.Equal(t, 3.0, other.seconds, "other grows by the cold lock's increase only")

	// A lock the Summary dropped is forgotten; back, it is labelled anew.
	scrape(lock("hot", "relock", "com.x.Cache", &relock, 13))
	assert.NotContains(t, labels, "cold")
	named, _ = scrape(lock("cold", "relock", "com.x.Pool", &relock, 1))
	assert.Equal(t, "relock Pool", named[0].key.lock)
}

// Resources are exported by what they are, with their instances summed:
// the top ones by current waiters, the rest and any label cut to "other".
func TestTopResources(t *testing.T) {
	sites := []analysis.ContentionSite{
		{Class: "java.util.concurrent.SynchronousQueue$TransferQueue", WaitFrame: "com.zaxxer.hikari.util.ConcurrentBag.borrow(ConcurrentBag.java:163)", CurrentWaiters: 20},
		{Class: "org.hsqldb.lib.CountUpDownLatch$Sync", WaitFrame: "org.hsqldb.Session.executeCompiledStatement(Unknown Source)", CurrentWaiters: 15},
		{Class: "java.lang.Object", WaitFrame: "App.serve(App.java:9)", CurrentWaiters: 3},
		{Class: "java.lang.Object", WaitFrame: "App.other(App.java:19)", CurrentWaiters: 1},
	}
	named, other := topResources(sites, 2)
	assert.Equal(t, []poolRow{{"SynchronousQueue$TransferQueue at ConcurrentBag.borrow", 20}, {"CountUpDownLatch$Sync at Session.executeCompiledStatement", 15}}, named)
	assert.Equal(t, 4, other)
	assert.Equal(t, "Object at App.serve", resourceLabel(sites[2]))
}
