package analysis

import (
	"slices"
	"sort"
	"strings"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// PoolName normalises a thread name to its pool: every run of digits
// becomes N, so "pool-3-thread-17" belongs to "pool-N-thread-N".
func PoolName(name string) string {
	if strings.IndexAny(name, "0123456789") < 0 {
		return name // no digits: the name is its own pool
	}
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

// appendPoolName appends PoolName(name) to b, for a caller that looks the
// pool up before it allocates one.
func appendPoolName(b []byte, name string) []byte {
	inDigits := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= '0' && c <= '9' {
			if !inDigits {
				b = append(b, 'N')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b = append(b, c)
	}
	return b
}

// poolAgg follows one pool over a live run: its size against the number
// of connections, to tell which pools grow with the users.
type poolAgg struct {
	fit      linearFit
	lastSeen int
}

// connAgg relates the thread count to the connection count over the run.
type connAgg struct {
	fit linearFit
}

// serAcc accumulates, for a lock, the pool most of its waiters belong to:
// per sample, how many of the pool's threads exist, run, and queue on the
// lock.
type serAcc struct {
	samples                    int
	threads, running, queueing int
}

// addPools counts the live sample's threads by pool, fits pool sizes
// against connections, and accumulates serialization for futex locks.
func (a *Aggregator) addPools(s *snapshot.Snapshot, futexWaiters map[string][]int) {
	o := a.os
	if s.Connections == nil && len(futexWaiters) == 0 {
		return // nothing reads the pools' sizes
	}
	size := map[string]int{}
	running := map[string]int{}
	for i := range s.Threads {
		p := o.cur[i].pool
		size[p]++
		if s.Threads[i].State == 'R' {
			running[p]++
		}
	}
	if s.Connections != nil {
		conns := float64(s.Connections.Established)
		a.conns.fit.add(conns, float64(len(s.Threads)))
		for p, n := range size {
			pa := a.pools[p]
			if pa == nil {
				if len(a.pools) >= a.opts.MaxPools {
					continue
				}
				pa = &poolAgg{}
				a.pools[p] = pa
			}
			pa.fit.add(conns, float64(n))
			pa.lastSeen = o.samples
		}
		// A pool absent in this sample has size zero now.
		for _, pa := range a.pools {
			if pa.lastSeen != o.samples {
				pa.fit.add(conns, 0)
			}
		}
	}
	var poolOf map[int]string
	if len(futexWaiters) > 0 {
		poolOf = make(map[int]string, len(s.Threads))
		for i := range s.Threads {
			poolOf[s.Threads[i].TID] = o.cur[i].pool
		}
	}
	for id, tids := range futexWaiters {
		pools := make([]string, 0, len(tids))
		for _, tid := range tids {
			pools = append(pools, poolOf[tid])
		}
		p, q := dominant(pools)
		a.noteSerialization(id, p, size[p], running[p], q)
	}
}

// addSerialization does for Java locks what addPools does for futexes: the
// waiters' dominant pool, how many of its threads are RUNNABLE (outside an
// I/O wait) and how many queue.
//
// A thread that is entering the monitor shows RUNNABLE too: HotSpot spins
// a while before it blocks, and only a blocked thread prints "waiting to
// lock". Its stack is a waiter's, or, for a synchronized method (whose
// frame is not yet on the stack while it spins), a waiter's without the
// top frame. Such a thread that does not hold the lock is not counted as
// running for that lock: in a contended SyncSingleton, a third of the
// dumps showed one or two of them beside the owner. The other way round,
// a thread that has just taken the lock may still print BLOCKED (with
// "- locked" where it waited): an owner that waits on nothing counts as
// running.
func (a *Aggregator) addSerialization(tick dumpTick) {
	if len(tick.lockWaiters) == 0 {
		return
	}
	size := map[string]int{}
	var runnable []int // indexes of the RUNNABLE threads outside an I/O wait
	for i := range tick.dump.Threads {
		t := &tick.dump.Threads[i]
		size[tick.pools[i]]++
		if t.State == threaddump.StateRunnable && (len(t.Frames) == 0 || !isIdleFrame(t.Frames[0].String())) {
			runnable = append(runnable, i)
		}
	}
	hashes := make(map[int]uint64, len(runnable)) // stackHash by thread index, computed once
	for id, ws := range tick.lockWaiters {
		pools := make([]string, 0, len(ws))
		entering := map[uint64]bool{}
		for _, w := range ws {
			pools = append(pools, PoolName(w.Name))
			if len(w.Frames) > 0 {
				entering[stackHash(w.Frames)] = true
			}
			if len(w.Frames) > 1 {
				entering[stackHash(w.Frames[1:])] = true
			}
		}
		p, q := dominant(pools)
		running := 0
		for _, i := range runnable {
			if tick.pools[i] != p {
				continue
			}
			t := &tick.dump.Threads[i]
			h, ok := hashes[i]
			if !ok {
				h = stackHash(t.Frames)
				hashes[i] = h
			}
			if len(t.Frames) > 0 && entering[h] && !slices.Contains(tick.lockOwners[id], t) {
				continue
			}
			running++
		}
		for _, o := range tick.lockOwners[id] {
			if o.State == threaddump.StateBlocked && tick.waitsOn[o] == "" && PoolName(o.Name) == p {
				running++
			}
		}
		a.noteSerialization(id, p, size[p], running, q)
	}
}

func (a *Aggregator) noteSerialization(lockID, pool string, threads, running, queueing int) {
	la := a.locks[lockID]
	if la == nil || pool == "" {
		return
	}
	if la.ser == nil {
		la.ser = map[string]*serAcc{}
	}
	acc := la.ser[pool]
	if acc == nil {
		if len(la.ser) >= 8 {
			return
		}
		acc = &serAcc{}
		la.ser[pool] = acc
	}
	acc.samples++
	acc.threads += threads
	acc.running += running
	acc.queueing += queueing
}

// dominant returns the most common value and how often it occurs.
func dominant(xs []string) (string, int) {
	counts := map[string]int{}
	for _, x := range xs {
		counts[x]++
	}
	best, n := "", 0
	for k, v := range counts {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best, n
}

// liveThreadPools groups the live threads by pool with their CPU and switch
// rates over the run.
func (a *Aggregator) liveThreadPools(wall float64) []PoolSummary {
	by := map[string]*PoolSummary{}
	var p *PoolSummary
	for _, ta := range a.os.latest() {
		// The latest sample lists threads in tid order, in which a pool's
		// threads mostly follow one another: one map lookup per run.
		if name := ta.pool; p == nil || p.Name != name {
			if p = by[name]; p == nil {
				p = &PoolSummary{Name: name, States: map[string]int{}}
				by[name] = p
			}
		}
		p.Threads++
		p.States[osStateName(ta.state)]++
		d := ta.last.sub(ta.base)
		w := ta.lstT.Sub(ta.firstT).Seconds()
		if wall > 0 {
			p.CPUPercent += 100 * d.cpu.Seconds() / wall
		}
		if w > 0 {
			p.VoluntaryPerSecond += float64(d.voluntary) / w
			p.InvoluntaryPerSecond += float64(d.involuntary) / w
		}
	}
	out := make([]PoolSummary, 0, len(by))
	for _, p := range by {
		p.CPUPercent, p.VoluntaryPerSecond, p.InvoluntaryPerSecond = round1(p.CPUPercent), round1(p.VoluntaryPerSecond), round1(p.InvoluntaryPerSecond)
		out = append(out, *p)
	}
	sortPools(out)
	return out
}

func sortPools(out []PoolSummary) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Threads != out[j].Threads {
			return out[i].Threads > out[j].Threads
		}
		return out[i].Name < out[j].Name
	})
}
