// Package diff compares two runs of one program (a load test before and
// after a change): each run's summary, computed by one Aggregator per run
// or read back from the JSON ctprof wrote, joined resource by resource,
// pool by pool and finding by finding, with the change and its direction.
// It computes the comparison; internal/report draws its HTML page and the
// command (internal/cli/diff.go) prints.
package diff

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// SchemaVersion is the version of the diff document (docs/json.md, "ctprof
// diff"). Fields may be added without a bump; renaming or removing one
// bumps it.
const SchemaVersion = 1

// Document is the comparison of two runs, what every output of ctprof diff
// shows.
type Document struct {
	Schema int     `json:"schema"`
	Before RunInfo `json:"before"`
	After  RunInfo `json:"after"`
	// Figures are the process-wide numbers: throughput, threads, CPU,
	// run-queue wait, context switches, threads per connection, the
	// waiters over all resources and the recordings' wait totals; only
	// those at least one run has.
	Figures []Figure `json:"figures"`
	// Resources are the contention sites of both runs joined by kind,
	// class and wait site (never by address), hottest first.
	Resources []Resource `json:"resources"`
	// Pools are the thread pools of both runs joined by name (digits as
	// N), largest first.
	Pools    []Pool   `json:"pools"`
	Findings Findings `json:"findings"`
	// Notes say what could not be compared, or compares with care.
	Notes []string `json:"notes"`
}

// RunInfo says what one side was.
type RunInfo struct {
	Name string `json:"name"`
	// Kind is "profile" (dumps, .jfr files or a recording, analysed by
	// diff), "summary" (a JSON summary) or "scale" (a scale level).
	Kind            string   `json:"kind"`
	Level           int      `json:"level,omitempty"`
	Samples         int      `json:"samples"`
	Dumps           int      `json:"dumps"`
	DurationSeconds float64  `json:"duration_seconds,omitempty"`
	Threads         int      `json:"threads"`
	Live            bool     `json:"live"`
	JFR             bool     `json:"jfr"`
	Stacks          bool     `json:"stacks"`
	Throughput      *float64 `json:"throughput,omitempty"`
	// Warnings are the run's own warnings (damaged input and the like).
	Warnings []string `json:"warnings"`
}

// Change is one figure in both runs. Before or After is null when that run
// does not have the figure (a dump has no CPU rate). Change is After -
// Before and ChangePercent its share of Before (absent when Before is 0).
// Direction is "up", "down" or "same"; Verdict "better" or "worse" where
// the figure has a good direction (fewer waiters, more throughput), empty
// otherwise.
type Change struct {
	Before        *float64 `json:"before"`
	After         *float64 `json:"after"`
	Change        *float64 `json:"change,omitempty"`
	ChangePercent *float64 `json:"change_percent,omitempty"`
	Direction     string   `json:"direction,omitempty"`
	Verdict       string   `json:"verdict,omitempty"`
	// NoVerdict says why a figure with a good direction has no verdict:
	// one side cannot measure it (its value is then null), or the runs'
	// totals differ with their lengths.
	NoVerdict string `json:"no_verdict,omitempty"`
}

// minTimedSamples is how many samples (dumps, for what dumps count) a run
// needs for its thread-seconds to be a measurement: one dump stands for
// no time, and two for one interval at most.
const minTimedSamples = 3

// secondsUnmeasured says why a run's thread-seconds are not a measurement,
// "" when they are: too few dumps (what a JVM's resources count), or too
// few /proc samples (a native target's).
func secondsUnmeasured(s *analysis.Summary) string {
	if s.Target != nil && s.Target.Kind == "native" {
		if s.Samples < minTimedSamples {
			return plural(s.Samples, "sample")
		}
		return ""
	}
	if s.Dumps > 0 && s.Dumps < minTimedSamples {
		why := plural(s.Dumps, "dump")
		if s.Target != nil && s.Samples > s.Dumps {
			why += fmt.Sprintf(" in %d samples (the pause budget allowed no more)", s.Samples)
		}
		return why
	}
	return ""
}

// unmeasured drops the side of a thread-seconds change that is not a
// measurement, and says why there is no verdict.
func unmeasured(c Change, whyBefore, whyAfter string) Change {
	if whyBefore == "" && whyAfter == "" {
		return c
	}
	var parts []string
	if whyBefore != "" {
		c.Before = nil
		parts = append(parts, "before: "+whyBefore)
	}
	if whyAfter != "" {
		c.After = nil
		parts = append(parts, "after: "+whyAfter)
	}
	c.Change, c.ChangePercent, c.Direction, c.Verdict = nil, nil, "", ""
	c.NoVerdict = strings.Join(parts, "; ") + ": thread-seconds not measured"
	return c
}

// lengthsDiffer says why the runs' recorded totals are not comparable
// (they lasted more than 10 % apart), "" when they are.
func lengthsDiffer(b, a *analysis.Summary) string {
	db, da := b.DurationSeconds, a.DurationSeconds
	if db > 0 && da > 0 && math.Abs(db-da) > 0.1*math.Max(db, da) {
		return fmt.Sprintf("runs of %.1f s and %.1f s: totals grow with a run's length", db, da)
	}
	return ""
}

// noTotalsVerdict takes the verdict off a recorded total of runs of
// different lengths.
func noTotalsVerdict(c Change, why string) Change {
	if why != "" && c.Verdict != "" {
		c.Verdict, c.NoVerdict = "", why
	}
	return c
}

// Figure is a process-wide figure.
type Figure struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	Change
}

// Count says the figure counts things (threads, connections, waits): it
// prints without decimals.
func (fg Figure) Count() bool {
	switch fg.ID {
	case "threads", "connections", "jfr_events":
		return true
	}
	return false
}

// Resource is one contention site in both runs.
type Resource struct {
	// ID is the resource's key in both summaries' contention_sites:
	// "<kind>|<class>|<Class.method>"; native futexes "futex|<symbol>".
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Class     string `json:"class"`
	WaitFrame string `json:"wait_frame"`
	// Status is "both", "appeared" (no thread waited here before) or
	// "gone" (none waits here after).
	Status               string  `json:"status"`
	AvgWaiters           Change  `json:"avg_waiters"`
	PeakWaiters          Change  `json:"peak_waiters"`
	BlockedShare         Change  `json:"blocked_share"`
	BlockedThreadSeconds Change  `json:"blocked_thread_seconds"`
	JFREvents            *Change `json:"jfr_events,omitempty"`
	JFRWaitSeconds       *Change `json:"jfr_wait_seconds,omitempty"`
	JFRP99Ms             *Change `json:"jfr_p99_ms,omitempty"`
}

// Pool is one thread pool in both runs.
type Pool struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Threads Change `json:"threads"`
	// Live runs' rates; absent when neither run was live.
	CPUPercent           *Change `json:"cpu_percent,omitempty"`
	VoluntaryPerSecond   *Change `json:"voluntary_per_second,omitempty"`
	InvoluntaryPerSecond *Change `json:"involuntary_per_second,omitempty"`
}

// Findings are the two runs' findings joined by what they are about.
type Findings struct {
	Appeared []analysis.Finding `json:"appeared"`
	Gone     []analysis.Finding `json:"gone"`
	Kept     []KeptFinding      `json:"kept"`
}

// KeptFinding is a finding both runs have, in each run's words.
type KeptFinding struct {
	Kind   string           `json:"kind"`
	Before analysis.Finding `json:"before"`
	After  analysis.Finding `json:"after"`
	// Severity is "same", "raised" or "lowered".
	Severity string `json:"severity"`
}

// Side is one run of a comparison: its summary, and its folded stacks when
// the input had stacks (a JSON summary has none). internal/diffinput reads
// it from what the user names.
type Side struct {
	// Name is the input as the user gave it ("standard input" for -).
	Name string
	// Kind says what the input was: "profile" (dumps, .jfr files or a
	// recording, analysed by diff), "summary" (a JSON summary ctprof
	// wrote) or "scale" (a ctprof scale document, one of its levels).
	Kind    string
	Summary *analysis.Summary
	Stacks  []*analysis.FoldedStack
	// Throughput is the run's throughput when the input says it (a scale
	// level); nil otherwise.
	Throughput *float64
	// Level is the scale level taken, for Kind "scale".
	Level int
}

// Options are what the user adds to the runs.
type Options struct {
	// BeforeThroughput and AfterThroughput override the runs' own
	// (a scale level's); nil leaves them.
	BeforeThroughput, AfterThroughput *float64
}

// Compare joins the two runs.
func Compare(before, after *Side, opt Options) *Document {
	b, a := before.Summary, after.Summary
	doc := &Document{Schema: SchemaVersion, Before: runInfo(before, opt.BeforeThroughput), After: runInfo(after, opt.AfterThroughput)}
	doc.Figures = figures(doc, b, a)
	doc.Resources = resources(b, a)
	doc.Pools = pools(b, a)
	doc.Findings = findings(b.Findings, a.Findings)
	doc.Notes = notes(doc, b, a)
	return doc
}

func runInfo(s *Side, throughput *float64) RunInfo {
	sum := s.Summary
	ri := RunInfo{
		Name: s.Name, Kind: s.Kind, Level: s.Level, Samples: sum.Samples, Dumps: sum.Dumps,
		DurationSeconds: sum.DurationSeconds, Threads: sum.Threads, Live: sum.Target != nil,
		JFR: sum.JFR != nil, Stacks: len(s.Stacks) > 0, Throughput: s.Throughput, Warnings: sum.Warnings,
	}
	if throughput != nil {
		ri.Throughput = throughput
	}
	if ri.Warnings == nil {
		ri.Warnings = []string{}
	}
	return ri
}

// Preferred directions of figures.
const (
	lowerBetter  = -1
	noPreference = 0
	higherBetter = 1
)

// change builds a Change; nil before or after means the run lacks it.
func change(before, after *float64, pref int) Change {
	c := Change{Before: round(before), After: round(after)}
	if before == nil || after == nil {
		return c
	}
	d := *after - *before
	c.Change = round(&d)
	if *before != 0 {
		p := 100 * d / math.Abs(*before)
		c.ChangePercent = roundTo(p, 1)
	}
	switch {
	case math.Abs(d) <= 1e-9*math.Max(math.Abs(*before), math.Abs(*after)) || math.Abs(d) < 1e-9:
		c.Direction = "same"
	case d > 0:
		c.Direction = "up"
	default:
		c.Direction = "down"
	}
	if c.Direction != "same" && pref != noPreference {
		if (d > 0) == (pref == higherBetter) {
			c.Verdict = "better"
		} else {
			c.Verdict = "worse"
		}
	}
	return c
}

func f(v float64) *float64 { return &v }

func fi(v int) *float64 { return f(float64(v)) }

// round keeps six decimals: enough for any figure here, and the JSON does
// not print binary noise (0.30000000000000004).
func round(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return roundTo(*p, 6)
}

func roundTo(v float64, places int) *float64 {
	m := math.Pow(10, float64(places))
	r := math.Round(v*m) / m
	if r == 0 {
		r = 0 // no "-0" in the JSON
	}
	return &r
}

// figures are the process-wide figures, in the order a reader asks about
// them: did it get faster, did the waiting go, what did it cost.
func figures(doc *Document, b, a *analysis.Summary) []Figure {
	var out []Figure
	add := func(id, title, unit string, pref int, get func(*analysis.Summary) *float64) {
		bv, av := get(b), get(a)
		if bv == nil && av == nil {
			return
		}
		c := change(bv, av, pref)
		switch id {
		case "blocked_thread_seconds":
			c = unmeasured(c, secondsUnmeasured(b), secondsUnmeasured(a))
		case "jfr_wait_seconds", "jfr_events":
			c = noTotalsVerdict(c, lengthsDiffer(b, a))
		}
		out = append(out, Figure{ID: id, Title: title, Unit: unit, Change: c})
	}
	if doc.Before.Throughput != nil || doc.After.Throughput != nil {
		out = append(out, Figure{ID: "throughput", Title: "throughput", Change: change(doc.Before.Throughput, doc.After.Throughput, higherBetter)})
	}
	withDumps := func(get func(*analysis.Summary) *float64) func(*analysis.Summary) *float64 {
		return func(s *analysis.Summary) *float64 {
			if s.Dumps == 0 {
				return nil
			}
			return get(s)
		}
	}
	add("waiters_avg", "threads waiting on a resource, on average", "threads", lowerBetter, withDumps(func(s *analysis.Summary) *float64 {
		t := 0.0
		for _, r := range resourcesOf(s) {
			t += r.avg
		}
		return f(t)
	}))
	add("blocked_thread_seconds", "thread-seconds spent waiting on resources", "s", lowerBetter, withDumps(func(s *analysis.Summary) *float64 {
		t := 0.0
		for _, r := range resourcesOf(s) {
			t += r.seconds
		}
		return f(t)
	}))
	add("jfr_wait_seconds", "JFR: time threads waited (recorded waits)", "s", lowerBetter, func(s *analysis.Summary) *float64 {
		if s.JFR == nil {
			return nil
		}
		return f(s.JFR.WaitSeconds)
	})
	add("jfr_events", "JFR: waits recorded", "waits", lowerBetter, func(s *analysis.Summary) *float64 {
		if s.JFR == nil {
			return nil
		}
		return f(float64(s.JFR.Events))
	})
	add("threads", "threads (last sample)", "threads", noPreference, func(s *analysis.Summary) *float64 { return fi(s.Threads) })
	live := func(get func(*analysis.Summary) *float64) func(*analysis.Summary) *float64 {
		return func(s *analysis.Summary) *float64 {
			if s.Target == nil {
				return nil
			}
			return get(s)
		}
	}
	add("cpu_percent", "CPU (100 = one core)", "%", noPreference, live(func(s *analysis.Summary) *float64 { return f(s.CPUPercent) }))
	add("cpu_share_of_allowed", "share of the allowed CPUs used", "share", noPreference, live(func(s *analysis.Summary) *float64 {
		if s.CPUUse == nil {
			return nil
		}
		return f(s.CPUUse.ShareOfAllowed)
	}))
	add("run_queue_wait_share", "run-queue wait, share of runnable time", "share", lowerBetter, live(func(s *analysis.Summary) *float64 {
		if s.Scheduling != nil {
			return f(s.Scheduling.RunQueueWaitShare)
		}
		return f(s.RunQueueWaitShare)
	}))
	add("waiting_for_cpu_avg", "threads waiting for a CPU, on average", "threads", lowerBetter, live(func(s *analysis.Summary) *float64 {
		if s.Scheduling == nil {
			return nil
		}
		return f(s.Scheduling.WaitingForCPUAvg)
	}))
	add("runnable_avg", "threads runnable, on average", "threads", noPreference, live(func(s *analysis.Summary) *float64 {
		if s.Scheduling == nil {
			return nil
		}
		return f(s.Scheduling.RunnableAvg)
	}))
	// Voluntary switches are waits and I/O alike, so neither direction is
	// better; involuntary ones are preemption, fewer is better.
	add("voluntary_per_second", "voluntary context switches per second", "/s", noPreference, live(func(s *analysis.Summary) *float64 {
		if s.ContextSwitches == nil {
			return nil
		}
		return f(s.ContextSwitches.VoluntaryPerSecond)
	}))
	add("involuntary_per_second", "involuntary context switches per second", "/s", lowerBetter, live(func(s *analysis.Summary) *float64 {
		if s.ContextSwitches == nil {
			return nil
		}
		return f(s.ContextSwitches.InvoluntaryPerSecond)
	}))
	add("connections", "established connections (last sample)", "", noPreference, func(s *analysis.Summary) *float64 {
		if s.Connections == nil {
			return nil
		}
		return fi(s.Connections.Established)
	})
	add("threads_per_connection", "threads per connection", "", lowerBetter, func(s *analysis.Summary) *float64 {
		if s.ThreadsPerConnection == nil {
			return nil
		}
		return f(s.ThreadsPerConnection.Ratio)
	})
	add("threads_per_connection_slope", "threads added per connection", "", lowerBetter, func(s *analysis.Summary) *float64 {
		if s.ThreadsPerConnection == nil || s.ThreadsPerConnection.Slope == nil {
			return nil
		}
		return f(*s.ThreadsPerConnection.Slope)
	})
	return out
}

// resource is one run's figures of a resource.
type resource struct {
	id, kind, class, frame string
	avg, share, seconds    float64
	peak                   int
	jfr                    *analysis.JFRResourceWaits
	// p99 is the recorded p99 of its busiest instance (the one with the
	// most recorded waits): percentiles of instances do not add up, and
	// a resource is mostly one instance.
	p99     *float64
	jfrMost int64
}

// resourcesOf lists a run's resources by key: its contention sites (native
// ones included), and the futex locks no native resource counts (a
// summary from before native resources, a lock whose waiters had no
// stack) by symbol (a futex's address differs from run to run).
func resourcesOf(s *analysis.Summary) map[string]*resource {
	out := map[string]*resource{}
	for _, cs := range s.ContentionSites {
		id := NormalizeFrame(cs.ID)
		if r := out[id]; r != nil {
			// Two sites that differ only in what the JVM numbers per run
			// are one resource.
			r.avg += cs.AvgWaiters
			r.seconds += cs.BlockedThreadSeconds
			r.peak = max(r.peak, cs.Waiters)
			r.share = math.Max(r.share, cs.BlockedShare)
			continue
		}
		out[id] = &resource{id: id, kind: cs.Kind, class: cs.Class, frame: cs.WaitFrame,
			avg: cs.AvgWaiters, share: cs.BlockedShare, seconds: cs.BlockedThreadSeconds, peak: cs.Waiters, jfr: cs.JFR}
	}
	sites := make(map[string]bool, len(s.ContentionSites))
	for _, cs := range s.ContentionSites {
		sites[cs.ID] = true
	}
	for _, l := range s.Locks {
		if l.Kind == "futex" && l.Site != "" && sites[l.Site] {
			continue // counted at its native resource
		}
		if l.Kind == "futex" {
			id := "futex|" + l.Class
			r := out[id]
			if r == nil {
				r = &resource{id: id, kind: "futex", class: l.Class, frame: l.Module}
				out[id] = r
			}
			r.avg += l.AvgWaiters
			r.seconds += l.BlockedThreadSeconds
			r.peak = max(r.peak, l.Waiters)
			r.share = math.Max(r.share, l.BlockedShare)
			continue
		}
		if l.JFR == nil {
			continue
		}
		r := out[NormalizeFrame(l.Site)]
		if r == nil || l.JFR.Events <= r.jfrMost {
			continue
		}
		r.jfrMost = l.JFR.Events
		r.p99 = f(l.JFR.P99Ms)
	}
	return out
}

func resources(b, a *analysis.Summary) []Resource {
	rb, ra := resourcesOf(b), resourcesOf(a)
	keys := map[string]bool{}
	for k := range rb {
		keys[k] = true
	}
	for k := range ra {
		keys[k] = true
	}
	// A run without dumps (a .jfr file without thread dumps) has no
	// waiters to count: its side of those figures is unknown, not 0.
	counted := func(s *analysis.Summary, r *resource, get func(*resource) float64) *float64 {
		if r != nil {
			return f(get(r))
		}
		if s.Dumps == 0 && s.Target == nil {
			return nil
		}
		return f(0)
	}
	recorded := func(s *analysis.Summary, r *resource, get func(*resource) *float64) *float64 {
		if s.JFR == nil {
			return nil
		}
		if r == nil || r.jfr == nil {
			return f(0)
		}
		return get(r)
	}
	out := make([]Resource, 0, len(keys))
	for k := range keys {
		x, y := rb[k], ra[k]
		ref := y
		if ref == nil {
			ref = x
		}
		res := Resource{ID: k, Kind: ref.kind, Class: ref.class, WaitFrame: ref.frame, Status: "both"}
		switch {
		case x == nil:
			res.Status = "appeared"
		case y == nil:
			res.Status = "gone"
		}
		pair := func(get func(*resource) float64) Change {
			return change(counted(b, x, get), counted(a, y, get), lowerBetter)
		}
		res.AvgWaiters = pair(func(r *resource) float64 { return r.avg })
		res.PeakWaiters = pair(func(r *resource) float64 { return float64(r.peak) })
		res.BlockedShare = pair(func(r *resource) float64 { return r.share })
		res.BlockedThreadSeconds = unmeasured(pair(func(r *resource) float64 { return r.seconds }), secondsUnmeasured(b), secondsUnmeasured(a))
		if b.JFR != nil || a.JFR != nil {
			jpair := func(get func(*resource) *float64) *Change {
				c := change(recorded(b, x, get), recorded(a, y, get), lowerBetter)
				if c.Before == nil && c.After == nil {
					return nil
				}
				return &c
			}
			totals := lengthsDiffer(b, a)
			jtotal := func(get func(*resource) *float64) *Change {
				c := jpair(get)
				if c != nil {
					*c = noTotalsVerdict(*c, totals)
				}
				return c
			}
			res.JFREvents = jtotal(func(r *resource) *float64 { return f(float64(r.jfr.Events)) })
			res.JFRWaitSeconds = jtotal(func(r *resource) *float64 { return f(r.jfr.WaitSeconds) })
			res.JFRP99Ms = jpair(func(r *resource) *float64 {
				if r.p99 == nil {
					return f(0)
				}
				return r.p99
			})
		}
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool {
		hi, hj := heat(out[i]), heat(out[j])
		if hi != hj {
			return hi > hj
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// heat orders resources: the most waiters on average in either run, then
// the most recorded wait time.
func heat(r Resource) float64 {
	h := math.Max(val(r.AvgWaiters.Before), val(r.AvgWaiters.After))
	if r.JFRWaitSeconds != nil {
		h += 1e-6 * math.Max(val(r.JFRWaitSeconds.Before), val(r.JFRWaitSeconds.After))
	}
	return h
}

func val(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func pools(b, a *analysis.Summary) []Pool {
	pb, pa := map[string]analysis.PoolSummary{}, map[string]analysis.PoolSummary{}
	var names []string
	for _, p := range b.Pools {
		pb[p.Name] = p
		names = append(names, p.Name)
	}
	for _, p := range a.Pools {
		if _, ok := pb[p.Name]; !ok {
			names = append(names, p.Name)
		}
		pa[p.Name] = p
	}
	live := b.Target != nil || a.Target != nil
	out := make([]Pool, 0, len(names))
	for _, n := range names {
		x, inB := pb[n]
		y, inA := pa[n]
		p := Pool{Name: n, Status: "both"}
		switch {
		case !inB:
			p.Status = "appeared"
		case !inA:
			p.Status = "gone"
		}
		// A pool a run does not list had no thread in its last dump.
		p.Threads = change(fi(x.Threads), fi(y.Threads), noPreference)
		if live {
			rate := func(s *analysis.Summary, v float64) *float64 {
				if s.Target == nil {
					return nil
				}
				return f(v)
			}
			c := change(rate(b, x.CPUPercent), rate(a, y.CPUPercent), noPreference)
			v := change(rate(b, x.VoluntaryPerSecond), rate(a, y.VoluntaryPerSecond), noPreference)
			i := change(rate(b, x.InvoluntaryPerSecond), rate(a, y.InvoluntaryPerSecond), noPreference)
			p.CPUPercent, p.VoluntaryPerSecond, p.InvoluntaryPerSecond = &c, &v, &i
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		mi := math.Max(val(out[i].Threads.Before), val(out[i].Threads.After))
		mj := math.Max(val(out[j].Threads.Before), val(out[j].Threads.After))
		if mi != mj {
			return mi > mj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

var severityRank = map[string]int{"info": 0, "warning": 1, "critical": 2}

func findings(b, a []analysis.Finding) Findings {
	out := Findings{Appeared: []analysis.Finding{}, Gone: []analysis.Finding{}, Kept: []KeptFinding{}}
	after := map[string][]int{}
	for i, fd := range a {
		k := analysis.FindingKey(fd)
		after[k] = append(after[k], i)
	}
	used := make([]bool, len(a))
	for _, fd := range b {
		k := analysis.FindingKey(fd)
		if l := after[k]; len(l) > 0 {
			j := l[0]
			after[k] = l[1:]
			used[j] = true
			sev := "same"
			switch d := severityRank[a[j].Severity] - severityRank[fd.Severity]; {
			case d > 0:
				sev = "raised"
			case d < 0:
				sev = "lowered"
			}
			out.Kept = append(out.Kept, KeptFinding{Kind: fd.Kind, Before: fd, After: a[j], Severity: sev})
			continue
		}
		out.Gone = append(out.Gone, fd)
	}
	for j, fd := range a {
		if !used[j] {
			out.Appeared = append(out.Appeared, fd)
		}
	}
	return out
}

func notes(doc *Document, b, a *analysis.Summary) []string {
	out := []string{}
	if doc.Before.Live != doc.After.Live {
		out = append(out, "only one run is a live run or recording: CPU, run-queue wait and context switches have one side")
	}
	if !doc.Before.Stacks || !doc.After.Stacks {
		var which []string
		if !doc.Before.Stacks {
			which = append(which, "before")
		}
		if !doc.After.Stacks {
			which = append(which, "after")
		}
		out = append(out, fmt.Sprintf("no stacks in the %s run (a JSON summary keeps none, a native process has none): no differential flame graph", strings.Join(which, " and ")))
	}
	db, da := b.DurationSeconds, a.DurationSeconds
	if db > 0 && da > 0 && math.Abs(db-da) > 0.2*math.Max(db, da) {
		out = append(out, fmt.Sprintf("the runs lasted %.1f s and %.1f s: thread-seconds and recorded totals grow with a run's length, average waiters and shares do not", db, da))
	}
	if (b.JFR == nil) != (a.JFR == nil) {
		out = append(out, "only one run has a JFR recording: recorded waits have one side")
	}
	for _, side := range []struct {
		name string
		s    *analysis.Summary
	}{{"before", b}, {"after", a}} {
		if why := secondsUnmeasured(side.s); why != "" {
			out = append(out, fmt.Sprintf("%s: %s: thread-seconds not measured (they need %d); compare average waiters and shares", side.name, why, minTimedSamples))
		}
	}
	if why := lengthsDiffer(b, a); why != "" && b.JFR != nil && a.JFR != nil {
		out = append(out, "JFR: "+why+": recorded waits and wait time have no verdict")
	}
	return out
}

var (
	hiddenClass   = regexp.MustCompile(`\$\$Lambda(\$[0-9]+)?/0x[0-9a-fA-F]+`)
	lambdaIndex   = regexp.MustCompile(`\$\$Lambda\$[0-9]+`)
	generatedStub = regexp.MustCompile(`(Generated(?:Serialization)?(?:Method|Constructor)Accessor|\$Proxy)[0-9]+`)
)

// NormalizeFrame takes out of a frame or class name what the JVM numbers
// anew in every run: a lambda's hidden class address and index
// (Foo$$Lambda$14/0x0000000800c03000.run and Foo$$Lambda/0x….run of JDK
// 21+ are Foo$$Lambda.run), and the numbers of reflection accessors and
// proxies. Two runs of one program then have the same frames.
func NormalizeFrame(s string) string {
	if !strings.Contains(s, "$$Lambda") && !strings.Contains(s, "Accessor") && !strings.Contains(s, "$Proxy") {
		return s
	}
	s = hiddenClass.ReplaceAllString(s, "$$$$Lambda")
	s = lambdaIndex.ReplaceAllString(s, "$$$$Lambda")
	return generatedStub.ReplaceAllString(s, "${1}")
}
