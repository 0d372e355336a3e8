package snapshot

import (
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// FutexTrace is what the kernel counted of a native target's futex waits
// since the previous batch: every blocking futex(2) call of its threads,
// from the syscall tracepoints through perf_event_open, when ctprof runs
// with the privilege (root or CAP_PERFMON) — the native counterpart of
// the waits a JVM's Flight Recorder measures. At low rates every call is
// counted and timed (Exact); at high rates the calls are traced in
// sampling windows, and the counts are estimates scaled from the windows
// to the whole time (TracedShare says how much was timed).
type FutexTrace struct {
	// Elapsed is the time the batch covers.
	Elapsed time.Duration
	// Calls are the blocking futex calls of the target's threads in the
	// batch (exact when Exact), Traced those timed.
	Calls       float64
	Exact       bool
	Traced      uint64
	TracedShare float64
	// Lost counts records the kernel dropped (full rings): those calls
	// are counted but not timed.
	Lost uint64
	// Cost is the CPU time ctprof spent reading and pairing the records.
	Cost time.Duration
	// Futexes are the waits by futex address.
	Futexes []TracedFutex
}

// TracedFutex is one futex address's waits in a FutexTrace batch.
type TracedFutex struct {
	Address  uint64
	Location symbolize.Location
	// Kind classes the waits as a lock's or a condition's, as for a
	// sampled futex wait (procfs.ClassifyFutex).
	Kind FutexKind
	Op   string
	// Waits estimates the calls that slept (scaled to the exact counts);
	// Traced is the calls timed, TimedOut those that ended by their
	// timeout.
	Waits    float64
	Traced   int
	TimedOut int
	// Total and Max are the timed waits' time in the kernel; Durations a
	// uniform sample of them, sorted.
	Total, Max time.Duration
	Durations  []time.Duration
	// TIDs are threads that waited (at most 32).
	TIDs []int
	// Stacks are some waiters' stacks at the call, innermost first.
	Stacks [][]symbolize.StackFrame
}

// FastReads is what fast repeated reads of a few threads' system calls
// saw between two samples, when the kernel's count of futex waits is not
// available (no root or CAP_PERFMON): the threads whose voluntary context
// switches say they block far more often than a sample can see, read
// Rounds times a fraction of a millisecond apart.
type FastReads struct {
	// Rounds is how many times each thread was read, Spacing the time
	// between rounds, Took the time the reads took.
	Rounds  int
	Spacing time.Duration
	Took    time.Duration
	// Threads are the threads read; BlocksPerSecond their voluntary
	// switches a second since the previous sample, by thread.
	Threads         []int
	BlocksPerSecond []float64
	// Futexes are the futex waits the reads caught, by address.
	Futexes []FastFutex
}

// FastFutex is one futex address the fast reads caught threads waiting
// on.
type FastFutex struct {
	Address  uint64
	Location symbolize.Location
	Kind     FutexKind
	Op       string
	// Sightings is how many of the reads found a thread waiting here;
	// TIDs the threads (sorted).
	Sightings int
	TIDs      []int
}
