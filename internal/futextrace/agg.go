package futextrace

import (
	"slices"
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// Errno values a futex(2) exit returns, negated (asm-generic/errno*.h
// and the kernel's restart codes).
const (
	eintr           = 4
	eagain          = 11
	etimedout       = 110
	erestartsys     = 512
	erestartnointr  = 513
	erestartnohand  = 514
	erestartrestart = 516
)

// perTID is one thread's traced calls on one futex.
type perTID struct{ waits, again int }

// futexAcc accumulates one futex's traced calls in the current batch.
type futexAcc struct {
	f    Futex
	tids map[int]*perTID
	seen int // sleeping calls seen, for the reservoir
}

// word is a futex word of one process: a private word (FUTEX_PRIVATE_FLAG)
// is its process's, and so is a shared one as far as the tracer can tell:
// whether two processes' shared words are one (the same object and
// offset of shared memory, at one address or at addresses of their own)
// takes their mappings, which the caller reads (sample's treewords.go).
type word struct {
	pid     int
	addr    uint64
	private bool
}

// wordOf is the word a call of process pid on addr with op waits on.
func wordOf(pid int, addr, op uint64) word {
	return word{pid: pid, addr: addr, private: op&flagPrivate != 0}
}

// aggregate holds the current batch's traced calls by futex word.
type aggregate struct {
	futexes      map[word]*futexAcc
	maxDurations int
	maxStacks    int
	rng          uint64
}

func newAggregate(maxDurations, maxStacks int) *aggregate {
	return &aggregate{futexes: map[word]*futexAcc{}, maxDurations: maxDurations, maxStacks: maxStacks, rng: uint64(time.Now().UnixNano()) | 1}
}

// acc is w's accumulator; pid is the process of the call being booked.
func (a *aggregate) acc(w word, pid int) *futexAcc {
	f := a.futexes[w]
	if f == nil {
		f = &futexAcc{f: Futex{Addr: w.addr, PID: pid, Private: w.private}, tids: map[int]*perTID{}}
		a.futexes[w] = f
	}
	return f
}

// rand is xorshift64: the reservoir needs speed, not quality.
func (a *aggregate) rand() uint64 {
	a.rng ^= a.rng << 13
	a.rng ^= a.rng >> 7
	a.rng ^= a.rng << 17
	return a.rng
}

// complete books one traced call: its entry e, its return value ret (a
// negated errno or a result) and its duration d.
func (a *aggregate) complete(tid int, e pendingCall, ret int64, d time.Duration) {
	acc := a.acc(wordOf(e.pid, e.uaddr, e.op), e.pid)
	f := &acc.f
	f.Op, f.Val = int(e.op), e.val
	f.Traced++
	pt := acc.tids[tid]
	if pt == nil {
		pt = &perTID{}
		acc.tids[tid] = pt
	}
	if e.timed {
		f.Timed++
	}
	switch ret {
	case -eagain:
		f.AgainTraced++
		pt.again++
		return
	case -etimedout:
		f.TimedOut++
	case -eintr, -erestartsys, -erestartnointr, -erestartnohand, -erestartrestart:
		f.Interrupted++
	default:
		if ret < 0 {
			f.Failed++
		} else {
			f.Woken++
		}
	}
	pt.waits++
	f.Total += d
	f.Max = max(f.Max, d)
	acc.seen++
	switch {
	case len(f.Durations) < a.maxDurations:
		f.Durations = append(f.Durations, d)
	case a.maxDurations > 0:
		if i := a.rand() % uint64(acc.seen); i < uint64(a.maxDurations) {
			f.Durations[i] = d
		}
	}
}

// stack keeps a stack sample for addr while the futex has fewer than
// maxStacks.
func (a *aggregate) stack(w word, pid, tid int, regs symbolize.Regs, stack []byte) {
	acc := a.acc(w, pid)
	if len(acc.f.Stacks) >= a.maxStacks {
		return
	}
	acc.f.Stacks = append(acc.f.Stacks, Stack{PID: pid, TID: tid, Regs: regs, Memory: &StackCopy{SP: regs.SP, Data: slices.Clone(stack)}})
}

// futexes returns the batch's futexes with Waits and Again scaled by each
// thread's weight (its exact calls over its traced ones), and resets.
func (a *aggregate) take(weight func(tid int) float64) []Futex {
	out := make([]Futex, 0, len(a.futexes))
	for _, acc := range a.futexes {
		f := acc.f
		for tid, pt := range acc.tids {
			w := weight(tid)
			f.Waits += float64(pt.waits) * w
			f.Again += float64(pt.again) * w
			if len(f.TIDs) < 32 {
				f.TIDs = append(f.TIDs, tid)
			}
		}
		slices.Sort(f.TIDs)
		slices.Sort(f.Durations)
		out = append(out, f)
	}
	sortFutexes(out)
	clear(a.futexes)
	return out
}
