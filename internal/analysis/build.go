package analysis

import (
	"sort"
	"strings"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Summary computes the summary of everything added so far.
func (a *Aggregator) Summary() *Summary {
	s := &Summary{
		Schema:       SchemaVersion,
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
	}
	if !a.first.IsZero() {
		f, l := a.first, a.lastT
		s.FirstDump, s.LastDump = &f, &l
	}
	if d := a.last; d != nil {
		s.Threads = len(d.Threads)
		s.VM = d.VM
		for i := range d.Threads {
			s.States[stateName(d.Threads[i].State)]++
		}
		s.Pools = pools(d)
		s.StackGroups = stackGroups(d)
	}
	s.Locks = a.lockSummaries()
	s.Deadlocks = a.deadlockSummaries()
	s.ThreadCPU = a.threadCPU()
	s.StuckThreads = a.stuckThreads()
	s.Samples = a.snapshots
	a.liveSummary(s)
	s.Findings = findings(s)
	return s
}

func (a *Aggregator) lockSummaries() []LockSummary {
	out := []LockSummary{}
	for _, la := range a.locks {
		ls := LockSummary{
			ID:   lockKey(la.ref.Kind, la.ref.Class, la.ref.Address),
			Kind: la.ref.Kind, Class: la.ref.Class, Address: la.ref.Address,
			Owner: la.owner, OwnerFrame: la.ownerFrame, OwnerLockFrame: la.ownerLockFrame,
			Waiters:       la.peak,
			WaiterThreads: append([]string{}, la.waiterNames...),
		}
		if a.dumps > 0 {
			ls.AvgWaiters = round3(float64(la.waiterSum) / float64(a.dumps))
			ls.BlockedShare = round3(float64(la.dumpsBlocked) / float64(a.dumps))
		}
		if f := mostCommon(la.waitFrames); f != "" {
			ls.WaitFrame = strPtr(f)
		}
		out = append(out, ls)
	}
	sortLocks(out)
	return out
}

// sortLocks orders locks by peak waiters, then average, class and address.
func sortLocks(out []LockSummary) {
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Waiters != y.Waiters {
			return x.Waiters > y.Waiters
		}
		if x.AvgWaiters != y.AvgWaiters {
			return x.AvgWaiters > y.AvgWaiters
		}
		if x.Class != y.Class {
			return x.Class < y.Class
		}
		return x.Address < y.Address
	})
}

func mostCommon(m map[string]int) string {
	best, n := "", 0
	for k, v := range m {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best
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

// PoolName normalises a thread name to its pool: every run of digits
// becomes N, so "pool-3-thread-17" belongs to "pool-N-thread-N".
func PoolName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	inDigits := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= '0' && c <= '9' {
			if !inDigits {
				b.WriteByte('N')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteByte(c)
	}
	return b.String()
}

func pools(d *threaddump.Dump) []PoolSummary {
	by := map[string]*PoolSummary{}
	for i := range d.Threads {
		t := &d.Threads[i]
		n := PoolName(t.Name)
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
	sort.Slice(out, func(i, j int) bool {
		if out[i].Threads != out[j].Threads {
			return out[i].Threads > out[j].Threads
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// maxStackGroups bounds the identical-stack table.
const maxStackGroups = 20

func stackGroups(d *threaddump.Dump) []StackGroup {
	type group struct {
		g   StackGroup
		key string
	}
	by := map[string]*group{}
	var order []*group
	for i := range d.Threads {
		t := &d.Threads[i]
		if len(t.Frames) == 0 {
			continue
		}
		k := string(t.State) + "|" + stackKey(t)
		g := by[k]
		if g == nil {
			frames := make([]string, 0, len(t.Frames))
			for _, f := range t.Frames {
				frames = append(frames, f.String())
			}
			g = &group{key: k, g: StackGroup{State: stateName(t.State), Frames: frames}}
			by[k] = g
			order = append(order, g)
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

func (a *Aggregator) threadCPU() []ThreadCPU {
	out := []ThreadCPU{}
	if a.dumps < 2 {
		return out
	}
	for k, ta := range a.threads {
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
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPUSeconds != out[j].CPUSeconds {
			return out[i].CPUSeconds > out[j].CPUSeconds
		}
		return out[i].Thread < out[j].Thread
	})
	if len(out) > maxThreadCPU {
		out = out[:maxThreadCPU]
	}
	return out
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
	for k, ta := range a.threads {
		if ta.seen != a.dumps || !ta.sameStack || ta.topFrame == "" {
			continue
		}
		if ta.state != threaddump.StateBlocked && ta.state != threaddump.StateRunnable {
			continue // parked and waiting threads idle by design
		}
		if ta.state == threaddump.StateRunnable && isIdleFrame(ta.topFrame) {
			continue
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

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
