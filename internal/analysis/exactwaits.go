package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Exact futex waits: what the kernel counted of a native target's futex
// waits (Snapshot.FutexTrace, attach as root), beside what the samples
// saw. A sample sees a waiter only while it waits at the sampling
// instant, so a lock whose waits last microseconds is nearly invisible to
// samples; the kernel counts every wait.

// ExactWaits is what the kernel counted of one futex lock's waits.
type ExactWaits struct {
	// Waits estimates the waits (calls that slept) over the run: exact
	// counts of the threads' blocking futex calls, shared among the
	// futexes by the calls timed. Timed is how many were timed.
	Waits int64 `json:"waits"`
	Timed int64 `json:"timed"`
	// PerSecond is Waits over the time traced.
	PerSecond float64 `json:"waits_per_second"`
	// WaitSeconds estimates the thread-seconds spent waiting: the timed
	// waits' total scaled to Waits. AvgWaiters is that over the time
	// traced, the average number of threads waiting.
	WaitSeconds float64 `json:"wait_seconds"`
	AvgWaiters  float64 `json:"avg_waiters"`
	// P50Ms, P99Ms and MaxMs are of the timed waits (the percentiles
	// from a log histogram, within about 5 %; the maximum exact).
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// TimedOut counts the timed waits that ended by their timeout.
	TimedOut int64 `json:"timed_out"`
	// Sites are where the waiters waited, from the stacks the kernel
	// copied at some waits (their first frames outside the module they
	// block in), most sightings first.
	Sites []FrameCount `json:"sites"`
}

// ExactWaitsSummary is the run's futex tracing as a whole.
type ExactWaitsSummary struct {
	// Seconds is the time traced; Calls the blocking futex calls of the
	// target's threads in it (Exact: counted by the kernel, not scaled
	// from sampling windows); TimedShare the share of them timed.
	Seconds    float64 `json:"seconds"`
	Calls      int64   `json:"calls"`
	Exact      bool    `json:"exact"`
	TimedShare float64 `json:"timed_share"`
	// Lost are records the kernel dropped (calls counted, not timed).
	Lost uint64 `json:"lost"`
	// CostSeconds is the CPU time ctprof spent reading the records;
	// CostShare that over Seconds (of one CPU).
	CostSeconds float64 `json:"cost_seconds"`
	CostShare   float64 `json:"cost_share"`
}

// exactAgg is what one futex lock gathers from the kernel's counts.
type exactAgg struct {
	waits    float64
	timed    int64
	timedOut int64
	// waitSeconds is the timed waits' total, scaled batch by batch.
	waitSeconds float64
	hist        logHist
	sites       boundedCounts
}

// exactRun is the run's tracing totals.
type exactRun struct {
	elapsed time.Duration
	calls   float64
	exact   bool
	traced  uint64
	lost    uint64
	cost    time.Duration
	// stacks are the waiters' stacks the kernel copied, each weighed by
	// the waits and wait time it stands for (its futex's, shared among
	// its stacks of the batch), for pprof's contentions and delay.
	stacks map[string]*exactStack
}

// exactStack is one native wait stack's weight.
type exactStack struct {
	frames []string // outermost first
	waits  float64
	nanos  float64
	byLock map[string]float64
}

// addFutexTrace folds one batch of the kernel's futex counts in (pid is
// the target's, whose stacks the tracer copied): a lock's
// (or an unknown protocol's) waits into the lock table, under the same
// futex as the samples' sightings; a condition's are idle waiting and
// count only in the totals.
func (a *Aggregator) addFutexTrace(ft *snapshot.FutexTrace, pid int) {
	if ft == nil {
		return
	}
	if a.exact == nil {
		a.exact = &exactRun{exact: true}
	}
	r := a.exact
	r.elapsed += ft.Elapsed
	r.calls += ft.Calls
	r.exact = r.exact && ft.Exact
	r.traced += ft.Traced
	r.lost += ft.Lost
	r.cost += ft.Cost
	for i := range ft.Futexes {
		f := &ft.Futexes[i]
		if f.Waits > 0 {
			a.addExactToResources(f, pid)
		}
		if f.Kind == snapshot.FutexCondition || f.Waits <= 0 || a.native.gateWords[f.Address] {
			continue // idle waits: a condition's, a gate's (openGates)
		}
		la := a.futexLock(f.Address, f.Location, f.Kind)
		if la.exact == nil {
			la.exact = &exactAgg{}
		}
		e := la.exact
		e.waits += f.Waits
		e.timed += int64(f.Traced)
		e.timedOut += int64(f.TimedOut)
		if f.Traced > 0 {
			e.waitSeconds += f.Total.Seconds() * f.Waits / float64(f.Traced)
		}
		for _, d := range f.Durations {
			e.hist.add(d)
		}
		e.hist.max = max(e.hist.max, f.Max)
		for _, st := range f.Stacks {
			e.sites.inc(nativeWaitSite(st), 1)
		}
		if n := float64(len(f.Stacks)); n > 0 && f.Traced > 0 {
			waits, nanos := f.Waits/n, float64(f.Total)*f.Waits/float64(f.Traced)/n
			for _, st := range f.Stacks {
				a.addExactStack(st, la.id, waits, nanos)
			}
		}
	}
}

// futexLock is the lock table's entry of the futex at addr, named by its
// location, made when missing; kind is what the waits said of it.
func (a *Aggregator) futexLock(addr uint64, loc symbolize.Location, kind snapshot.FutexKind) *lockAgg {
	address := fmt.Sprintf("0x%x", addr)
	class := futexClass(loc)
	la := a.lock(lockKey("futex", "", address), "futex", class)
	if loc.Module != "" {
		la.class, la.module = class, loc.Module
		if loc.Symbol != "" {
			la.symbol = strPtr(loc.String())
		}
	}
	if la.address == "" {
		la.noteAddress(address)
	}
	if la.futexKind == "" || kind != snapshot.FutexUnknown {
		la.futexKind = string(kind)
	}
	if la.futex == nil {
		la.futex = &futexAgg{}
	}
	return la
}

// exactSummary reports a lock's exact waits; nil without any.
func (a *Aggregator) exactSummary(la *lockAgg) *ExactWaits {
	e := la.exact
	if e == nil || a.exact == nil {
		return nil
	}
	secs := a.exact.elapsed.Seconds()
	x := &ExactWaits{
		Waits: int64(e.waits + 0.5), Timed: e.timed, TimedOut: e.timedOut,
		WaitSeconds: round6(e.waitSeconds),
		P50Ms:       ms(e.hist.quantile(0.5)), P99Ms: ms(e.hist.quantile(0.99)), MaxMs: ms(e.hist.max),
		Sites: e.sites.top(5),
	}
	if secs > 0 {
		x.PerSecond = round3(e.waits / secs)
		x.AvgWaiters = round3(e.waitSeconds / secs)
	}
	return x
}

// exactRunSummary reports the run's tracing; nil when the kernel counted
// nothing (not root, or not asked).
func (a *Aggregator) exactRunSummary() *ExactWaitsSummary {
	r := a.exact
	if r == nil {
		return nil
	}
	s := &ExactWaitsSummary{
		Seconds: round3(r.elapsed.Seconds()), Calls: int64(r.calls + 0.5), Exact: r.exact, Lost: r.lost,
		CostSeconds: round6(r.cost.Seconds()), TimedShare: 1,
	}
	if r.calls > 0 {
		s.TimedShare = round3(min(float64(r.traced)/r.calls, 1))
	}
	if r.elapsed > 0 {
		s.CostShare = round6(r.cost.Seconds() / r.elapsed.Seconds())
	}
	return s
}

// A lock the kernel counted is a hotspot when its waits keep threads
// waiting a measurable share of the time (exactHotWaiters threads on
// average) or come thousands of times a second (each wait is two context
// switches and a trip through the scheduler, whatever its length).
const (
	exactHotWaiters   = 0.05
	exactHotPerSecond = 1000
	// exactCriticalWaiters: a thread's worth of time lost to the lock.
	exactCriticalWaiters = 1
)

// exactHot says the kernel's counts make a lock a hotspot.
func exactHot(x *ExactWaits) bool {
	return x != nil && (x.AvgWaiters >= exactHotWaiters || x.PerSecond >= exactHotPerSecond)
}

// exactEvidence says in one line what the kernel counted of a lock.
func exactEvidence(x *ExactWaits) string {
	return fmt.Sprintf("the kernel counted %s waits (%.0f a second; %s of them timed): p50 %s ms, p99 %s ms, max %s ms; %s of waiting in all, %.2f threads waiting on average",
		fmtCount(x.Waits), x.PerSecond, fmtCount(x.Timed), fmtMs(x.P50Ms), fmtMs(x.P99Ms), fmtMs(x.MaxMs), fmtSeconds(x.WaitSeconds), x.AvgWaiters)
}

// fmtCount writes a count with thousands separated: 41,234.
func fmtCount(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// exactFutexFinding words the finding for a futex lock whose waits the
// kernel counted and the samples barely saw: short, frequent waits.
func exactFutexFinding(l LockSummary, s *Summary) Finding {
	x := l.Exact
	name, where := futexSubject(l)
	sev := SeverityWarning
	if x.AvgWaiters >= exactCriticalWaiters {
		sev = SeverityCritical
	}
	seen := "no sample saw a waiter"
	if l.DumpsSeen > 0 {
		seen = fmt.Sprintf("the samples saw waiters in %s of %d", plural(l.DumpsSeen, "sample"), s.Samples)
	}
	summary := fmt.Sprintf("Threads waited on %s%s %.0f times a second, %s ms each at the median (the kernel counted every wait: %s of waiting in all, %.2f threads waiting on average; %s).",
		name, where, x.PerSecond, fmtMs(x.P50Ms), fmtSeconds(x.WaitSeconds), x.AvgWaiters, seen)
	ev := []string{exactEvidence(x)}
	if sites := waitSitesClause(x.Sites); sites != "" {
		ev = append(ev, "where the waiters wait (their own code, from the stacks the kernel copied at some waits), by waits: "+sites)
	}
	if h := l.Holder; h != nil && h.TID != 0 {
		ev = append(ev, fmt.Sprintf("held by %q (tid %d), %s, at the sample with the most waiters", h.Thread, h.TID, h.Runs))
	}
	next := "Each wait is a sleep and a wake-up: shorten the critical section or take the lock less often (batch the work, or give each thread its own)."
	if l.WaitFrame != nil {
		next = "Each wait is a sleep and a wake-up: shorten the critical section entered at " + *l.WaitFrame + ", or take the lock less often (batch the work, or give each thread its own)."
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Subject:  LockName(l),
		Severity: sev,
		Summary:  summary,
		Evidence: ev,
		NextStep: next,
		impact:   1e6 + 1000*x.AvgWaiters + x.PerSecond/1000,
	}
}

// ExactWaitsLine says in one line what the kernel counted over the run.
func ExactWaitsLine(x *ExactWaitsSummary) string {
	if x.Calls == 0 {
		return fmt.Sprintf("exact futex waits: the kernel counted no blocking futex call in %s; ctprof's cost %.2f%% of a CPU", fmtSeconds(x.Seconds), 100*x.CostShare)
	}
	how := "counted by the kernel"
	if !x.Exact {
		how = "estimated from the kernel's sampling windows"
	}
	line := fmt.Sprintf("exact futex waits: %s blocking futex calls in %s, %s; %.0f%% of them timed; ctprof's cost %.2f%% of a CPU",
		fmtCount(x.Calls), fmtSeconds(x.Seconds), how, 100*x.TimedShare, 100*x.CostShare)
	if x.Lost > 0 {
		line += fmt.Sprintf("; %s records lost (counted, not timed)", fmtCount(int64(x.Lost)))
	}
	return line
}

// ExactLockLine says in one line what the kernel counted of one lock.
func ExactLockLine(x *ExactWaits) string {
	return fmt.Sprintf("%s waits (%.0f/s), p50 %s ms, p99 %s ms, max %s ms; %s waiting in all, %.2f threads waiting on average",
		fmtCount(x.Waits), x.PerSecond, fmtMs(x.P50Ms), fmtMs(x.P99Ms), fmtMs(x.MaxMs), fmtSeconds(x.WaitSeconds), x.AvgWaiters)
}

// addExactStack weighs one copied wait stack, bounded like the dumps'
// stacks: past the table's size new stacks go to one entry.
func (a *Aggregator) addExactStack(st []symbolize.StackFrame, lockID string, waits, nanos float64) {
	r := a.exact
	if r.stacks == nil {
		r.stacks = map[string]*exactStack{}
	}
	names := nativeStackNames(st)
	key := strings.Join(names, ";")
	es := r.stacks[key]
	if es == nil {
		if len(r.stacks) >= a.opts.MaxStacks {
			key, names = OtherStacks, []string{OtherStacks}
			es = r.stacks[key]
		}
		if es == nil {
			es = &exactStack{frames: names, byLock: map[string]float64{}}
			r.stacks[key] = es
		}
	}
	es.waits += waits
	es.nanos += nanos
	if _, ok := es.byLock[lockID]; ok || len(es.byLock) < maxWaitStackLocks {
		es.byLock[lockID] += nanos
	}
}

// exactWaitStacks are the copied wait stacks as WaitStacks.
func (a *Aggregator) exactWaitStacks() []*WaitStack {
	if a.exact == nil {
		return nil
	}
	out := make([]*WaitStack, 0, len(a.exact.stacks))
	for _, es := range a.exact.stacks {
		ws := &WaitStack{Frames: append([]string{}, es.frames...), Count: int64(es.waits + 0.5), WaitNanos: int64(es.nanos + 0.5), ByLock: map[string]int64{}, Source: WaitsFutexTrace}
		for id, v := range es.byLock {
			ws.ByLock[id] = int64(v + 0.5)
		}
		out = append(out, ws)
	}
	return out
}
