package sample

import (
	"cmp"
	"slices"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Fast reads: without the kernel's count of futex waits (no root or
// CAP_PERFMON), a thread that blocks thousands of times a second for
// microseconds each time is almost never caught blocked by a sample a
// second apart. Its voluntary context switches give it away: each is one
// block. Between samples the sampler reads the system call of such
// threads again and again, a fraction of a millisecond apart, and counts
// where they wait. Reading /proc/<tid>/syscall does not stop the target
// (the kernel reads another thread's registers it saved at its system
// call's entry), so the cost is ctprof's, a few microseconds a read.

const (
	// fastMinBlocks is the voluntary switches a second above which a
	// thread blocks too often and too briefly for the samples.
	fastMinBlocks = 1000
	// fastMaxThreads bounds the threads read, the most switching first.
	fastMaxThreads = 64
	// fastRounds reads each thread this many times per sample,
	// fastSpacing apart: 40 reads over about 8 ms.
	fastRounds  = 40
	fastSpacing = 200 * time.Microsecond
	// fastMaxShare bounds the time the reads take to this share of the
	// interval (with 64 threads, 2,560 reads of a few microseconds).
	fastMaxShare = 0.05
)

// threadKey is a thread's identity: its tid and start time.
type threadKey struct {
	tid   int
	start uint64
}

// fastState remembers each thread's voluntary switches at the previous
// sample.
type fastState struct {
	prev   map[threadKey]uint64
	prevAt time.Time
}

// fastReads reads, when the kernel's count is missing, the threads that
// block most often, and puts what they were caught waiting on into the
// snapshot. Nothing is done on the first sample (no rate yet), for a
// one-shot, or for a JVM (its threads park on their own condition
// variables; its dumps name the locks).
func (s *Sampler) fastReads(snap *snapshot.Snapshot, threads []snapshot.OSThread, now time.Time) {
	if s.exact.tracer != nil || s.target.Kind != snapshot.KindNative || s.opts.Count == 1 || s.member {
		return
	}
	prev, dt := s.fast.prev, now.Sub(s.fast.prevAt).Seconds()
	s.fast.prev = make(map[threadKey]uint64, len(threads))
	s.fast.prevAt = now
	type busy struct {
		tid  int
		rate float64
	}
	var picked []busy
	for i := range threads {
		t := &threads[i]
		k := threadKey{t.TID, t.StartTime}
		s.fast.prev[k] = t.Voluntary
		if v, ok := prev[k]; ok && dt > 0 && t.Voluntary >= v {
			if rate := float64(t.Voluntary-v) / dt; rate >= fastMinBlocks {
				picked = append(picked, busy{t.TID, rate})
			}
		}
	}
	if len(picked) == 0 {
		return
	}
	slices.SortFunc(picked, func(a, b busy) int { return cmp.Compare(b.rate, a.rate) })
	picked = picked[:min(len(picked), fastMaxThreads)]
	fr := &snapshot.FastReads{Spacing: fastSpacing}
	for _, p := range picked {
		fr.Threads = append(fr.Threads, p.tid)
		fr.BlocksPerSecond = append(fr.BlocksPerSecond, p.rate)
	}
	type seen struct {
		op, val uint64
		n       int
		tids    []int
	}
	caught := map[uint64]*seen{}
	start := time.Now()
	limit := time.Duration(fastMaxShare * float64(s.opts.Interval))
	var t procfs.Thread
	for fr.Rounds < fastRounds && time.Since(start) < limit {
		if fr.Rounds > 0 {
			time.Sleep(fastSpacing)
		}
		fr.Rounds++
		for _, p := range picked {
			if !s.threads.ReadSyscallOf(p.tid, &t) {
				continue
			}
			addr, op, val, ok := procfs.BlockingFutex(&t)
			if !ok {
				continue
			}
			c := caught[addr]
			if c == nil {
				c = &seen{op: op, val: val}
				caught[addr] = c
			}
			c.n++
			if !slices.Contains(c.tids, p.tid) {
				c.tids = append(c.tids, p.tid)
			}
		}
	}
	fr.Took = time.Since(start)
	names := procfs.NewFutexNamer(threads, s.sym)
	for addr, c := range caught {
		f := snapshot.FastFutex{Address: addr, Op: procfs.FutexOpName(c.op), Sightings: c.n, TIDs: c.tids, Location: names.Name(addr)}
		f.Kind = procfs.ClassifyFutex(c.op, c.val, f.Location)
		slices.Sort(f.TIDs)
		fr.Futexes = append(fr.Futexes, f)
	}
	slices.SortFunc(fr.Futexes, func(a, b snapshot.FastFutex) int {
		return cmp.Or(cmp.Compare(b.Sightings, a.Sightings), cmp.Compare(a.Address, b.Address))
	})
	snap.FastReads = fr
}
