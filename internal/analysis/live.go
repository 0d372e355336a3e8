package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/sample"
)

// live holds what the Aggregator learns from /proc samples of a running
// process (as opposed to thread dumps).
type live struct {
	samples   int
	first     time.Time
	last      time.Time
	target    sample.Target
	hasTarget bool

	threads map[osKey]*osThreadAgg
	// exited accumulates the run's deltas of threads that are gone, so
	// process totals never go down when threads exit.
	exited counters
	// lastThreads is the number of threads in the latest sample.
	lastThreads int
	osStates    map[string]int

	hostFirst, hostLast *sample.Host
	hostFirstT          time.Time
	hostLastT           time.Time

	futex map[uint64]*futexAgg

	conns *sample.Connections

	missing  map[string]bool
	costSum  time.Duration
	costPeak time.Duration
}

// osKey identifies an OS thread across samples: tids are reused, start
// times are not.
type osKey struct {
	tid   int
	start uint64
}

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

type osThreadAgg struct {
	name         string
	first, last  counters
	firstT, lstT time.Time
	policy       int
	rtPriority   int
	nice         int
	cpusAllowed  string
	state        byte
	seenAt       int // sample number of the last sighting
}

type futexAgg struct {
	fw           sample.FutexWait
	samples      int
	waiterSum    int
	peak         int
	peakWaitTIDs []int
}

func newLive() *live {
	return &live{threads: map[osKey]*osThreadAgg{}, futex: map[uint64]*futexAgg{}, missing: map[string]bool{}, osStates: map[string]int{}}
}

func countersOf(t *sample.OSThread) counters {
	return counters{cpu: t.CPU(), voluntary: t.Voluntary, involuntary: t.Involuntary, runQueueWait: t.RunQueueWait, runTime: t.RunTime}
}

// addLive feeds the /proc part of a snapshot.
func (a *Aggregator) addLive(s *sample.Snapshot) {
	l := a.live
	l.samples++
	n := l.samples
	if l.first.IsZero() {
		l.first = s.Time
	}
	l.last = s.Time
	if s.Target.PID != 0 {
		l.target, l.hasTarget = s.Target, true
	}
	l.costSum += s.Cost
	if s.Cost > l.costPeak {
		l.costPeak = s.Cost
	}
	for _, m := range s.Missing {
		l.missing[m] = true
	}
	l.lastThreads = len(s.Threads)
	l.osStates = map[string]int{}
	for i := range s.Threads {
		t := &s.Threads[i]
		l.osStates[osStateName(t.State)]++
		k := osKey{t.TID, t.StartTime}
		c := countersOf(t)
		ta := l.threads[k]
		if ta == nil {
			ta = &osThreadAgg{first: c, firstT: s.Time}
			l.threads[k] = ta
		}
		ta.name, ta.last, ta.lstT, ta.seenAt = t.Name, c, s.Time, n
		ta.policy, ta.rtPriority, ta.nice, ta.cpusAllowed, ta.state = t.Policy, t.RTPriority, t.Nice, t.CPUsAllowed, t.State
	}
	// Threads not seen in this sample exited: fold their deltas into the
	// totals and forget them, so memory follows the live thread count.
	for k, ta := range l.threads {
		if ta.seenAt != n {
			l.exited = l.exited.add(ta.last.sub(ta.first))
			delete(l.threads, k)
		}
	}
	if s.Host != nil {
		if l.hostFirst == nil {
			l.hostFirst, l.hostFirstT = s.Host, s.Time
		}
		l.hostLast, l.hostLastT = s.Host, s.Time
	}
	seen := map[uint64]bool{}
	for _, fw := range s.Futexes {
		fa := l.futex[fw.Address]
		if fa == nil {
			fa = &futexAgg{fw: fw}
			l.futex[fw.Address] = fa
		}
		if fw.Kind != sample.FutexUnknown || fa.fw.Kind == sample.FutexUnknown {
			fa.fw.Kind = fw.Kind
		}
		if fw.Location.Module != "" {
			fa.fw.Location = fw.Location
		}
		if !seen[fw.Address] {
			seen[fw.Address] = true
			fa.samples++
		}
		fa.waiterSum += len(fw.TIDs)
		if len(fw.TIDs) >= fa.peak {
			fa.peak = len(fw.TIDs)
			fa.peakWaitTIDs = append(fa.peakWaitTIDs[:0], fw.TIDs...)
		}
	}
	if s.Connections != nil {
		l.conns = s.Connections
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

// liveSummary fills the live-sampling parts of the summary.
func (a *Aggregator) liveSummary(s *Summary) {
	l := a.live
	if l.samples == 0 {
		return
	}
	s.Samples = l.samples
	if l.hasTarget {
		s.Target = &TargetSummary{PID: l.target.PID, Name: l.target.Name, Kind: string(l.target.Kind), CPUs: l.target.CPUs}
	}
	wall := l.last.Sub(l.first).Seconds()
	s.DurationSeconds = round3(wall)
	if a.dumps == 0 {
		s.Threads = l.lastThreads
	}
	s.OSStates = l.osStates
	s.SampleCost = &SampleCost{AvgSeconds: round6(l.costSum.Seconds() / float64(l.samples)), PeakSeconds: round6(l.costPeak.Seconds())}

	// Process totals: live threads' deltas plus those of exited threads.
	total := l.exited
	type row struct {
		key osKey
		agg *osThreadAgg
		d   counters
	}
	rows := make([]row, 0, len(l.threads))
	for k, ta := range l.threads {
		d := ta.last.sub(ta.first)
		total = total.add(d)
		rows = append(rows, row{k, ta, d})
	}
	cs := &ContextSwitchSummary{}
	if wall > 0 {
		cs.VoluntaryPerSecond = round1(float64(total.voluntary) / wall)
		cs.InvoluntaryPerSecond = round1(float64(total.involuntary) / wall)
		s.CPUPercent = round1(100 * total.cpu.Seconds() / wall)
		if busy := total.runTime + total.runQueueWait; busy > 0 {
			s.RunQueueWaitShare = round3(total.runQueueWait.Seconds() / busy.Seconds())
		}
	}
	if l.hostFirst != nil && l.hostLast != l.hostFirst {
		if hw := l.hostLastT.Sub(l.hostFirstT).Seconds(); hw > 0 && l.hostLast.ContextSwitches >= l.hostFirst.ContextSwitches {
			cs.HostPerSecond = round1(float64(l.hostLast.ContextSwitches-l.hostFirst.ContextSwitches) / hw)
		}
	}
	s.ContextSwitches = cs
	if h := l.hostLast; h != nil {
		s.Host = &HostSummary{CPUs: h.CPUs, Load1: h.Load1, ProcsRunning: h.ProcsRunning, ProcsBlocked: h.ProcsBlocked}
	}

	// Busiest threads by CPU over the run.
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].d.cpu != rows[j].d.cpu {
			return rows[i].d.cpu > rows[j].d.cpu
		}
		return rows[i].key.tid < rows[j].key.tid
	})
	s.ThreadCPU = s.ThreadCPU[:0]
	for _, r := range rows {
		if len(s.ThreadCPU) == maxThreadCPU {
			break
		}
		w := r.agg.lstT.Sub(r.agg.firstT).Seconds()
		tc := ThreadCPU{Thread: r.agg.name, TID: r.key.tid, CPUSeconds: round3(r.d.cpu.Seconds()),
			Policy: policyName(r.agg.policy), Nice: r.agg.nice, RTPriority: r.agg.rtPriority, CPUsAllowed: r.agg.cpusAllowed}
		if w > 0 {
			tc.Percent = round1(100 * r.d.cpu.Seconds() / w)
			tc.VoluntaryPerSecond = round1(float64(r.d.voluntary) / w)
			tc.InvoluntaryPerSecond = round1(float64(r.d.involuntary) / w)
		}
		if busy := r.d.runTime + r.d.runQueueWait; busy > 0 {
			tc.RunQueueWaitShare = round3(r.d.runQueueWait.Seconds() / busy.Seconds())
		}
		s.ThreadCPU = append(s.ThreadCPU, tc)
	}

	// Pools from OS thread names, unless a dump already named them.
	if a.dumps == 0 {
		by := map[string]*PoolSummary{}
		for _, r := range rows {
			name := PoolName(r.agg.name)
			p := by[name]
			if p == nil {
				p = &PoolSummary{Name: name, States: map[string]int{}}
				by[name] = p
			}
			p.Threads++
			p.States[osStateName(r.agg.state)]++
			w := r.agg.lstT.Sub(r.agg.firstT).Seconds()
			if wall > 0 {
				p.CPUPercent += 100 * r.d.cpu.Seconds() / wall
			}
			if w > 0 {
				p.VoluntaryPerSecond += float64(r.d.voluntary) / w
				p.InvoluntaryPerSecond += float64(r.d.involuntary) / w
			}
		}
		s.Pools = s.Pools[:0]
		for _, p := range by {
			p.CPUPercent, p.VoluntaryPerSecond, p.InvoluntaryPerSecond = round1(p.CPUPercent), round1(p.VoluntaryPerSecond), round1(p.InvoluntaryPerSecond)
			s.Pools = append(s.Pools, *p)
		}
		sort.Slice(s.Pools, func(i, j int) bool {
			if s.Pools[i].Threads != s.Pools[j].Threads {
				return s.Pools[i].Threads > s.Pools[j].Threads
			}
			return s.Pools[i].Name < s.Pools[j].Name
		})
	}

	// Futexes: locks go into the lock table, condition waits apart.
	for addr, fa := range l.futex {
		addrHex := fmt.Sprintf("0x%x", addr)
		if fa.fw.Kind == sample.FutexCondition {
			s.FutexWaits = append(s.FutexWaits, FutexWaitSummary{Address: addrHex, Symbol: futexSymbol(fa.fw.Location), Module: fa.fw.Location.Module, Kind: string(fa.fw.Kind), Waiters: fa.peak, AvgWaiters: round3(float64(fa.waiterSum) / float64(l.samples))})
			continue
		}
		class := fa.fw.Location.Symbol
		if class == "" {
			class = fa.fw.Location.Module
		}
		s.Locks = append(s.Locks, LockSummary{
			ID:   lockKey("futex", class, addrHex),
			Kind: "futex", Class: class, Address: addrHex, Symbol: futexSymbol(fa.fw.Location), Module: fa.fw.Location.Module,
			Waiters: fa.peak, AvgWaiters: round3(float64(fa.waiterSum) / float64(l.samples)),
			BlockedShare: round3(float64(fa.samples) / float64(l.samples)), WaiterThreads: a.tidNames(fa.peakWaitTIDs),
			FutexKind: string(fa.fw.Kind),
		})
	}
	sortLocks(s.Locks)
	sort.Slice(s.FutexWaits, func(i, j int) bool {
		if s.FutexWaits[i].Waiters != s.FutexWaits[j].Waiters {
			return s.FutexWaits[i].Waiters > s.FutexWaits[j].Waiters
		}
		return s.FutexWaits[i].Address < s.FutexWaits[j].Address
	})

	if c := l.conns; c != nil {
		cs := &ConnectionSummary{Established: c.Established, ByPort: map[string]int{}, Listening: append([]int{}, c.Listening...), Peers: c.Peers}
		for p, n := range c.ByLocalPort {
			cs.ByPort[fmt.Sprint(p)] = n
		}
		s.Connections = cs
		if c.Established > 0 {
			s.ThreadsPerConnection = &ThreadsPerConnection{Ratio: round3(float64(l.lastThreads) / float64(c.Established))}
		}
	}
	var miss []string
	for m := range l.missing {
		miss = append(miss, m)
	}
	sort.Strings(miss)
	for _, m := range miss {
		s.Warnings = append(s.Warnings, missingHint(m))
	}
}

// missingHint says once what could not be read and how to get it.
func missingHint(file string) string {
	switch file {
	case "syscall":
		return "could not read /proc/<pid>/task/*/syscall (needs ptrace rights over the target): native futex hotspots are missing; run ctprof as root or as the target's user"
	case "fd":
		return "could not read /proc/<pid>/fd (needs the target's user or root): connection counts are missing"
	case "wchan":
		return "could not read /proc/<pid>/task/*/wchan: kernel wait channels are missing"
	}
	return fmt.Sprintf("could not read /proc/<pid>/task/*/%s for lack of permission; run ctprof as root or as the target's user", file)
}

// tidNames turns thread ids into "name (tid N)".
func (a *Aggregator) tidNames(tids []int) []string {
	out := make([]string, 0, len(tids))
	for i, tid := range tids {
		if i == 10 {
			break
		}
		name := ""
		for k, ta := range a.live.threads {
			if k.tid == tid {
				name = ta.name
				break
			}
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s (tid %d)", name, tid)))
	}
	return out
}

// futexSymbol renders a futex address's symbol with its place,
// "contended_mutex (app+0x4040)"; nil when no symbol covers it.
func futexSymbol(l procfs.Location) *string {
	if l.Symbol == "" {
		return nil
	}
	return strPtr(l.String())
}

func strPtrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }
