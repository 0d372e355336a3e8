package snapshot

import "time"

// Stopped says that every thread of the process was stopped (kernel state
// T or t: SIGSTOP, job control, or a debugger holding it) when the tick's
// threads were read. A live sampler sends a stopped JVM no request.
type Stopped struct {
	// Tracer is the pid of the process tracing the target (TracerPid: a
	// debugger, strace), 0 when none; TracerName its name when readable.
	Tracer     int
	TracerName string
}

// NoAnswer describes a JVM that has not answered a request (a thread
// dump, a JFR command) within --dump-timeout: on this tick, or on an
// earlier one with no answer since. The request was abandoned; the live
// sampler sends no other until the JVM shows it can answer (its safepoint
// counters move), and samples /proc meanwhile.
type NoAnswer struct {
	// Request names what went unanswered first ("thread dump").
	Request string
	// Since is when that request was sent; For is how long the JVM had
	// not answered when the tick ended.
	Since time.Time
	For   time.Duration
	// Waited is how long the latest unanswered request waited before it
	// was abandoned.
	Waited time.Duration
	// Running are the threads the tick's /proc sweep found running (state
	// R), with the CPU each used while the JVM did not answer.
	Running []RunningThread
	// JavaThreads counts the sweep's threads that are not the JVM's own
	// (VM thread, GC, compilers, signal and attach threads).
	JavaThreads int
	// GCRunning is how long ago a collection began that had not ended
	// when the tick ended (hsperfdata: a collector's lastEntryTime after
	// its lastExitTime); zero when none was running or the JVM has no
	// hsperfdata. GCKnown says the counters were read.
	GCRunning time.Duration
	GCKnown   bool
	// VMThreadWakeups is how many times a second HotSpot's VM Thread was
	// put on a CPU, over a short window at the tick's end (-1: not
	// measured). While it brings the threads to a safepoint it sleeps a
	// millisecond at a time and checks again, about 1,000 times a second
	// (SafepointSynchronize's back-off, JDK 17 and 25); otherwise it wakes
	// only for its operations.
	VMThreadWakeups float64
}

// RunningThread is a thread found running while the JVM did not answer.
type RunningThread struct {
	TID  int
	Name string
	// CPU is the share of one CPU it used over Window (-1: not measured),
	// Queued the share of Window it waited for a CPU, runnable (-1: not
	// measured): on a busy host a thread that never stops may get little
	// CPU, and waits for it the rest of the time.
	CPU    float64
	Queued float64
	Window time.Duration
	// Internal says it is one of the JVM's own threads (by the latest
	// dump, or by HotSpot's thread names when no dump listed it); GC that
	// it is a garbage collector's (GC Thread#, G1, Z, Shenandoah threads,
	// or the VM Thread, which runs the serial collector).
	Internal bool
	GC       bool
}
