package sample

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ctprof/ctprof/internal/futextrace"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// ExactWaits says whether a native target's futex waits are counted by
// the kernel (internal/futextrace: the syscall tracepoints through
// perf_event_open, which needs root or CAP_PERFMON).
type ExactWaits int

// The modes of ExactWaits.
const (
	// ExactOff samples /proc only (the zero value, for library callers).
	ExactOff ExactWaits = iota
	// ExactAuto counts them where the privilege allows, and otherwise
	// says so once and samples /proc.
	ExactAuto
	// ExactOn counts them or fails.
	ExactOn
)

// exactStackEvery takes the user stack of every Nth blocking futex call,
// so the waits the samples miss still have a site; the tracer keeps a few
// per futex per batch.
const exactStackEvery = 64

// maxExactThreads bounds the threads the tracer follows: each costs a
// ring of the kernel's (68 KB with stacks), so 2,000 threads take 136 MB.
// A bigger target is sampled (and read fast) instead, and one that grows
// past it mid-run is traced on its first 2,000 threads, which the summary
// says.
const maxExactThreads = 2000

// exactBudget shares maxExactThreads among the samplers of one ctprof:
// serve samples many targets, and the kernel rings of all of them must
// stay within the memory bound. Each sampler traces what the others leave.
var exactBudget = struct {
	sync.Mutex
	traced map[*Sampler]int
}{traced: map[*Sampler]int{}}

// exactClaim sets the threads s traces to want, or to what the other
// samplers leave when that is less, and returns it; 0 releases s's share.
func (s *Sampler) exactClaim(want int) int {
	exactBudget.Lock()
	defer exactBudget.Unlock()
	room := maxExactThreads
	for o, n := range exactBudget.traced {
		if o != s {
			room -= n
		}
	}
	got := min(want, max(room, 0))
	if got == 0 {
		delete(exactBudget.traced, s)
	} else {
		exactBudget.traced[s] = got
	}
	return got
}

// exactBudgetNote says why a grown target's threads are not all traced.
func exactBudgetNote(got int) string {
	if got < maxExactThreads {
		return fmt.Sprintf("at most %d across its targets: each thread costs a kernel ring of 68 KB", maxExactThreads)
	}
	return "each thread costs a kernel ring of 68 KB"
}

// exactBudgetText says why a target's threads are not traced: "more than
// the " comes before it.
func exactBudgetText(got int) string {
	if got < maxExactThreads {
		return fmt.Sprintf("%d whose futex waits ctprof can still count (%d at most across its targets: each thread costs a kernel ring of 68 KB)", got, maxExactThreads)
	}
	return fmt.Sprintf("%d whose futex waits ctprof counts (each costs a kernel ring of 68 KB)", maxExactThreads)
}

// exactState is the sampler's futex tracer; nil tracer without one.
type exactState struct {
	tracer *futextrace.Tracer
	tids   []int
	capped bool // said that the threads past maxExactThreads are not traced
}

// openExactWaits starts the tracer for a native target as mode asks. An
// error is returned only for ExactOn; under ExactAuto a host that cannot
// trace leaves "futex-trace" among the snapshots' Missing, so the summary
// can say what the privilege would add.
func (s *Sampler) openExactWaits(mode ExactWaits) error {
	if mode == ExactOff || s.target.Kind != snapshot.KindNative {
		if mode == ExactOn && s.target.Kind != snapshot.KindNative {
			return fmt.Errorf("--exact-waits on: pid %d is a JVM; exact futex waits are for native processes (a JVM's waits: --jfr)", s.opts.PID)
		}
		return nil
	}
	if s.opts.Count == 1 && mode == ExactAuto {
		// A one-shot has no interval to count waits over, and opening
		// the events of a thousand threads takes a second.
		return nil
	}
	if s.fs.Root() != "/proc" && s.fs.Root() != "" {
		if mode == ExactOn {
			return fmt.Errorf("--exact-waits on: the kernel's tracepoints see this host's processes, not those under --proc-root %s", s.fs.Root())
		}
		return nil
	}
	n := s.fs.TaskCount(s.opts.PID)
	if got := s.exactClaim(n); got < n {
		s.exactClaim(0)
		if mode == ExactOn {
			return fmt.Errorf("--exact-waits on: pid %d has %d threads, more than the %s", s.opts.PID, n, exactBudgetText(got))
		}
		s.notes = append(s.notes, fmt.Sprintf("exact futex waits: pid %d has %d threads, more than the %s; its futex waits are sampled", s.opts.PID, n, exactBudgetText(got)))
		return nil
	}
	t, err := futextrace.Open(s.opts.PID, futextrace.Options{StackEvery: exactStackEvery})
	if err != nil {
		s.exactClaim(0)
		if mode == ExactOn {
			return fmt.Errorf("--exact-waits on: %w", err)
		}
		var fe *futextrace.Error
		if errors.As(err, &fe) {
			s.exactMissing = fe.Error()
		} else {
			s.exactMissing = err.Error()
		}
		return nil
	}
	s.exact.tracer = t
	return nil
}

// readExactWaits follows the sweep's threads and takes the tracer's batch
// into the snapshot, each futex named and classed as the sweep's are, the
// stacks the kernel copied unwound.
func (s *Sampler) readExactWaits(snap *snapshot.Snapshot, threads []snapshot.OSThread) {
	t := s.exact.tracer
	if t == nil {
		return
	}
	s.exact.tids = s.exact.tids[:0]
	limit := s.exactClaim(len(threads))
	for i := range threads {
		if len(s.exact.tids) == limit {
			if !s.exact.capped {
				s.exact.capped = true
				snap.Errors = append(snap.Errors, fmt.Sprintf("exact futex waits: the target grew to %d threads; ctprof traces the first %d of them (%s)", len(threads), limit, exactBudgetNote(limit)))
			}
			break
		}
		s.exact.tids = append(s.exact.tids, threads[i].TID)
	}
	if err := t.Sync(s.exact.tids); err != nil {
		snap.Errors = append(snap.Errors, "exact futex waits: "+err.Error())
	}
	b := t.Read()
	ft := &snapshot.FutexTrace{
		Elapsed: b.Elapsed, Calls: b.Calls, Exact: b.Exact, Traced: b.Traced, TracedShare: b.TracedShare,
		Lost: b.Lost, Cost: b.Cost,
	}
	sampled := make(map[uint64]snapshot.FutexKind, len(snap.Futexes))
	for _, fw := range snap.Futexes {
		sampled[fw.Address] = fw.Kind
	}
	owners := s.exactOwners(threads)
	for _, f := range b.Futexes {
		o := owners.of(f.PID)
		addr := f.Addr
		if owners.tree != nil {
			addr = owners.tree.wordKey(o.s.sym, f.Addr, f.Private, o.tag) // treewords.go
		}
		tf := snapshot.TracedFutex{
			Address: addr, Op: procfs.FutexOpName(uint64(f.Op)),
			Waits: f.Waits, Traced: f.Traced - f.AgainTraced, TimedOut: f.TimedOut,
			Total: f.Total, Max: f.Max, Durations: f.Durations, TIDs: f.TIDs,
		}
		tf.Location = o.names.Name(f.Addr)
		kind, ok := sampled[addr]
		if !ok {
			kind = procfs.ClassifyFutex(uint64(f.Op), f.Val, tf.Location)
		}
		tf.Kind = kind
		for _, st := range f.Stacks {
			so := owners.of(st.PID).s
			if frames := so.unwinder().Unwind(st.Regs, copyThenLive{st.Memory, so.mem}, symbolize.MaxStackFrames); len(frames) > 0 {
				tf.Stacks = append(tf.Stacks, frames)
			}
		}
		ft.Futexes = append(ft.Futexes, tf)
	}
	snap.FutexTrace = ft
}

// exactOwner is what names and unwinds the traced futexes of one process:
// its sampler, its threads' namer, and the tag its private words carry in
// a tree.
type exactOwner struct {
	s     *Sampler
	names *procfs.FutexNamer
	tag   uint64
}

// exactOwnerSet finds the owner of a traced futex by its process.
type exactOwnerSet struct {
	root    exactOwner
	threads []snapshot.OSThread
	tree    *treeState
	by      map[int]exactOwner
}

func (s *Sampler) exactOwners(threads []snapshot.OSThread) *exactOwnerSet {
	set := &exactOwnerSet{threads: threads}
	rootThreads := threads
	if s.tree != nil && s.tree.on {
		set.tree = s.tree
		rootThreads = processThreads(threads, s.opts.PID)
	}
	set.root = exactOwner{s: s, names: procfs.NewFutexNamer(rootThreads, s.sym)}
	return set
}

// of is pid's owner: a member of the tree, else the target.
func (set *exactOwnerSet) of(pid int) exactOwner {
	if set.tree == nil {
		return set.root
	}
	if o, ok := set.by[pid]; ok {
		return o
	}
	m := set.tree.members[pid]
	if m == nil {
		return set.root
	}
	o := exactOwner{s: m.s, names: procfs.NewFutexNamer(processThreads(set.threads, pid), m.s.sym), tag: m.index << privateTagShift}
	if set.by == nil {
		set.by = map[int]exactOwner{}
	}
	set.by[pid] = o
	return o
}

// processThreads is the run of a tree's sample's threads of process pid
// (the merge lists each process's threads together).
func processThreads(threads []snapshot.OSThread, pid int) []snapshot.OSThread {
	start := -1
	for i := range threads {
		switch {
		case threads[i].PID == pid && start < 0:
			start = i
		case threads[i].PID != pid && start >= 0:
			return threads[start:i]
		}
	}
	if start < 0 {
		return nil
	}
	return threads[start:]
}

// unwinder is the sampler's native stack unwinder, made on first use.
func (s *Sampler) unwinder() *symbolize.Unwinder {
	if s.stacks.unwinder == nil {
		s.stacks.unwinder = symbolize.NewUnwinder(s.fs.Target(s.opts.PID))
	}
	return s.stacks.unwinder
}

// closeExactWaits stops the tracer.
func (s *Sampler) closeExactWaits() error {
	if s.exact.tracer == nil {
		return nil
	}
	err := s.exact.tracer.Close()
	s.exact.tracer = nil
	s.exactClaim(0)
	return err
}

// copyThenLive reads a waiter's stack from the copy the kernel took at
// its futex call, and what lies outside the copy (the code the unwinder's
// stack scan checks for a call before a return address) through
// /proc/<pid>/mem.
type copyThenLive struct {
	copy symbolize.StackMemory
	live *procfs.MemReader
}

func (m copyThenLive) ReadStack(addr uint64, b []byte) bool {
	return m.copy.ReadStack(addr, b) || m.live.ReadStack(addr, b)
}
