package report

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

func TestPprofExport(t *testing.T) {
	a := smallSeries()
	s := a.Summary()
	require.Equal(t, 5*time.Second, s.DumpInterval(), "dumps every 5 s")
	var buf bytes.Buffer
	require.NoError(t, Pprof(&buf, PprofInput{Stacks: a.Stacks(), Interval: s.DumpInterval(), Start: *s.FirstDump}))

	p, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, p.SampleType, 2)
	assert.Equal(t, "samples", p.SampleType[0].Type)
	assert.Equal(t, "blocked", p.SampleType[1].Type)
	assert.Equal(t, "nanoseconds", p.SampleType[1].Unit)
	var samples, blocked int64
	byState, byThread := map[string]int64{}, map[string]int64{}
	for _, smp := range p.Sample {
		samples += smp.Value[0]
		blocked += smp.Value[1]
		require.Len(t, smp.Label["state"], 1)
		require.Len(t, smp.Label["thread"], 1)
		require.Len(t, smp.Label["thread_name"], 1)
		byState[smp.Label["state"][0]] += smp.Value[0]
		byThread[smp.Label["thread_name"][0]] += smp.Value[0]
		assert.Equal(t, "request-N", smp.Label["thread"][0])
		// Leaf first: the root of every stack is Thread.run.
		assert.Equal(t, "java.lang.Thread.run", smp.Location[len(smp.Location)-1].Line[0].Function.Name)
	}
	// 4 dumps of 12 threads: 9 BLOCKED (7 on the cache, 2 deadlocked), 1 RUNNABLE, 2 TIMED_WAITING.
	assert.EqualValues(t, 4*12, samples)
	assert.EqualValues(t, 4*9, byState["BLOCKED"])
	// Each BLOCKED sample counts the time since the dump before it (the
	// first, the 1 s interval the series was sampled at), as the lock
	// table's blocked seconds do.
	assert.EqualValues(t, 9*(1+3*5)*time.Second.Nanoseconds(), blocked, "blocked time = each BLOCKED sample × the time since the dump before")
	require.Len(t, byThread, 12, "each thread by its own name: %v", byThread)
	for name, n := range byThread {
		assert.Regexp(t, `^request-\d+$`, name)
		assert.EqualValues(t, 4, n, name)
	}

	// The JDK's own reader: go tool pprof.
	path := filepath.Join(t.TempDir(), "contention.pb.gz")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=blocked", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "app.Cache.get")
	assert.Contains(t, string(out), "Type: blocked")
	out, err = exec.Command(goTool, "tool", "pprof", "-top", "-tagfocus=state=RUNNABLE", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Showing nodes accounting for 4, 8.33% of 48 total", "the state label filters: 4 of 48 samples are RUNNABLE")
	out, err = exec.Command(goTool, "tool", "pprof", "-top", "-tagfocus=thread_name=request-3", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Showing nodes accounting for 4, 8.33% of 48 total", "the thread_name label filters: one thread's 4 samples")
}

// The thread_name label is the stack label's thread (absent for a thread
// without a name), beside the pool's "thread", and the samples of a stack
// come in one order.
func TestPprofThreadNameLabel(t *testing.T) {
	st := &analysis.FoldedStack{Frames: []string{"run", "take", "park"}, Count: 10, ByLabel: map[analysis.StackLabel]int{
		{State: "WAITING", Pool: "worker-N", Thread: "worker-2"}:            1,
		{State: "WAITING", Pool: "worker-N", Thread: "worker-1"}:            2,
		{State: "WAITING", Pool: "worker-N", Thread: analysis.OtherThreads}: 3,
		{State: "WAITING", Pool: ""}:                                        4,
	}}
	for _, tc := range []struct {
		name   string
		sample int
		want   map[string][]string
	}{
		{"no name: no label", 0, map[string][]string{"state": {"WAITING"}, "thread": {""}}},
		{"the fold-away name", 1, map[string][]string{"state": {"WAITING"}, "thread": {"worker-N"}, "thread_name": {analysis.OtherThreads}}},
		{"a thread", 2, map[string][]string{"state": {"WAITING"}, "thread": {"worker-N"}, "thread_name": {"worker-1"}}},
		{"another", 3, map[string][]string{"state": {"WAITING"}, "thread": {"worker-N"}, "thread_name": {"worker-2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 { // the same order every time
				p, err := PprofProfile(PprofInput{Stacks: []*analysis.FoldedStack{st}, Interval: time.Second})
				require.NoError(t, err)
				require.Len(t, p.Sample, 4)
				assert.Equal(t, tc.want, p.Sample[tc.sample].Label)
			}
		})
	}
}

func TestPprofExportWithoutInterval(t *testing.T) {
	a := smallSeries()
	var buf bytes.Buffer
	require.NoError(t, Pprof(&buf, PprofInput{Stacks: a.Stacks()}))
	p, err := profile.Parse(&buf)
	require.NoError(t, err)
	assert.Equal(t, time.Second.Nanoseconds(), p.Period)
	assert.Contains(t, strings.Join(p.Comments, "\n"), "assumes 1 s")
}

// parseFolded reads the collapsed-stack format the way flamegraph.pl does:
// the count after the last space, frames separated by ';'.
func parseFolded(t *testing.T, text string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		require.Greater(t, i, 0, "line %q has no count", line)
		n, err := strconv.Atoi(line[i+1:])
		require.NoError(t, err, line)
		out[line[:i]] += n
	}
	return out
}

func TestFoldedRoundTrip(t *testing.T) {
	stacks := smallSeries().Stacks()
	// A hostile frame must not break the line format.
	stacks = append(stacks, &analysis.FoldedStack{Frames: []string{"java.lang.Thread.run", "evil;frame\nwith newline"}, Count: 3})
	var buf bytes.Buffer
	require.NoError(t, Folded(&buf, stacks))
	got := parseFolded(t, buf.String())
	want := map[string]int{}
	total := 0
	for _, s := range stacks {
		frames := make([]string, len(s.Frames))
		for i, f := range s.Frames {
			frames[i] = foldedFrame(f)
			assert.NotContains(t, frames[i], ";")
		}
		want[strings.Join(frames, ";")] += s.Count
		total += s.Count
	}
	assert.Equal(t, want, got)
	assert.Equal(t, strings.Count(buf.String(), "\n"), len(stacks), "one line per stack")
	assert.Contains(t, got, "java.lang.Thread.run;evil:frame with newline")
	sum := 0
	for _, n := range got {
		sum += n
	}
	assert.Equal(t, total, sum, "no sample lost")
}

func TestSpeedscopeExport(t *testing.T) {
	stacks := smallSeries().Stacks()
	var buf bytes.Buffer
	require.NoError(t, Speedscope(&buf, "ctprof: pid 4242 (java)", stacks))
	var f struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []struct{ Name string }
		}
		Profiles []struct {
			Type, Name, Unit     string
			StartValue, EndValue int
			Samples              [][]int
			Weights              []int
		}
		Exporter string
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &f))
	assert.Equal(t, SpeedscopeSchema, f.Schema)
	assert.Equal(t, "ctprof", f.Exporter)
	require.Len(t, f.Profiles, 2)
	all, blocked := f.Profiles[0], f.Profiles[1]
	total := 0
	for _, s := range stacks {
		total += s.Count
	}
	for _, p := range f.Profiles {
		assert.Equal(t, "sampled", p.Type)
		assert.Equal(t, "none", p.Unit)
		require.Equal(t, len(p.Samples), len(p.Weights))
		sum := 0
		for i, smp := range p.Samples {
			sum += p.Weights[i]
			for _, idx := range smp {
				require.True(t, idx >= 0 && idx < len(f.Shared.Frames), "frame index %d out of range", idx)
			}
			// Root first, as speedscope wants: every stack starts at Thread.run.
			assert.Equal(t, "java.lang.Thread.run", f.Shared.Frames[smp[0]].Name)
		}
		assert.Equal(t, p.EndValue-p.StartValue, sum)
	}
	assert.Equal(t, total, all.EndValue)
	assert.Equal(t, 36, blocked.EndValue, "4 dumps × 9 BLOCKED threads")
}

// A JSON one-shot calls PrepareJSON on a goroutine of its own while the
// JVM prints: a panic there (a MarshalJSON that cannot take a zero value)
// would end the process. It must encode the zero Summary, and leave the
// encoding of a real one as it was.
func TestPrepareJSONTakesTheZeroSummary(t *testing.T) {
	s := &analysis.Summary{Warnings: []string{"<x>"}, Timelines: []analysis.Timeline{{ID: "t", Series: []analysis.Series{{Name: "s", Points: []analysis.Point{{T: 1, V: 2}}}}}}}
	var before bytes.Buffer
	require.NoError(t, JSON(&before, s))
	assert.NotPanics(t, PrepareJSON)
	var after bytes.Buffer
	require.NoError(t, JSON(&after, s))
	assert.Equal(t, before.String(), after.String())
	assert.Contains(t, after.String(), `"\u003cx\u003e"`, "still escaped for HTML")
	var back analysis.Summary
	require.NoError(t, json.Unmarshal(after.Bytes(), &back))
	assert.Equal(t, s.Timelines, back.Timelines)
}

// Native frames with a source position become a location per line, of a
// function with its file, so `go tool pprof -lines` shows where a native
// thread waits; frames without one stay a location per function.
func TestPprofNativeLines(t *testing.T) {
	stacks := []*analysis.FoldedStack{
		{Frames: []string{"main", "worker_loop", "post_entry", "pthread_mutex_lock"}, Count: 3,
			Lines:   []symbolize.FrameLine{{File: "/src/app.c", Line: 90}, {File: "/src/app.c", Line: 44}, {File: "/src/app.c", Line: 37}, {}},
			ByLabel: map[analysis.StackLabel]int{{State: "sleeping", Pool: "worker-N"}: 3}},
		{Frames: []string{"main", "worker_loop", "post_entry", "pthread_mutex_lock"}, Count: 1,
			Lines:   []symbolize.FrameLine{{File: "/src/app.c", Line: 90}, {File: "/src/app.c", Line: 44}, {File: "/src/app.c", Line: 39}, {}},
			ByLabel: map[analysis.StackLabel]int{{State: "sleeping", Pool: "worker-N"}: 1}},
	}
	var buf bytes.Buffer
	require.NoError(t, Pprof(&buf, PprofInput{Stacks: stacks, Interval: time.Second}))
	p, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	lines := map[int64]bool{}
	functions := map[string]int{}
	for _, l := range p.Location {
		require.Len(t, l.Line, 1)
		if l.Line[0].Function.Name == "post_entry" {
			lines[l.Line[0].Line] = true
			assert.Equal(t, "/src/app.c", l.Line[0].Function.Filename)
		}
	}
	for _, f := range p.Function {
		functions[f.Name]++
	}
	assert.Equal(t, map[int64]bool{37: true, 39: true}, lines, "post_entry's two lines are two locations")
	assert.Equal(t, 1, functions["post_entry"], "of one function")
	assert.Equal(t, 1, functions["pthread_mutex_lock"])
}

// A thread's blocked time in the profile only grows: it is the time each
// of its BLOCKED samples stood for, not its count times the run's mean
// interval between dumps, which falls when dumps come faster. A thread
// blocked early and running since kept losing blocked time, and the OTLP
// deltas of such a run did not add up to its profile.
func TestPprofBlockedTimeOnlyGrows(t *testing.T) {
	a := analysis.New()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	frames := []threaddump.Frame{{Class: "app.Cache", Method: "get"}, {Class: "java.lang.Thread", Method: "run"}}
	blockedOf := func() map[string]int64 {
		s := a.Summary()
		p, err := PprofProfile(PprofInput{Stacks: a.Stacks(), Interval: s.DumpInterval()})
		require.NoError(t, err)
		out := map[string]int64{}
		for _, smp := range p.Sample {
			out[smp.Label[PprofThreadNameLabel][0]] += smp.Value[1]
		}
		return out
	}
	// Dumps 4 s apart, then 1 s apart: the mean interval falls from 4 s.
	at := []time.Duration{0, 4 * time.Second, 8 * time.Second, 9 * time.Second, 10 * time.Second, 11 * time.Second}
	var before map[string]int64
	for i, off := range at {
		d := &threaddump.Dump{Format: threaddump.FormatHotSpot, Time: t0.Add(off)}
		early := threaddump.Thread{Name: "early", ID: 1, State: threaddump.StateBlocked, Frames: frames}
		if i >= 3 {
			early.State = threaddump.StateRunnable
		}
		d.Threads = append(d.Threads, early, threaddump.Thread{Name: "always", ID: 2, State: threaddump.StateBlocked, Frames: frames})
		a.Add(&snapshot.Snapshot{Time: d.Time, Interval: 4 * time.Second, Target: snapshot.Target{PID: 42, Name: "java", Kind: snapshot.KindJVM}, Dump: d})
		if i == 2 {
			before = blockedOf()
		}
	}
	after := blockedOf()
	assert.Equal(t, (4+4+4)*time.Second.Nanoseconds(), before["early"], "three samples, each standing for 4 s")
	assert.Equal(t, before["early"], after["early"], "no new BLOCKED sample: its blocked time stays")
	assert.Equal(t, (4+4+4+1+1+1)*time.Second.Nanoseconds(), after["always"])
}
