package report

import (
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// PprofThreadNameLabel is the pprof label of a sample's thread name
// (analysis.StackLabel.Thread); "thread" is its pool.
const PprofThreadNameLabel = "thread_name"

// PprofInput is what a pprof export holds: the sampled stacks and the time
// one thread sample stands for.
type PprofInput struct {
	Stacks []*analysis.FoldedStack
	// Interval is the mean time between thread dumps; zero assumes one
	// second and says so in the profile's comments.
	Interval time.Duration
	// Start is the first sample's time (zero leaves it out).
	Start    time.Time
	Duration time.Duration
	// Locks name the locks the stacks' samples queued on (StackLabel.Lock
	// is a LockSummary.ID): the samples' "lock" (its class) and
	// "resource" (its contention site) labels.
	Locks []analysis.LockSummary
	// WaitStacks are the waits a JFR recording or the kernel's futex
	// tracepoints measured; they fill the contentions and delay values, as
	// Go's mutex profile does.
	WaitStacks []*analysis.WaitStack
}

// Pprof writes a gzipped profile.proto that `go tool pprof` reads. Each
// sample is one stack in one state of one thread pool, with two values:
// the thread samples, and the blocked time they stand for (each sample in
// state BLOCKED counts the time since the dump, or the native sample,
// before it; an estimate). Waits a JFR
// recording or the kernel measured come as samples of their own (label
// "source": "jfr" or "futex-trace") with two more values,
// contentions (count) and delay (nanoseconds), as in Go's mutex profile
// (`go tool pprof -sample_index=delay`); the other samples have 0 there.
// Without a recording the profile has the first two values only. Labels: "state"
// (the Java thread state), "thread" (the thread name with every run of
// digits written N, i.e. its pool) and "thread_name" (the thread's own
// name, analysis.OtherThreads for the threads past a stack's bound on
// names; absent for a thread without a name); a sample queued on a lock
// also has "lock" (its class) and "resource" (the contention site's ID,
// as contention_sites[].id).
func Pprof(w io.Writer, in PprofInput) error {
	p, err := PprofProfile(in)
	if err != nil {
		return err
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("write pprof profile: %w", err)
	}
	return nil
}

// PprofProfile builds the profile Pprof writes; the OTLP export sends the
// same profile, so the two never disagree.
func PprofProfile(in PprofInput) (*profile.Profile, error) {
	interval := in.Interval
	var comments []string
	if interval <= 0 {
		interval = time.Second
		comments = append(comments, "blocked time assumes 1 s between thread dumps (fewer than two timed dumps)")
	} else {
		comments = append(comments, fmt.Sprintf("blocked time = each BLOCKED sample x the time since the dump (or native sample) before it; %v between dumps on average", interval))
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			{Type: "blocked", Unit: "nanoseconds"},
		},
		DefaultSampleType: "samples",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            interval.Nanoseconds(),
		DurationNanos:     in.Duration.Nanoseconds(),
		Comments:          comments,
	}
	if !in.Start.IsZero() {
		p.TimeNanos = in.Start.UnixNano()
	}
	jfr := len(in.WaitStacks) > 0
	if jfr {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "contentions", Unit: "count"}, &profile.ValueType{Type: "delay", Unit: "nanoseconds"})
	}
	type locKey struct {
		frame string
		at    symbolize.FrameLine
	}
	locs := map[locKey]*profile.Location{}
	funcs := map[locKey]*profile.Function{}
	// A native frame with a source position is a location of its own
	// per line (a function calls from several), of a function with its
	// file.
	locationAt := func(frame string, at symbolize.FrameLine) *profile.Location {
		if l := locs[locKey{frame, at}]; l != nil {
			return l
		}
		fk := locKey{frame: frame, at: symbolize.FrameLine{File: at.File}}
		fn := funcs[fk]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: frame, SystemName: frame, Filename: at.File}
			p.Function = append(p.Function, fn)
			funcs[fk] = fn
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: int64(at.Line)}}}
		p.Location = append(p.Location, l)
		locs[locKey{frame, at}] = l
		return l
	}
	location := func(frame string) *profile.Location { return locationAt(frame, symbolize.FrameLine{}) }
	locks := make(map[string]analysis.LockSummary, len(in.Locks))
	for _, ls := range in.Locks {
		locks[ls.ID] = ls
	}
	for _, st := range in.Stacks {
		// pprof wants the leaf first; folded stacks are root first.
		stack := make([]*profile.Location, len(st.Frames))
		for i, f := range st.Frames {
			var at symbolize.FrameLine
			if i < len(st.Lines) {
				at = st.Lines[i]
			}
			stack[len(st.Frames)-1-i] = locationAt(f, at)
		}
		for _, l := range analysis.SortedLabels(st.ByLabel) {
			n := int64(st.ByLabel[l])
			var blocked int64
			if l.State == "BLOCKED" {
				// The time each sample stood for; the mean interval
				// only where no sample had a time (dump files
				// without one).
				if d, ok := st.Blocked[l]; ok {
					blocked = d.Nanoseconds()
				} else {
					blocked = n * interval.Nanoseconds()
				}
			}
			label := map[string][]string{"state": {l.State}, "thread": {l.Pool}}
			if l.Thread != "" {
				label[PprofThreadNameLabel] = []string{l.Thread}
			}
			if ls, ok := locks[l.Lock]; ok && l.Lock != "" {
				label["lock"] = []string{ls.Class}
				if ls.Site != "" {
					label["resource"] = []string{ls.Site}
				}
			}
			p.Sample = append(p.Sample, &profile.Sample{
				Location: stack,
				Value:    sampleValues(jfr, n, blocked),
				Label:    label,
			})
		}
	}
	addWaitSamples(p, in.WaitStacks, location)
	if len(in.Stacks) == 0 && len(in.WaitStacks) > 0 {
		p.DefaultSampleType = "delay"
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("build pprof profile: %w", err)
	}
	return p, nil
}
