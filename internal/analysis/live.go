package analysis

import (
	"fmt"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// osAgg holds what the Aggregator learns from /proc samples of a running
// process (as opposed to thread dumps).
type osAgg struct {
	samples     int
	first, last time.Time

	threads map[osKey]*osThreadAgg
	// exited accumulates the run's counters of threads that are gone, so
	// process totals never go down when threads exit.
	exited counters
	// prevTotal is the process total at the previous sample, for rates.
	prevTotal counters
	prevT     time.Time

	lastThreads int
	// lastProcesses counts the processes of the last sample when it
	// covered a tree of processes (procfs.Thread.PID set), 0 otherwise;
	// processesSeen the distinct ones over the run (bounded).
	lastProcesses int
	processesSeen map[int]struct{}
	osStates      map[string]int
	// runnableSum adds up the threads in state R over the samples.
	runnableSum int

	hostFirst, hostLast   *snapshot.Host
	hostFirstT, hostLastT time.Time
	prevHost              *snapshot.Host
	// hostCPU follows the host's biggest CPU consumers and the target's
	// cgroup quotas (hostcpu.go).
	hostCPU hostCPU

	conds map[uint64]*condAgg

	conns *snapshot.Connections

	// javaNames remembers the Java thread behind each OS thread from the
	// latest dump, so /proc samples between dumps carry Java names too.
	java map[int]javaInfo
	// javaGen counts the dumps java was filled from.
	javaGen int

	// live is the sum of last-base over threads, kept as they change, so
	// the process total costs no walk over thousands of threads.
	live counters
	// cur holds the aggregate of each thread of the latest sample, in the
	// sample's order (its name and pool, already worked out).
	cur []*osThreadAgg
}

type javaInfo struct {
	name  string
	state threaddump.State
	pool  string // PoolName(name)
	// busy: the dump showed the thread running work (RUNNABLE, not in
	// a native wait) or queued on a contended resource.
	busy bool
}

// osKey identifies an OS thread across samples: tids are reused, start
// times are not.
type osKey struct {
	tid   int
	start uint64
}

// counters are the cumulative per-thread counters ctprof follows.
type counters struct {
	cpu          time.Duration
	voluntary    uint64
	involuntary  uint64
	runQueueWait time.Duration
	runTime      time.Duration
}

func (c counters) sub(o counters) counters {
	return counters{
		cpu: c.cpu - o.cpu, voluntary: c.voluntary - o.voluntary, involuntary: c.involuntary - o.involuntary,
		runQueueWait: c.runQueueWait - o.runQueueWait, runTime: c.runTime - o.runTime,
	}
}

func (c counters) add(o counters) counters {
	return counters{
		cpu: c.cpu + o.cpu, voluntary: c.voluntary + o.voluntary, involuntary: c.involuntary + o.involuntary,
		runQueueWait: c.runQueueWait + o.runQueueWait, runTime: c.runTime + o.runTime,
	}
}

// countersOf reads a thread's counters. CPU comes from schedstat's run time
// (nanoseconds) when the kernel has it, from stat's clock ticks otherwise.
func countersOf(t *snapshot.OSThread) counters {
	cpu := t.RunTime
	if cpu == 0 {
		cpu = t.CPU()
	}
	return counters{cpu: cpu, voluntary: t.Voluntary, involuntary: t.Involuntary, runQueueWait: t.RunQueueWait, runTime: t.RunTime}
}

type osThreadAgg struct {
	// key is the thread's entry in osAgg.threads; comm and javaGen are
	// the OS name and the dump (osAgg.javaGen) name, pool and javaState
	// were last taken from, so that a tick looks them up only when one
	// changed.
	key     osKey
	comm    string
	javaGen int
	name    string
	// pool is PoolName(name), kept so a Summary of thousands of threads
	// does not recompute it for every thread on every scrape.
	pool string
	// base is the thread's counters when the run first saw it: its
	// counters at the run's start, or zero for a thread born during the
	// run (everything it did happened while ctprof watched).
	base, last   counters
	firstT, lstT time.Time
	policy       int
	rtPriority   int
	nice         int
	cpusAllowed  string
	processor    int
	state        byte
	javaState    threaddump.State
	seenAt       int // sample number of the last sighting
	seen         int
	// sinceLast is what the thread did since the previous sample, and
	// measured says that sample saw it too (futexlocks.go).
	sinceLast counters
	measured  bool
	// timedWaits counts the samples in which the thread slept in a call
	// that ends by itself (sleep, timed futex or poll wait).
	timedWaits int
	sleeping   int
	// javaDumps counts the dumps that showed the thread, and busyDumps
	// those that showed it running work or queued on a contended
	// resource: a thread busy in more than a quarter of them is no poller.
	javaDumps, busyDumps int
	// nativeSeen counts the samples of a native target that classed the
	// thread, and nativeBusy those that saw it running, or waiting inside
	// its work (contention, I/O): a thread busy in more than a quarter of
	// them is no poller either.
	nativeSeen, nativeBusy int
	// nv is what its native verdicts keep (nativeresources.go).
	nv nativeSlot
}

type condAgg struct {
	fw        snapshot.FutexWait
	samples   int
	waiterSum int
	peak      int
	// counted is the most waiters the condition variable's own memory
	// counted (procfs.LockHolder.Waiters); 0 when never read.
	counted int
}

func newOSAgg() *osAgg {
	return &osAgg{threads: map[osKey]*osThreadAgg{}, conds: map[uint64]*condAgg{}, osStates: map[string]int{}, java: map[int]javaInfo{}}
}

// maxConditions bounds the condition-wait table.
const maxConditions = 200

func (o *osAgg) addCondition(fw snapshot.FutexWait) {
	c := o.conds[fw.Address]
	if c == nil {
		if len(o.conds) >= maxConditions {
			return
		}
		c = &condAgg{fw: fw}
		o.conds[fw.Address] = c
	}
	if fw.Location.Module != "" {
		c.fw.Location = fw.Location
	}
	if h := fw.Holder; h != nil {
		c.counted = max(c.counted, h.Waiters)
	}
	c.samples++
	c.waiterSum += len(fw.TIDs)
	c.peak = max(c.peak, len(fw.TIDs))
}

// total is the process's counters over the run: live threads since they
// were first seen plus everything the exited ones did. (The counters are
// unsigned or durations; sums and differences of them are exact modulo
// 2^64, so keeping live as a running sum loses nothing.)
func (o *osAgg) total() counters {
	return o.exited.add(o.live)
}

// addLive feeds the /proc part of a snapshot. It runs once per sample
// over every thread of the process, so the per-thread work stays in its
// loop; what happens once per sample (a new dump's names, the threads that
// exited) has functions of its own.
func (a *Aggregator) addLive(s *snapshot.Snapshot, dt time.Duration, tick dumpTick) {
	o := a.os
	o.samples++
	n := o.samples
	if o.first.IsZero() {
		o.first = s.Time
	}
	o.last = s.Time
	if tick.dump != nil {
		o.refreshJava(tick)
	}
	o.lastThreads = len(s.Threads)
	o.countProcesses(s.Threads)
	// The sweep lists threads in the same order tick after tick, so the
	// previous tick's thread at the same place is usually this one: a
	// 10,000-thread sample then costs no lookup in the table per thread.
	prev := o.cur
	o.cur = o.cur[:0]
	if cap(o.cur) < len(s.Threads) {
		o.cur = make([]*osThreadAgg, 0, len(s.Threads))
	}
	// The first sample's threads are allocated together (later ones, a
	// few at a time, one by one); slab never grows.
	var slab []osThreadAgg
	if len(o.threads) == 0 {
		o.threads = make(map[osKey]*osThreadAgg, len(s.Threads))
		slab = make([]osThreadAgg, 0, len(s.Threads))
	}
	var byState [256]int
	seenNow := 0
	running := 0
	for i := range s.Threads {
		t := &s.Threads[i]
		byState[t.State]++
		if t.State == 'R' {
			running++
		}
		k := osKey{t.TID, t.StartTime}
		c := countersOf(t)
		var ta *osThreadAgg
		if i < len(prev) && prev[i].key == k && prev[i].seenAt == n-1 {
			ta = prev[i] // read before append overwrites prev[i]
		} else {
			ta = o.threads[k]
		}
		if ta == nil {
			if len(slab) < cap(slab) {
				slab = append(slab, osThreadAgg{key: k, firstT: s.Time})
				ta = &slab[len(slab)-1]
			} else {
				ta = &osThreadAgg{key: k, firstT: s.Time}
			}
			if n == 1 {
				ta.base = c // it ran before the run started
			}
			ta.last = ta.base
			o.threads[k] = ta
		}
		if ta.seenAt != n {
			seenNow++
		}
		if ta.javaGen != o.javaGen || ta.comm != t.Name || ta.pool == "" {
			o.nameThread(ta, t)
		}
		o.cur = append(o.cur, ta)
		o.live = o.live.add(c.sub(ta.last))
		ta.noteTick(c, n)
		ta.last, ta.lstT, ta.seenAt = c, s.Time, n
		ta.seen++
		ta.policy, ta.rtPriority, ta.nice, ta.cpusAllowed, ta.state, ta.processor = t.Policy, t.RTPriority, t.Nice, t.CPUsAllowed, t.State, t.Processor
		if t.Sleeping() {
			ta.sleeping++
			if procfs.TimedWait(t) || ta.javaState == threaddump.StateTimedWaiting {
				ta.timedWaits++
			}
		}
	}
	o.runnableSum += running
	o.osStates = map[string]int{}
	for st, c := range byState {
		if c > 0 {
			o.osStates[osStateName(byte(st))] += c
		}
	}
	o.dropExited(n, seenNow)
	if s.Host != nil {
		if o.hostFirst == nil {
			o.hostFirst, o.hostFirstT = s.Host, s.Time
		}
		o.hostLast, o.hostLastT = s.Host, s.Time
		o.hostCPU.add(s.Host)
	}
	if s.Connections != nil {
		o.conns = s.Connections
	}
	verdicts := a.classifyNative(s)
	a.addNativeSites(s, verdicts, dt)
	futexWaiters := a.addFutexLocks(s, dt, o.curNames(s), verdicts)
	lockOf := lockOfWaiters(futexWaiters)
	a.addNativeStacks(s, lockOf, verdicts, dt)
	if s.Target.Kind != snapshot.KindJVM {
		a.noteLastNative(s, verdicts, lockOf)
	} else {
		a.noteJNI(s, verdicts, lockOf)
	}
	a.addPools(s, futexWaiters)
	a.addLiveSeries(s, running)
}

// refreshJava rebuilds the tid → Java thread map from the dump of tick,
// and starts a new generation of it, so that every thread takes its Java
// name and state again (see nameThread).
func (o *osAgg) refreshJava(tick dumpTick) {
	clear(o.java)
	o.javaGen++
	if len(o.java) == 0 && len(tick.dump.Threads) > 0 {
		o.java = make(map[int]javaInfo, len(tick.dump.Threads))
	}
	// By native id; of two threads with one id (a damaged dump) the
	// later one counts.
	// Owners of a lock others queue on work in its critical section,
	// even asleep there.
	owners := map[*threaddump.Thread]bool{}
	for _, ts := range tick.lockOwners {
		for _, t := range ts {
			owners[t] = true
		}
	}
	for i := range tick.dump.Threads {
		jt := &tick.dump.Threads[i]
		if jt.OSThreadID > 0 {
			busy := tick.waitsOn[jt] != "" || owners[jt] ||
				jt.State == threaddump.StateRunnable && len(jt.Frames) > 0 && !isIdleFrame(jt.Frames[0].String())
			o.java[int(jt.OSThreadID)] = javaInfo{name: jt.Name, state: jt.State, pool: tick.pools[i], busy: busy}
		}
	}
}

// nameThread names ta after t, whose OS name, or the dump generation, has
// changed since ta was last named (or which has no pool yet): the Java
// name and its pool when a dump named the thread, its OS name (and a pool
// to work out) otherwise. A new dump generation also counts the dump
// toward the thread's Java states.
func (o *osAgg) nameThread(ta *osThreadAgg, t *procfs.Thread) {
	j, isJava := o.java[t.TID]
	name, pool := t.Name, ""
	if isJava && j.name != "" {
		name, pool = j.name, j.pool
	}
	if name != ta.name || ta.pool == "" {
		if pool == "" {
			pool = PoolName(name)
		}
		ta.name, ta.pool = name, pool
	}
	if isJava && ta.javaGen != o.javaGen {
		ta.javaState = j.state
		ta.javaDumps++
		if j.busy {
			ta.busyDumps++
		}
	} else if isJava {
		ta.javaState = j.state
	}
	ta.comm, ta.javaGen = t.Name, o.javaGen
}

// dropExited folds the threads not seen in sample n into the totals and
// forgets them, so memory follows the live thread count. seenNow is how
// many of the table's threads sample n saw: when it saw them all, there
// is no walk over the table.
func (o *osAgg) dropExited(n, seenNow int) {
	for k, ta := range o.threads {
		if seenNow == len(o.threads) {
			break // every thread was seen: no walk over 10,000 entries
		}
		if ta.seenAt != n {
			d := ta.last.sub(ta.base)
			o.exited = o.exited.add(d)
			o.live = o.live.sub(d)
			delete(o.threads, k)
		}
	}
}

// latest returns the live threads' aggregates, each once, in the order of
// the latest sample: the same set as the threads map (addLive drops the
// threads a sample lacks), but a slice walks faster than a map, and the
// order keeps a pool's threads together. A tid listed twice in a sample
// (a damaged recording) is returned once.
func (o *osAgg) latest() []*osThreadAgg {
	if len(o.cur) == len(o.threads) {
		return o.cur
	}
	out := make([]*osThreadAgg, 0, len(o.threads))
	seen := make(map[*osThreadAgg]bool, len(o.threads))
	for _, ta := range o.cur {
		if !seen[ta] {
			seen[ta] = true
			out = append(out, ta)
		}
	}
	return out
}

// curNames names the threads of the latest sample by tid. The index is
// built on the first call only: most samples name no waiter.
func (o *osAgg) curNames(s *snapshot.Snapshot) func(tid int) string {
	var byTID map[int]int
	return func(tid int) string {
		if byTID == nil {
			byTID = make(map[int]int, len(s.Threads))
			for i := range s.Threads {
				byTID[s.Threads[i].TID] = i
			}
		}
		if i, ok := byTID[tid]; ok {
			return o.cur[i].name
		}
		return ""
	}
}

// addLiveSeries adds this sample's points to the timelines.
func (a *Aggregator) addLiveSeries(s *snapshot.Snapshot, running int) {
	o := a.os
	t := s.Time
	total := o.total()
	if !o.prevT.IsZero() && t.After(o.prevT) {
		sec := t.Sub(o.prevT).Seconds()
		d := total.sub(o.prevTotal)
		cs := a.timeline("context_switches")
		cs.add("voluntary/s", t, float64(d.voluntary)/sec)
		cs.add("involuntary/s", t, float64(d.involuntary)/sec)
		if o.prevHost != nil && s.Host != nil && s.Host.ContextSwitches >= o.prevHost.ContextSwitches {
			cs.add("host/s", t, float64(s.Host.ContextSwitches-o.prevHost.ContextSwitches)/sec)
		}
		cpu := a.timeline("cpu")
		cpu.add("CPUs used", t, d.cpu.Seconds()/sec)
		if a.target != nil && a.target.CPUs > 0 {
			cpu.add("CPUs allowed", t, float64(a.target.CPUs))
		}
		rq := a.timeline("run_queue_wait")
		rq.add("threads waiting for a CPU", t, d.runQueueWait.Seconds()/sec)
		// Runnable from the same schedstat counters as the waiting, so the
		// two lines agree (runnable >= waiting); state R at the tick
		// without schedstat.
		if busy := d.runTime + d.runQueueWait; busy > 0 {
			rq.add("runnable threads", t, busy.Seconds()/sec)
		} else {
			rq.add("runnable threads", t, float64(running))
		}
	}
	o.prevTotal, o.prevT = total, t
	if s.Host != nil {
		o.prevHost = s.Host
	}
	st := a.timeline("threads_by_state")
	for _, name := range []string{"running", "sleeping", "uninterruptible"} {
		st.add(name, t, float64(o.osStates[name]))
	}
	if s.Connections != nil {
		ct := a.timeline("connections_threads")
		ct.add("connections", t, float64(s.Connections.Established))
		ct.add("threads", t, float64(len(s.Threads)))
	}
}

func osStateName(b byte) string {
	switch b {
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "uninterruptible"
	case 'T', 't':
		return "stopped"
	case 'Z':
		return "zombie"
	case 'I':
		return "idle"
	}
	return "other"
}

// policyName names a scheduling policy (sched(7)).
func policyName(p int) string {
	switch p {
	case 0:
		return "SCHED_OTHER"
	case 1:
		return "SCHED_FIFO"
	case 2:
		return "SCHED_RR"
	case 3:
		return "SCHED_BATCH"
	case 5:
		return "SCHED_IDLE"
	case 6:
		return "SCHED_DEADLINE"
	}
	return fmt.Sprintf("policy-%d", p)
}

// missingHint says once what could not be read and how to get it.
func missingHint(file string) string {
	switch file {
	case "syscall":
		return "could not read /proc/<pid>/task/*/syscall (needs ptrace rights over the target): native futex hotspots are missing; run ctprof as root or as the target's user"
	case "fd":
		return "could not read /proc/<pid>/fd (needs the target's user or root): connection counts are missing; run ctprof as root or as the target's user"
	case "wchan":
		return "could not read /proc/<pid>/task/*/wchan: kernel wait channels are missing; run ctprof as root or as the target's user"
	case "mem":
		return "could not read /proc/<pid>/mem (needs ptrace rights over the target): native stacks and the holders of native locks are missing, so waits are judged by the kernel's view alone (a condition wait is not counted as contention) and grouped by futex word instead of wait site; run ctprof as root or as the target's user to get stacks"
	}
	return fmt.Sprintf("could not read /proc/<pid>/task/*/%s for lack of permission; run ctprof as root or as the target's user", file)
}

// maxProcessesSeen bounds the pids a run remembers to count the processes
// of a tree it saw (a server that forks a process per short connection
// goes through pids fast).
const maxProcessesSeen = 1 << 16

// countProcesses counts the processes of a sample of a tree: the sampler
// lists each process's threads together.
func (o *osAgg) countProcesses(threads []snapshot.OSThread) {
	n, last := 0, 0
	for i := range threads {
		p := threads[i].PID
		if p == 0 || p == last {
			continue
		}
		n, last = n+1, p
		if o.processesSeen == nil {
			o.processesSeen = map[int]struct{}{}
		}
		if len(o.processesSeen) < maxProcessesSeen {
			o.processesSeen[p] = struct{}{}
		}
	}
	o.lastProcesses = n
}
