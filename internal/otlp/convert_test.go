package otlp

import (
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testotelcol"
)

// testPprof is ctprof's pprof profile of a few sampled stacks and
// measured waits, as --pprof writes it.
func testPprof(t *testing.T, scale int) *profile.Profile {
	t.Helper()
	stacks := []*analysis.FoldedStack{
		{Frames: []string{"start_thread", "convoy", "pthread_mutex_lock"}, Lines: []symbolize.FrameLine{{}, {File: "lock_convoy.c", Line: 40}, {}},
			Count: 5 * scale, ByLabel: map[analysis.StackLabel]int{{State: "BLOCKED", Pool: "convoy-N", Lock: "futex||0x10"}: 4 * scale, {State: "RUNNABLE", Pool: "convoy-N"}: scale}},
		{Frames: []string{"main", "pause"}, Count: scale, ByLabel: map[analysis.StackLabel]int{{State: "WAITING", Pool: "main"}: scale}},
	}
	waits := []*analysis.WaitStack{{Frames: []string{"start_thread", "convoy", "pthread_mutex_lock"}, Count: int64(7 * scale), WaitNanos: int64(9e6 * scale), Source: analysis.WaitsFutexTrace}}
	locks := []analysis.LockSummary{{ID: "futex||0x10", Class: "contended_mutex", Site: "futex|contended_mutex|convoy"}}
	p, err := report.PprofProfile(report.PprofInput{Stacks: stacks, WaitStacks: waits, Locks: locks, Interval: time.Second, Start: time.Unix(1000, 0), Duration: 10 * time.Second})
	require.NoError(t, err)
	return p
}

// labelKey is the attribute key of a pprof label.
func labelKey(l string) string { return labelKeys[l] }

// OTLP carries exactly pprof's values, stacks (with lines) and labels,
// one profile per sample type, with the zero entries the format asks for
// and the resource attributes.
func TestConvertKeepsThePprofProfile(t *testing.T) {
	p := testPprof(t, 1)
	pd, err := Convert(p, Resource{PID: 7, Executable: "lock_convoy", Runtime: "native", Host: "h", Attributes: map[string]string{"service.name": "svc"}}, "v1")
	require.NoError(t, err)
	assert.Equal(t, testotelcol.PprofValues(p, labelKey), testotelcol.Values(pd, true))
	assert.Equal(t, map[string]bool{"contended_mutex": true}, testotelcol.SampleAttribute(pd, AttrLock))
	assert.Equal(t, map[string]bool{"futex|contended_mutex|convoy": true}, testotelcol.SampleAttribute(pd, AttrResource))
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

// A delta holds what grew since the last export, over its own window.
func TestDeltaIsWhatGrew(t *testing.T) {
	prev, cur := testPprof(t, 1), testPprof(t, 3)
	start, now := time.Unix(2000, 0), time.Unix(2015, 0)
	d := Delta(prev, cur, start, now)
	assert.Equal(t, start.UnixNano(), d.TimeNanos)
	assert.Equal(t, int64(15e9), d.DurationNanos)
	want := testotelcol.PprofValues(testPprof(t, 2), labelKey)
	assert.Equal(t, want, testotelcol.PprofValues(d, labelKey))
	// Nothing new: no samples.
	assert.Empty(t, Delta(cur, cur, start, now).Sample)
	// The first export is the whole profile; prev is not changed.
	assert.Equal(t, testotelcol.PprofValues(prev, labelKey), testotelcol.PprofValues(Delta(nil, prev, start, now), labelKey))
	assert.Equal(t, testotelcol.PprofValues(testPprof(t, 1), labelKey), testotelcol.PprofValues(prev, labelKey))
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
