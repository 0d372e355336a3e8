package otlp

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testotelcol"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// testPprof is ctprof's pprof profile of a few sampled stacks and
// measured waits, as --pprof writes it.
func testPprof(t *testing.T, scale int) *profile.Profile {
	t.Helper()
	stacks := []*analysis.FoldedStack{
		{Frames: []string{"start_thread", "convoy", "pthread_mutex_lock"}, Lines: []symbolize.FrameLine{{}, {File: "lock_convoy.c", Line: 40}, {}},
			Count: 5 * scale, ByLabel: map[analysis.StackLabel]int{
				{State: "BLOCKED", Pool: "convoy-N", Lock: "futex||0x10", Thread: "convoy-1"}: 3 * scale,
				{State: "BLOCKED", Pool: "convoy-N", Lock: "futex||0x10", Thread: "convoy-2"}: scale,
				{State: "RUNNABLE", Pool: "convoy-N", Thread: "convoy-2"}:                     scale}},
		{Frames: []string{"main", "pause"}, Count: scale, ByLabel: map[analysis.StackLabel]int{{State: "WAITING", Pool: "main", Thread: "main"}: scale}},
	}
	waits := []*analysis.WaitStack{{Frames: []string{"start_thread", "convoy", "pthread_mutex_lock"}, Count: int64(7 * scale), WaitNanos: int64(9e6 * scale), Source: analysis.WaitsFutexTrace}}
	locks := []analysis.LockSummary{{ID: "futex||0x10", Class: "contended_mutex", Site: "futex|contended_mutex|convoy"}}
	p, err := report.PprofProfile(report.PprofInput{Stacks: stacks, WaitStacks: waits, Locks: locks, Interval: time.Second, Start: time.Unix(1000, 0), Duration: 10 * time.Second})
	require.NoError(t, err)
	return p
}

// OTLP carries exactly pprof's values, stacks (with lines) and labels,
// one profile per sample type, with the zero entries the format asks for
// and the resource attributes.
func TestConvertKeepsThePprofProfile(t *testing.T) {
	p := testPprof(t, 1)
	pd, err := Convert(p, Resource{PID: 7, Executable: "lock_convoy", Runtime: "native", Host: "h", Attributes: map[string]string{"service.name": "svc"}}, "v1")
	require.NoError(t, err)
	assert.Equal(t, testotelcol.PprofValues(p, AttributeKey), testotelcol.Values(pd, true))
	assert.Equal(t, map[string]bool{"contended_mutex": true}, testotelcol.SampleAttribute(pd, AttrLock))
	assert.Equal(t, map[string]bool{"futex|contended_mutex|convoy": true}, testotelcol.SampleAttribute(pd, AttrResource))
	assert.Equal(t, map[string]bool{"convoy-1": true, "convoy-2": true, "main": true}, testotelcol.SampleAttribute(pd, AttrThreadName))
	assert.Equal(t, 4, pd.ProfileCount(), "samples, blocked, contentions, delay")
	d := pd.Dictionary()
	assert.Equal(t, "", d.StringTable().At(0))
	assert.Zero(t, d.StackTable().At(0).LocationIndices().Len())
	assert.Zero(t, d.FunctionTable().At(0).NameStrindex())
	attrs := pd.ResourceProfiles().At(0).Resource().Attributes().AsRaw()
	assert.Equal(t, map[string]any{"process.pid": int64(7), "process.executable.name": "lock_convoy", "process.runtime.name": "native", "host.name": "h", "service.name": "svc"}, attrs)
	measured := map[string]string{}
	for _, prof := range pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().All() {
		m, err := pprofile.FromAttributeIndices(d.AttributeTable(), prof, d)
		require.NoError(t, err)
		v, _ := m.Get(AttrMeasuredBy)
		measured[d.StringTable().At(int(prof.SampleType().TypeStrindex()))] = v.Str()
		assert.Equal(t, int64(1000e9), int64(prof.Time()))
		assert.Equal(t, uint64(10e9), prof.DurationNano())
	}
	assert.Equal(t, map[string]string{"samples": "thread-samples", "blocked": "thread-samples", "contentions": "futex-trace", "delay": "futex-trace"}, measured)
}

// Every thread sample carries its thread's own name as the semantic
// conventions' thread.name, beside its pool; measured waits are by stack,
// without a thread.
func TestConvertSendsThreadName(t *testing.T) {
	pd, err := Convert(testPprof(t, 1), Resource{PID: 7}, "v1")
	require.NoError(t, err)
	d := pd.Dictionary()
	type attrs struct{ pool, thread string }
	got := map[string][]attrs{}
	for _, prof := range pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().All() {
		typ := d.StringTable().At(int(prof.SampleType().TypeStrindex()))
		for _, s := range prof.Samples().All() {
			m, err := pprofile.FromAttributeIndices(d.AttributeTable(), s, d)
			require.NoError(t, err)
			pool, _ := m.Get(AttrPool)
			thread, _ := m.Get(AttrThreadName)
			got[typ] = append(got[typ], attrs{pool.Str(), thread.Str()})
		}
	}
	assert.Equal(t, map[string][]attrs{
		"samples":     {{"convoy-N", "convoy-1"}, {"convoy-N", "convoy-2"}, {"convoy-N", "convoy-2"}, {"main", "main"}},
		"blocked":     {{"convoy-N", "convoy-1"}, {"convoy-N", "convoy-2"}},
		"contentions": {{}},
		"delay":       {{}},
	}, got)
}

// A delta holds what grew since the last export, over its own window.
func TestDeltaIsWhatGrew(t *testing.T) {
	prev, cur := testPprof(t, 1), testPprof(t, 3)
	start, now := time.Unix(2000, 0), time.Unix(2015, 0)
	d := Delta(prev, cur, start, now)
	assert.Equal(t, start.UnixNano(), d.TimeNanos)
	assert.Equal(t, int64(15e9), d.DurationNanos)
	want := testotelcol.PprofValues(testPprof(t, 2), AttributeKey)
	assert.Equal(t, want, testotelcol.PprofValues(d, AttributeKey))
	// Nothing new: no samples.
	assert.Empty(t, Delta(cur, cur, start, now).Sample)
	// The first export is the whole profile; prev is not changed.
	assert.Equal(t, testotelcol.PprofValues(prev, AttributeKey), testotelcol.PprofValues(Delta(nil, prev, start, now), AttributeKey))
	assert.Equal(t, testotelcol.PprofValues(testPprof(t, 1), AttributeKey), testotelcol.PprofValues(prev, AttributeKey))
}

// A value that shrank (its stack folded into "other") counts as zero.
func TestDeltaNeverNegative(t *testing.T) {
	d := Delta(testPprof(t, 3), testPprof(t, 1), time.Unix(0, 0), time.Unix(1, 0))
	for _, s := range d.Sample {
		for _, v := range s.Value {
			assert.GreaterOrEqual(t, v, int64(0))
		}
	}
	assert.Empty(t, d.Sample)
}

func pprofOf(t *testing.T, stacks []*analysis.FoldedStack, waits []*analysis.WaitStack) *profile.Profile {
	t.Helper()
	p, err := report.PprofProfile(report.PprofInput{Stacks: stacks, WaitStacks: waits, Interval: time.Second})
	require.NoError(t, err)
	return p
}

// Stacks folded into "(other stacks)" when the Aggregator's table filled
// move their samples there: that is not new, and the delta says only
// what other really gained.
func TestDeltaOfFoldedStacksIsOnlyWhatIsNew(t *testing.T) {
	label := analysis.StackLabel{State: "BLOCKED", Pool: "w-N"}
	prev := pprofOf(t, []*analysis.FoldedStack{
		{Frames: []string{"run", "a"}, Count: 5, ByLabel: map[analysis.StackLabel]int{label: 5}},
		{Frames: []string{"run", "b"}, Count: 4, ByLabel: map[analysis.StackLabel]int{label: 4}},
	}, nil)
	cur := pprofOf(t, []*analysis.FoldedStack{
		{Frames: []string{"run", "b"}, Count: 6, ByLabel: map[analysis.StackLabel]int{label: 6}},
		{Frames: []string{analysis.OtherStacks}, Count: 7, ByLabel: map[analysis.StackLabel]int{label: 7}},
	}, nil)
	d := Delta(prev, cur, time.Unix(0, 0), time.Unix(1, 0))
	got := testotelcol.PprofValues(d, nil)["samples/count"]
	assert.Equal(t, map[string]int64{"b::0;run::0": 2, "(other stacks)::0": 2}, got)
}

// A folded stack's threads arrive in (other stacks) under their own
// names, or, once other names as many threads as a stack may, under
// analysis.OtherThreads: either way it is not new.
func TestDeltaOfFoldedStacksByThreadName(t *testing.T) {
	w := func(thread string) analysis.StackLabel {
		return analysis.StackLabel{State: "BLOCKED", Pool: "w-N", Thread: thread}
	}
	prev := pprofOf(t, []*analysis.FoldedStack{
		{Frames: []string{"run", "a"}, Count: 8, ByLabel: map[analysis.StackLabel]int{w("w-1"): 5, w("w-9"): 3}},
		{Frames: []string{"run", "b"}, Count: 4, ByLabel: map[analysis.StackLabel]int{w("w-2"): 4}},
	}, nil)
	cur := pprofOf(t, []*analysis.FoldedStack{
		{Frames: []string{"run", "b"}, Count: 6, ByLabel: map[analysis.StackLabel]int{w("w-2"): 6}},
		// a's w-1 (5) kept its name, a's w-9 (3) had no room left; 1 and
		// 2 samples are new.
		{Frames: []string{analysis.OtherStacks}, Count: 11, ByLabel: map[analysis.StackLabel]int{w("w-1"): 6, w(analysis.OtherThreads): 5}},
	}, nil)
	d := Delta(prev, cur, time.Unix(0, 0), time.Unix(1, 0))
	pool, state := AttrPool+"=w-N", AttrState+"=BLOCKED"
	key := func(stack, thread string) string {
		return stack + "|" + strings.Join([]string{pool, AttrThreadName + "=" + thread, state}, ",")
	}
	assert.Equal(t, map[string]int64{
		key("b::0;run::0", "w-2"):                       2,
		key("(other stacks)::0", "w-1"):                 1,
		key("(other stacks)::0", analysis.OtherThreads): 2,
	}, testotelcol.PprofValues(d, AttributeKey)["samples/count"])
}

// The deltas of a run whose stack table keeps filling, with threads that
// come and go, add up to its last profile by state, pool and lock: nothing
// that moved into (other stacks), under a thread's name or OtherThreads,
// is sent twice, and no delta is negative. (By thread they need not: a
// thread sent by name before its stack folded may be in OtherThreads now.)
func TestDeltasOfAFoldingRunAddUp(t *testing.T) {
	a := analysis.NewWithOptions(analysis.Options{MaxStacks: 6})
	byLabels := func(p *profile.Profile) map[string]int64 {
		out := map[string]int64{}
		for _, s := range p.Sample {
			l := maps.Clone(s.Label)
			delete(l, report.PprofThreadNameLabel)
			out[labelsKey(l)] += s.Value[0]
		}
		return out
	}
	sent := map[string]int64{}
	var prev, cur *profile.Profile
	for r := range 12 {
		at := time.Unix(int64(1000+r), 0)
		d := &threaddump.Dump{Format: threaddump.FormatHotSpot, Time: at}
		// Four new stacks a round, each of more threads than the last
		// round's: the stacks sent last time fold into (other stacks).
		for i := range 4 * (10 + 2*r) {
			d.Threads = append(d.Threads, threaddump.Thread{Name: fmt.Sprintf("t-%d", i+7*r), ID: int64(i + 7*r + 1), State: threaddump.StateWaiting,
				Frames: []threaddump.Frame{{Class: "app.C", Method: fmt.Sprintf("m%d", 4*r+i%4)}, {Class: "java.lang.Thread", Method: "run"}}})
		}
		a.Add(&snapshot.Snapshot{Time: at, Interval: time.Second, Target: snapshot.Target{PID: 1, Kind: snapshot.KindJVM}, Dump: d})
		cur = pprofOf(t, a.Stacks(), nil)
		delta := Delta(prev, cur, at, at.Add(time.Second))
		for _, s := range delta.Sample {
			require.GreaterOrEqual(t, s.Value[0], int64(0))
		}
		for k, v := range byLabels(delta) {
			sent[k] += v
		}
		prev = cur
	}
	folded := false
	for _, s := range cur.Sample {
		folded = folded || isOther(s) && s.Label[report.PprofThreadNameLabel][0] == analysis.OtherThreads
	}
	require.True(t, folded, "the run folds threads away")
	assert.Equal(t, byLabels(cur), sent)
}

// A JFR recording's first waits add sample types: the delta still sends
// only what is new, with the waits.
func TestDeltaWhenMeasuredWaitsArrive(t *testing.T) {
	label := analysis.StackLabel{State: "BLOCKED", Pool: "w-N"}
	prev := pprofOf(t, []*analysis.FoldedStack{{Frames: []string{"run", "a"}, Count: 3, ByLabel: map[analysis.StackLabel]int{label: 3}}}, nil)
	cur := pprofOf(t, []*analysis.FoldedStack{{Frames: []string{"run", "a"}, Count: 5, ByLabel: map[analysis.StackLabel]int{label: 5}}},
		[]*analysis.WaitStack{{Frames: []string{"run", "a"}, Count: 4, WaitNanos: 8e6, Source: analysis.WaitsJFR}})
	require.Len(t, cur.SampleType, 4)
	d := Delta(prev, cur, time.Unix(0, 0), time.Unix(1, 0))
	got := testotelcol.PprofValues(d, nil)
	assert.Equal(t, map[string]int64{"a::0;run::0": 2}, got["samples/count"], "not the cumulative 5")
	assert.Equal(t, map[string]int64{"a::0;run::0": 4}, got["contentions/count"])
}
