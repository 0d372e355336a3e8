package analysis

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// liveSummary fills the live-sampling parts of the summary; without full,
// only those the metrics read (see MetricsSummary).
func (a *Aggregator) liveSummary(s *Summary, full bool) {
	o := a.os
	if a.target != nil {
		t := a.target
		s.Target = &TargetSummary{PID: t.PID, Name: t.Name, Kind: string(t.Kind), CPUs: t.CPUs}
	}
	if !a.first.IsZero() && a.last.After(a.first) && (o.samples > 0 || a.dumps > 1) {
		s.DurationSeconds = round3(a.last.Sub(a.first).Seconds())
	}
	if o.samples == 0 {
		return
	}
	wall := o.last.Sub(o.first).Seconds()
	if a.dumps == 0 {
		s.Threads = o.lastThreads
	}
	if o.lastProcesses > 0 {
		s.Processes = &ProcessTree{Last: o.lastProcesses, Seen: len(o.processesSeen)}
	}
	s.OSStates = o.osStates

	total := o.total()
	tot := &Totals{
		CPUSeconds: round6(total.cpu.Seconds()), VoluntarySwitches: total.voluntary, InvoluntarySwitches: total.involuntary,
		RunQueueWaitSeconds: round6(total.runQueueWait.Seconds()),
	}
	if o.hostFirst != nil && o.hostLast.ContextSwitches >= o.hostFirst.ContextSwitches {
		tot.HostSwitches = o.hostLast.ContextSwitches - o.hostFirst.ContextSwitches
	}
	s.Totals = tot
	cs := &ContextSwitchSummary{}
	if wall > 0 {
		cs.VoluntaryPerSecond = round1(float64(total.voluntary) / wall)
		cs.InvoluntaryPerSecond = round1(float64(total.involuntary) / wall)
		s.CPUPercent = round1(100 * total.cpu.Seconds() / wall)
	}
	if busy := total.runTime + total.runQueueWait; busy > 0 {
		s.RunQueueWaitShare = round3(total.runQueueWait.Seconds() / busy.Seconds())
	}
	if hw := o.hostLastT.Sub(o.hostFirstT).Seconds(); hw > 0 {
		cs.HostPerSecond = round1(float64(tot.HostSwitches) / hw)
	}
	s.ContextSwitches = cs
	if h := o.hostLast; h != nil {
		s.Host = &HostSummary{CPUs: h.CPUs, Load1: h.Load1, ProcsRunning: h.ProcsRunning, ProcsBlocked: h.ProcsBlocked}
	}
	if a.target != nil && a.target.CPUs > 0 && wall > 0 {
		used := total.cpu.Seconds() / wall
		s.CPUUse = &CPUUse{CoresUsed: round3(used), CPUsAllowed: a.target.CPUs, ShareOfAllowed: round3(used / float64(a.target.CPUs))}
	}

	s.Pools = a.liveThreadPools(wall)
	s.Wakeups = a.wakeups(wall, cs.HostPerSecond)
	if !full {
		a.liveConnections(s)
		return
	}
	s.ThreadCPU = append(s.ThreadCPU[:0], a.liveThreadRows(maxThreadCPU)...)
	if a.dumps > 0 {
		// Java states by pool, from the join, beside the live rates.
		byPool := map[string]map[string]int{}
		for _, ta := range o.threads {
			if ta.javaState == "" {
				continue
			}
			st := byPool[ta.pool]
			if st == nil {
				st = map[string]int{}
				byPool[ta.pool] = st
			}
			st[stateName(ta.javaState)]++
		}
		for i := range s.Pools {
			if st := byPool[s.Pools[i].Name]; st != nil {
				s.Pools[i].States = st
			}
		}
	}
	s.Scheduling = a.scheduling(total, wall)

	for addr, c := range o.conds {
		s.FutexWaits = append(s.FutexWaits, FutexWaitSummary{
			Address: fmt.Sprintf("0x%x", addr), Name: futexName(nil, futexClass(c.fw.Location), fmt.Sprintf("0x%x", addr)),
			Symbol: futexSymbol(c.fw.Location.Symbol, c.fw.Location.String()),
			Module: c.fw.Location.Module, Kind: string(c.fw.Kind), Waiters: c.peak,
			AvgWaiters: round3(float64(c.waiterSum) / float64(o.samples)), CountedWaiters: c.counted,
		})
	}
	sort.Slice(s.FutexWaits, func(i, j int) bool {
		if s.FutexWaits[i].Waiters != s.FutexWaits[j].Waiters {
			return s.FutexWaits[i].Waiters > s.FutexWaits[j].Waiters
		}
		return s.FutexWaits[i].Address < s.FutexWaits[j].Address
	})

	a.liveConnections(s)
	var miss []string
	for m := range a.missing {
		if m == "futex-trace" {
			continue // said only where it matters (fastReadsWarning)
		}
		miss = append(miss, m)
	}
	sort.Strings(miss)
	for _, m := range miss {
		s.Warnings = append(s.Warnings, missingHint(m))
	}
}

// liveConnections fills the connection count and threads per connection.
func (a *Aggregator) liveConnections(s *Summary) {
	o := a.os
	if c := o.conns; c != nil {
		cs := &ConnectionSummary{Established: c.Established, ByPort: map[string]int{}, Listening: append([]int{}, c.Listening...), Peers: c.Peers,
			ByPath: map[string]int{}, ListeningPaths: append([]string{}, c.ListeningPaths...)}
		for p, n := range c.ByLocalPort {
			cs.ByPort[fmt.Sprint(p)] = n
		}
		for p, n := range c.ByPath {
			cs.ByPath[p] = n
		}
		s.Connections = cs
		s.ThreadsPerConnection = a.threadsPerConnection(o.lastThreads, c.Established)
		if t := s.ThreadsPerConnection; t != nil && o.lastProcesses > 0 && c.Established > 0 {
			t.ProcessesRatio = round3(float64(o.lastProcesses) / float64(c.Established))
		}
	}
}

func futexSymbol(symbol, rendered string) *string {
	if symbol == "" {
		return nil
	}
	return &rendered
}

// liveThreadRows is the per-thread table of a live run, busiest first.
// liveThreadRows returns the busiest threads, at most n, busiest first.
func (a *Aggregator) liveThreadRows(n int) []ThreadCPU {
	type row struct {
		key osKey
		agg *osThreadAgg
		cpu time.Duration
	}
	rows := make([]row, 0, len(a.os.threads))
	for k, ta := range a.os.threads {
		rows = append(rows, row{k, ta, ta.last.cpu - ta.base.cpu})
	}
	top := topN(rows, n, func(x, y row) bool {
		if x.cpu != y.cpu {
			return x.cpu > y.cpu
		}
		return x.key.tid < y.key.tid
	})
	out := make([]ThreadCPU, 0, len(top))
	for _, r := range top {
		out = append(out, threadRow(r.key.tid, r.agg))
	}
	return out
}

func threadRow(tid int, ta *osThreadAgg) ThreadCPU {
	d := ta.last.sub(ta.base)
	w := ta.lstT.Sub(ta.firstT).Seconds()
	tc := ThreadCPU{
		Thread: ta.name, TID: tid, CPUSeconds: round3(d.cpu.Seconds()),
		Policy: policyName(ta.policy), Nice: ta.nice, RTPriority: ta.rtPriority, CPUsAllowed: ta.cpusAllowed,
		OSState: osStateName(ta.state), LastCPU: ta.processor,
	}
	if ta.javaState != "" {
		tc.JavaState = string(ta.javaState)
	}
	if w > 0 {
		tc.Percent = round1(100 * d.cpu.Seconds() / w)
		tc.VoluntaryPerSecond = round1(float64(d.voluntary) / w)
		tc.InvoluntaryPerSecond = round1(float64(d.involuntary) / w)
	}
	if busy := d.runTime + d.runQueueWait; busy > 0 {
		tc.RunQueueWaitShare = round3(d.runQueueWait.Seconds() / busy.Seconds())
		tc.RunQueueWaitSeconds = round3(d.runQueueWait.Seconds())
	}
	return tc
}

// threadsPerConnection relates threads to connections: the plain ratio
// now, and when the connection count moved during the run, the line that
// fits threads against connections and the pools that follow it.
func (a *Aggregator) threadsPerConnection(threads, conns int) *ThreadsPerConnection {
	f := &a.conns.fit
	t := &ThreadsPerConnection{MinConnections: int(f.minX), MaxConnections: int(f.maxX)}
	if conns > 0 {
		t.Ratio = round3(float64(threads) / float64(conns))
	}
	if !f.varies() {
		if conns == 0 {
			return nil
		}
		return t
	}
	slope, icept, r2 := f.fit()
	slope, icept, r2 = round3(slope), round3(icept), round3(r2)
	t.Slope, t.Intercept, t.R2 = &slope, &icept, &r2
	for name, pa := range a.pools {
		if !pa.fit.varies() {
			continue
		}
		ps, _, pr2 := pa.fit.fit()
		// A pool grows with the users when it adds at least half a thread
		// per connection and the line explains most of its size.
		if ps >= 0.5 && pr2 >= 0.8 {
			t.GrowingPools = append(t.GrowingPools, PoolGrowth{Pool: name, Slope: round3(ps), R2: round3(pr2)})
		}
	}
	sort.Slice(t.GrowingPools, func(i, j int) bool {
		if t.GrowingPools[i].Slope != t.GrowingPools[j].Slope {
			return t.GrowingPools[i].Slope > t.GrowingPools[j].Slope
		}
		return t.GrowingPools[i].Pool < t.GrowingPools[j].Pool
	})
	if len(t.GrowingPools) > 10 {
		t.GrowingPools = t.GrowingPools[:10]
	}
	return t
}

// sufferingMinWait is the run-queue wait, as a share of the run, from
// which a thread is named as one that suffers: a thread that ran a few
// milliseconds and waited for most of them (a JIT compiler, an attach
// listener) has a large share of a tiny time, not a CPU problem.
const sufferingMinWait = 0.05

// jvmAttachListener is the name of the HotSpot thread that serves attach
// requests (ctprof's thread dumps).
const jvmAttachListener = "Attach Listener"

// scheduling describes CPU saturation: threads runnable against CPUs, the
// time they wait in the run queue, and the threads that wait most. The
// averages come from one source, schedstat's run time and run-queue wait
// over the run, so runnable = running + waiting holds by construction
// (sampling state R at ticks and dividing schedstat's wait by the wall
// gave 1.9 runnable beside 2.59 waiting).
func (a *Aggregator) scheduling(total counters, wall float64) *Scheduling {
	o := a.os
	cpus := 0
	if a.target != nil {
		cpus = a.target.CPUs
	}
	sc := &Scheduling{CPUs: cpus, Suffering: []ThreadCPU{}}
	if busy := total.runTime + total.runQueueWait; busy > 0 && wall > 0 {
		sc.RunningAvg = round3(total.runTime.Seconds() / wall)
		sc.WaitingForCPUAvg = round3(total.runQueueWait.Seconds() / wall)
		sc.RunnableAvg = round3(sc.RunningAvg + sc.WaitingForCPUAvg)
		sc.RunQueueWaitShare = round3(total.runQueueWait.Seconds() / busy.Seconds())
	} else {
		// No schedstat (or a single sample): threads in state R per
		// sample, with nothing known of their waiting.
		sc.RunnableAvg = round3(float64(o.runnableSum) / float64(o.samples))
	}
	if wall > 0 && len(o.threads) > 0 {
		sc.InvoluntaryPerThreadPerSecond = round3(float64(total.involuntary) / wall / float64(len(o.threads)))
	}
	if o.hostLast != nil {
		sc.HostLoad1 = o.hostLast.Load1
	}
	a.hostScheduling(sc, total)
	if wall <= 0 {
		return sc
	}
	// The threads that waited longest for a CPU, by their wait over the
	// run, from 5 % of it.
	type row struct {
		key  osKey
		agg  *osThreadAgg
		wait time.Duration
	}
	minWait := time.Duration(sufferingMinWait * wall * float64(time.Second))
	jvm := a.target != nil && a.target.Kind == snapshot.KindJVM
	var rows []row
	for k, ta := range o.threads {
		// A JVM's attach listener runs when ctprof asks for a dump: its
		// waiting is the observer's doing, not the program's.
		if jvm && ta.name == jvmAttachListener {
			continue
		}
		if d := ta.last.sub(ta.base); d.runQueueWait >= minWait && d.runQueueWait > 0 {
			rows = append(rows, row{k, ta, d.runQueueWait})
		}
	}
	for _, r := range topN(rows, 5, func(x, y row) bool {
		if x.wait != y.wait {
			return x.wait > y.wait
		}
		return x.key.tid < y.key.tid
	}) {
		sc.Suffering = append(sc.Suffering, threadRow(r.key.tid, r.agg))
	}
	return sc
}

// Wake-up storm thresholds: a thread that sleeps in a timed wait in most
// samples, wakes at least 5 times a second, uses under 5 % of a core, and
// was seen by at most a quarter of the dumps running work, holding a lock
// others queue on, or queued on a contended resource polls rather than
// works.
const (
	wakeupMinPerSecond = 5.0
	wakeupMaxCPU       = 0.05
	wakeupMinSleeping  = 0.5
)

// wakeups finds pools whose threads wake often to do little.
func (a *Aggregator) wakeups(wall, hostPerSecond float64) []Wakeup {
	type acc struct {
		threads int
		rate    float64
		cpu     float64
		periods []float64
	}
	by := map[string]*acc{}
	for _, ta := range a.os.latest() {
		w := ta.lstT.Sub(ta.firstT).Seconds()
		if ta.seen < 3 || w < 1 {
			continue
		}
		d := ta.last.sub(ta.base)
		rate := float64(d.voluntary) / w
		cpu := d.cpu.Seconds() / w
		timed := ta.timedWaits >= int(wakeupMinSleeping*float64(ta.seen)) || ta.javaState == threaddump.StateTimedWaiting
		if rate < wakeupMinPerSecond || cpu >= wakeupMaxCPU || !timed {
			continue
		}
		if 4*ta.busyDumps > ta.javaDumps || 4*ta.nativeBusy > ta.nativeSeen {
			// The dumps saw it run work or queue on a contended resource
			// in more than a quarter of them: its wake-ups are work or
			// contention, not polling. A poller that takes a lock for a
			// moment on each wake-up is still a poller.
			continue
		}
		p := ta.pool
		x := by[p]
		if x == nil {
			x = &acc{}
			by[p] = x
		}
		x.threads++
		x.rate += rate
		x.cpu += cpu
		x.periods = append(x.periods, 1000/rate)
	}
	var out []Wakeup
	for p, x := range by {
		sort.Float64s(x.periods)
		wk := Wakeup{
			Pool: p, Threads: x.threads, PerSecond: round1(x.rate),
			PeriodMillis:        round1(x.periods[len(x.periods)/2]),
			CPUPercentPerThread: round3(100 * x.cpu / float64(x.threads)),
		}
		if hostPerSecond > 0 {
			wk.HostShare = round3(math.Min(x.rate/hostPerSecond, 1))
		}
		out = append(out, wk)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PerSecond != out[j].PerSecond {
			return out[i].PerSecond > out[j].PerSecond
		}
		return out[i].Pool < out[j].Pool
	})
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}
