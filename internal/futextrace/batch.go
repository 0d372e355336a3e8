package futextrace

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// Futex operations without their flags (linux/futex.h) that block.
const (
	OpWait          = 0
	OpLockPI        = 6
	OpWaitBitset    = 9
	OpWaitRequeuePI = 11
	OpLockPI2       = 13

	flagPrivate  = 128
	flagRealtime = 256
	opMask       = 0x7f
)

// blockingOps are the operations whose calls may sleep.
var blockingOps = []int{OpWait, OpLockPI, OpWaitBitset, OpWaitRequeuePI, OpLockPI2}

// blocking reports whether a futex(2) op argument may sleep.
func blocking(op uint64) bool {
	return slices.Contains(blockingOps, int(op&opMask))
}

// kernelFilter is the tracepoint filter that keeps the blocking calls.
// The ftrace grammar of Linux 6.x refuses a comparison of a masked field
// ("(op & 0x7f) == 0" is EINVAL), so the filter names each op with each
// combination of the private and realtime flags: 20 equalities.
func kernelFilter() string {
	s := ""
	for _, op := range blockingOps {
		for _, flags := range []int{0, flagPrivate, flagRealtime, flagPrivate | flagRealtime} {
			if s != "" {
				s += " || "
			}
			s += fmt.Sprintf("op == %d", op|flags)
		}
	}
	return s
}

// OpName names a futex op without its flags.
func OpName(op int) string {
	switch op & opMask {
	case OpWait:
		return "FUTEX_WAIT"
	case OpLockPI:
		return "FUTEX_LOCK_PI"
	case OpWaitBitset:
		return "FUTEX_WAIT_BITSET"
	case OpWaitRequeuePI:
		return "FUTEX_WAIT_REQUEUE_PI"
	case OpLockPI2:
		return "FUTEX_LOCK_PI2"
	}
	return fmt.Sprintf("futex op %d", op&opMask)
}

// Futex is what one futex address's waits were in a Batch.
//
// Each thread's blocking calls are counted by a counting event: exactly
// at low rates, in the sampling windows at high ones (scaled to the
// thread's time, Batch.Exact false). Timings come from the calls traced
// (all at low rates, those starting inside the windows at high ones).
// Each traced call of thread T counts as calls(T)/traced(T) calls, so
// Waits and Again estimate all calls while Traced, Woken, TimedOut,
// Interrupted, Failed, AgainTraced, Total, Max and Durations are of the
// traced ones.
type Futex struct {
	// Addr is the futex word's address in the target.
	Addr uint64
	// PID is the process of the calls, whose address Addr is: each
	// process's calls are a futex of their own, also on a shared word
	// (no FUTEX_PRIVATE_FLAG: Private false), which the processes of a
	// tree may map at addresses of their own; the caller joins them by
	// their mappings.
	PID     int
	Private bool
	// Op is the futex(2) op argument of the last traced call, flags
	// included (OpName(Op) names it; Op&128 is FUTEX_PRIVATE_FLAG).
	Op int
	// Val is the value that call expected the word to hold (with Op and
	// the address's location, procfs.ClassifyFutex tells a lock from a
	// condition).
	Val uint64
	// Waits estimates the calls that went to sleep (every outcome but
	// EAGAIN), scaled to the exact counts.
	Waits float64
	// Again estimates the calls that returned EAGAIN at once: the word had
	// changed before the thread could sleep, so no wait happened. They are
	// kept out of Total, Max and Durations.
	Again float64
	// Traced is the number of calls traced, every outcome.
	Traced int
	// The traced calls by outcome: woken (or, for the PI ops, lock
	// acquired), timed out (ETIMEDOUT), interrupted by a signal (EINTR or
	// a restart), failed otherwise (EFAULT, EINVAL, EDEADLK...), and EAGAIN.
	Woken, TimedOut, Interrupted, Failed, AgainTraced int
	// Timed is the number of traced calls that had a timeout.
	Timed int
	// Total and Max are the traced sleeping calls' time in the kernel,
	// from the syscall's entry to its exit.
	Total, Max time.Duration
	// Durations is a uniform sample (at most Options.MaxDurations) of the
	// traced sleeping calls' durations, sorted: Quantile reads p50, p99.
	Durations []time.Duration
	// TIDs are threads that waited (at most 32, sorted).
	TIDs []int
	// Stacks are some waiters' registers and stack copies, taken at the
	// call's entry (Options.StackEvery).
	Stacks []Stack
}

// P50 and P99 are quantiles of Durations.
func (f Futex) P50() time.Duration { return Quantile(f.Durations, 0.5) }

// P99 is the 99th percentile of the traced waits.
func (f Futex) P99() time.Duration { return Quantile(f.Durations, 0.99) }

// Quantile returns the q-quantile (0..1) of sorted durations by the
// nearest rank; 0 for none.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	switch {
	case q <= 0:
		return sorted[0]
	case q >= 1:
		return sorted[len(sorted)-1]
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Stack is one waiter's user registers and a copy of its stack at the
// futex call's entry, for symbolize.Unwinder.Unwind(s.Regs, s.Memory, max).
type Stack struct {
	// PID is the waiter's process, TID the waiter.
	PID    int
	TID    int
	Regs   symbolize.Regs
	Memory *StackCopy
}

// StackCopy is the stack bytes a perf sample copied from SP upwards; it
// is a symbolize.StackMemory.
type StackCopy struct {
	SP   uint64
	Data []byte
}

// ReadStack fills b from the copy at addr; false when any byte of it is
// outside the copy.
func (s *StackCopy) ReadStack(addr uint64, b []byte) bool {
	if s == nil || addr < s.SP {
		return false
	}
	off := addr - s.SP
	if off > uint64(len(s.Data)) || uint64(len(b)) > uint64(len(s.Data))-off {
		return false
	}
	copy(b, s.Data[off:])
	return true
}

var _ symbolize.StackMemory = (*StackCopy)(nil)

// InProgress is a traced call that had not returned when the Batch was
// taken.
type InProgress struct {
	TID   int
	Addr  uint64
	Op    int
	Since time.Duration // how long it had been waiting
}

// Batch is what the tracer saw since the previous Read.
type Batch struct {
	// Elapsed is the time the batch covers.
	Elapsed time.Duration
	// Futexes are by total traced wait time, longest first.
	Futexes []Futex
	// Calls is the number of blocking futex calls of the target's traced
	// threads (every futex call when KernelFilter is false): exact when
	// Exact is set, else the calls Counted in the sampling windows scaled,
	// thread by thread, to the time between them.
	Calls   float64
	Counted uint64
	Exact   bool
	// Traced is the number of those calls whose entry was traced.
	Traced uint64
	// TracedShare is Traced/Calls (1 when there were no calls) and Share
	// the sampling windows' share of the time at the end of the batch
	// (1: every call traced).
	TracedShare, Share float64
	// Lost counts records the kernel dropped because a ring was full, Bad
	// those ctprof could not parse; both make some calls untimed.
	Lost, Bad uint64
	// TailDropped counts the records the kernel dropped after a tail event
	// had written the exit it was on for (the futex exits that followed
	// until the reader closed it): they cost no timing.
	TailDropped uint64
	// Throttled counts the kernel's throttling of a sampling event.
	Throttled uint64
	// Threads is the number of threads traced at the end of the batch.
	Threads int
	// KernelFilter is false when the kernel refused the tracepoint filter
	// and ctprof filters the blocking calls itself (every futex call is
	// then traced and counted).
	KernelFilter bool
	// Cost is the CPU time the tracer's goroutine used in the batch: the
	// reading and the pairing, like a dump's pause for the JVM.
	Cost time.Duration
	// Realtime says the reader ran at SCHED_FIFO 1 (see Options.NoRealtime).
	Realtime bool
	// InProgress are traced calls still waiting (at most 64).
	InProgress []InProgress
}

// sortFutexes orders by total time, then waits, then address.
func sortFutexes(fs []Futex) {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Waits != b.Waits {
			return a.Waits > b.Waits
		}
		return a.Addr < b.Addr
	})
}

func sortDurations(d []time.Duration) { slices.Sort(d) }
