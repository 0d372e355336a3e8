package analysis

import (
	"math"
	"sort"
	"strings"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Summary computes the summary of everything added so far. It may be
// called at any time, also while snapshots are being added.
func (a *Aggregator) Summary() *Summary { return a.summary(true) }

// MetricsSummary is the part of the Summary that the Prometheus metrics
// read, computed at every scrape: counts, totals, pools, locks, deadlocks,
// connections, wake-ups and the JVM's counters, without the report's
// tables (busiest threads, stack groups, stuck threads, futex waits,
// scheduling, serialization, Java states by pool), timelines and
// findings.
func (a *Aggregator) MetricsSummary() *Summary { return a.summary(false) }

func (a *Aggregator) summary(full bool) *Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &Summary{
		Schema:       SchemaVersion,
		Samples:      a.snapshots,
		Dumps:        a.dumps,
		States:       map[string]int{},
		Locks:        []LockSummary{},
		Deadlocks:    []DeadlockSummary{},
		Pools:        []PoolSummary{},
		StackGroups:  []StackGroup{},
		ThreadCPU:    []ThreadCPU{},
		StuckThreads: []StuckThread{},
		Findings:     []Finding{},
		Warnings:     append([]string{}, a.warnings...),
		Errors:       a.errors,
	}
	if !a.firstDumpT.IsZero() {
		f, l := a.firstDumpT, a.lastDumpT
		s.FirstDump, s.LastDump = &f, &l
	}
	if d := a.lastDump; d != nil {
		s.Threads = len(d.Threads)
		s.VM = d.VM
		for i := range d.Threads {
			s.States[stateName(d.Threads[i].State)]++
		}
		// The last dump's tables change only with the next dump: computed
		// once per dump, not on every scrape.
		if a.lastDumpTables.dump != d {
			a.lastDumpTables.dump, a.lastDumpTables.pools, a.lastDumpTables.groups = d, dumpPools(d, a.lastDumpPools), stackGroups(d)
		}
		s.Pools = append(make([]PoolSummary, 0, len(a.lastDumpTables.pools)), a.lastDumpTables.pools...)
		if full {
			s.StackGroups = append(make([]StackGroup, 0, len(a.lastDumpTables.groups)), a.lastDumpTables.groups...)
		}
	}
	s.Locks = a.lockSummaries()
	s.ContentionSites = a.withJFRSites(a.contentionSites())
	s.Deadlocks = a.deadlockSummaries()
	s.Waits = []ThreadWait{}
	if full {
		// A verdict per thread: for the report, not for every scrape.
		s.Waits = a.threadWaits()
		if a.os.samples == 0 {
			s.ThreadCPU = a.threadCPU() // a live run has the /proc view instead
		}
		s.StuckThreads = a.stuckThreads()
		s.Serialization = a.serialization()
	}
	a.liveSummary(s, full)
	a.costSummary(s)
	a.jvmSummary(s)
	s.JFR = a.jfrSummary()
	s.ExactWaits = a.exactRunSummary()
	s.FastReads = a.fastRunSummary()
	if w := fastReadsWarning(s); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	if full {
		s.Timelines = a.timelineSummaries()
		s.Findings = findings(s, a.hungFindings()...)
	}
	// docs/json.md calls these arrays: an empty one is [], never absent.
	if s.Serialization == nil {
		s.Serialization = []Serialization{}
	}
	if s.Wakeups == nil {
		s.Wakeups = []Wakeup{}
	}
	if s.FutexWaits == nil {
		s.FutexWaits = []FutexWaitSummary{}
	}
	if s.Timelines == nil {
		s.Timelines = []Timeline{}
	}
	return s
}

func (a *Aggregator) deadlockSummaries() []DeadlockSummary {
	out := []DeadlockSummary{}
	for _, da := range a.deadlocks {
		ds := da.summary
		switch {
		case da.jvm && da.ctprof:
			ds.Source = "jvm+ctprof"
		case da.jvm:
			ds.Source = "jvm"
		default:
			ds.Source = "ctprof"
		}
		out = append(out, ds)
	}
	sort.Slice(out, func(i, j int) bool { return cycleKey(out[i].Threads) < cycleKey(out[j].Threads) })
	return out
}

// dumpPools is the pool table of d; pools are PoolName of the names of
// d.Threads, by index.
func dumpPools(d *threaddump.Dump, pools []string) []PoolSummary {
	by := map[string]*PoolSummary{}
	for i := range d.Threads {
		t := &d.Threads[i]
		n := pools[i]
		p := by[n]
		if p == nil {
			p = &PoolSummary{Name: n, States: map[string]int{}}
			by[n] = p
		}
		p.Threads++
		p.States[stateName(t.State)]++
	}
	out := make([]PoolSummary, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	sortPools(out)
	return out
}

// maxStackGroups bounds the identical-stack table.
const maxStackGroups = 20

func stackGroups(d *threaddump.Dump) []StackGroup {
	type group struct {
		g     StackGroup
		state threaddump.State
	}
	by := map[string]*group{}
	var order []*group
	// The key is built in a reused buffer and looked up without a copy;
	// only a new group allocates its key.
	var key []byte
	// Threads with one stack often share one Frames slice: the key of a
	// slice (in the state it was last seen in) is built and looked up
	// once.
	byRef := map[stackRef]*group{}
	for i := range d.Threads {
		t := &d.Threads[i]
		if len(t.Frames) == 0 {
			continue
		}
		r := stackRef{&t.Frames[0], len(t.Frames)}
		g := byRef[r]
		if g != nil && g.state != t.State {
			g = nil
		}
		if g == nil {
			key = append(append(key[:0], t.State...), '|')
			key = appendStackKey(key, t)
			g = by[string(key)]
			if g == nil {
				frames := make([]string, 0, len(t.Frames))
				for _, f := range t.Frames {
					frames = append(frames, f.String())
				}
				g = &group{g: StackGroup{State: stateName(t.State), Frames: frames}, state: t.State}
				by[string(key)] = g
				order = append(order, g)
			}
			byRef[r] = g
		}
		g.g.Threads++
		if len(g.g.Names) < 5 {
			g.g.Names = append(g.g.Names, t.Name)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].g.Threads > order[j].g.Threads })
	out := []StackGroup{}
	for _, g := range order {
		if g.g.Threads < 2 || len(out) == maxStackGroups {
			break
		}
		out = append(out, g.g)
	}
	return out
}

// maxThreadCPU bounds the busiest-threads table.
const maxThreadCPU = 20

// threadCPU is the busiest-threads table of a dump series (cpu= deltas);
// live runs replace it with the /proc view.
func (a *Aggregator) threadCPU() []ThreadCPU {
	out := []ThreadCPU{}
	if a.dumps < 2 {
		return out
	}
	for k, ta := range a.jthreads {
		if ta.seen < 2 || !ta.hasCPU {
			continue
		}
		cpu := (ta.lastCPU - ta.firstCPU).Seconds()
		wall := (ta.lastElaps - ta.firstElapsed).Seconds()
		if wall <= 0 {
			wall = ta.lastTime.Sub(ta.firstTime).Seconds()
		}
		if cpu < 0 || wall <= 0 {
			continue
		}
		out = append(out, ThreadCPU{Thread: k.name, CPUSeconds: round3(cpu), Percent: round1(100 * cpu / wall)})
	}
	return topN(out, maxThreadCPU, func(x, y ThreadCPU) bool {
		if x.CPUSeconds != y.CPUSeconds {
			return x.CPUSeconds > y.CPUSeconds
		}
		return x.Thread < y.Thread
	})
}

// idleFrames are native frames where a RUNNABLE thread is really waiting
// for I/O; a thread sitting in one across all dumps is idle, not stuck.
var idleFrames = []string{
	"EPoll.wait", "EPollArrayWrapper.epollWait", "KQueue.poll", "KQueueArrayWrapper.kevent0",
	"Net.poll", "Net.accept", "ServerSocketChannelImpl.accept0", "PlainSocketImpl.socketAccept",
	"SocketInputStream.socketRead0", "SocketDispatcher.read0", "NioSocketImpl.", "FileInputStream.readBytes",
	"FileDispatcherImpl.read0", "Reference.waitForReferencePendingList", "Process$PipeInputStream", "WindowsSelectorImpl$SubSelector.poll0", "Signal.", "Object.wait",
	"Unsafe.park", "Thread.sleep", "ProcessImpl.waitFor", "ProcessHandleImpl.waitForProcessExit0",
}

func isIdleFrame(frame string) bool {
	for _, f := range idleFrames {
		if strings.Contains(frame, f) {
			return true
		}
	}
	return false
}

func (a *Aggregator) stuckThreads() []StuckThread {
	out := []StuckThread{}
	if a.dumps < 2 {
		return out
	}
	for k, ta := range a.jthreads {
		if ta.seen != a.dumps || !ta.sameStack || ta.topFrame == "" {
			continue
		}
		if ta.state != threaddump.StateBlocked && ta.state != threaddump.StateRunnable {
			continue // parked and waiting threads idle by design
		}
		if ta.state == threaddump.StateRunnable && isIdleFrame(ta.topFrame) {
			continue
		}
		if ta.state == threaddump.StateRunnable && a.nativeLockThreads[k.name] {
			continue // in a native (JNI) lock, which the lock table reports
		}
		out = append(out, StuckThread{Thread: k.name, State: string(ta.state), Frame: ta.topFrame, Dumps: ta.seen})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return out[i].State < out[j].State // BLOCKED before RUNNABLE
		}
		return out[i].Thread < out[j].Thread
	})
	return out
}

// serialization reports, for each contended lock, the pool its waiters
// come from and how many of that pool's threads run against how many queue.
func (a *Aggregator) serialization() []Serialization {
	var out []Serialization
	for _, la := range a.locks {
		for pool, acc := range la.ser {
			if acc.samples == 0 {
				continue
			}
			n := float64(acc.samples)
			out = append(out, Serialization{
				LockID: la.id, Pool: pool, Samples: acc.samples,
				Threads: round1(float64(acc.threads) / n), Running: round1(float64(acc.running) / n), Queueing: round1(float64(acc.queueing) / n),
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queueing != out[j].Queueing {
			return out[i].Queueing > out[j].Queueing
		}
		if out[i].LockID != out[j].LockID {
			return out[i].LockID < out[j].LockID
		}
		return out[i].Pool < out[j].Pool
	})
	if len(out) > 20 {
		out = out[:20]
	}
	return out
}

func (a *Aggregator) costSummary(s *Summary) {
	c := a.cost
	if c.samples == 0 && c.dumps == 0 {
		return
	}
	sc := &SampleCost{PeakSeconds: round6(c.peak.Seconds()), LastSeconds: round6(c.lastSampleDur.Seconds()), Dumps: c.dumps, EarlyDumps: c.earlyDumps, DumpSeconds: round6(c.dumpWall.Seconds())}
	if c.samples > 0 {
		sc.AvgSeconds = round6(c.sum.Seconds() / float64(c.samples))
	}
	if len(c.dumpMethods) > 0 {
		sc.DumpMethods = map[string]int{}
		for k, v := range c.dumpMethods {
			sc.DumpMethods[k] = v
		}
	}
	if c.pauseKnown {
		p := round6(c.pause.Seconds())
		sc.TargetPauseSeconds = &p
		if w := a.last.Sub(a.first).Seconds(); w > 0 {
			share := round6(c.pause.Seconds() / w)
			sc.TargetPauseShare = &share
		}
	}
	s.SampleCost = sc
}

func (a *Aggregator) jvmSummary(s *Summary) {
	l := a.jvmLast
	if l == nil {
		return
	}
	j := &JVMSummary{
		LiveThreads: l.LiveThreads, DaemonThreads: l.DaemonThreads, PeakThreads: l.PeakThreads, StartedThreads: l.StartedThreads,
		ThreadsStartedInRun: l.StartedThreads - a.jvmFirst.StartedThreads,
		Safepoints:          l.Safepoints, SafepointSeconds: round6(l.SafepointTime.Seconds()), GCSeconds: round6(l.GCTime.Seconds()),
	}
	if len(l.Sync) > 0 {
		j.Sync = map[string]int64{}
		for k, v := range l.Sync {
			j.Sync[k] = v
		}
	}
	s.JVM = j
}

// timelineInfo gives each timeline's title and unit, in display order.
var timelineInfo = []struct{ id, title, unit string }{
	{"threads_by_state", "Threads by OS state", "threads"},
	{"java_threads_by_state", "Java threads by state", "threads"},
	{"lock_waiters", "Threads queued on the hottest locks", "threads"},
	{"context_switches", "Context switches", "per second"},
	{"connections_threads", "Connections and threads", "count"},
	{"cpu", "CPU use against CPUs allowed", "CPUs"},
	{"run_queue_wait", "Waiting for a CPU", "threads"},
	{"gc_pauses", "Garbage collection pauses (JFR)", "ms"},
	{"jvm_cpu_load", "CPU load the JVM recorded (JFR)", "% of the machine"},
}

// maxLockTimelines bounds the lock_waiters timeline to the hottest locks.
const maxLockTimelines = 5

func (a *Aggregator) timelineSummaries() []Timeline {
	var out []Timeline
	for _, ti := range timelineInfo {
		var series []Series
		if ti.id == "lock_waiters" {
			series = a.lockSeries()
		} else if ts := a.timelines[ti.id]; ts != nil {
			series = ts.series()
		}
		longest := 0
		for _, sr := range series {
			longest = max(longest, len(sr.Points))
		}
		if longest < 2 {
			continue
		}
		out = append(out, Timeline{ID: ti.id, Title: ti.title, Unit: ti.unit, Series: series})
	}
	return out
}

func (a *Aggregator) lockSeries() []Series {
	locks := make([]*lockAgg, 0, len(a.locks))
	for _, la := range a.locks {
		locks = append(locks, la)
	}
	sort.Slice(locks, func(i, j int) bool {
		if locks[i].waiterSum != locks[j].waiterSum {
			return locks[i].waiterSum > locks[j].waiterSum
		}
		return locks[i].id < locks[j].id
	})
	var out []Series
	for i, la := range locks {
		if i == maxLockTimelines {
			break
		}
		name := la.kind + " " + shortClass(la.class)
		if la.kind == "futex" {
			name = "futex " + futexName(la.symbol, la.class, la.address)
		}
		out = append(out, Series{Name: name, Points: la.waiters.snapshot()})
	}
	return out
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
func round1(f float64) float64 { return math.Round(f*10) / 10 }
func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }
