// Package snapshot holds the model every mode produces and every consumer
// reads: a Snapshot is what ctprof knows about a target at one instant, and
// a Source yields them one after another. Live attach (internal/sample),
// thread dump files, JFR recordings and ctprof recordings
// (internal/source) are Sources; the one Aggregator in internal/analysis
// drains them. The package imports neither the JVM attach client nor the
// JFR reader, so the sinks and the analysis link neither.
package snapshot

import (
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// TargetKind says whether the target is a JVM or a native process.
type TargetKind string

// Target kinds.
const (
	KindJVM    TargetKind = "jvm"
	KindNative TargetKind = "native"
)

// Target identifies the profiled process.
type Target struct {
	PID  int
	Name string
	Kind TargetKind
	// CPUs is the number of CPUs the process may run on (its affinity).
	CPUs int
}

// Snapshot is one tick of one target.
type Snapshot struct {
	// Time is when the snapshot was taken (for dump files, the dump's own
	// timestamp; zero when the dump has none).
	Time   time.Time
	Target Target
	// Source names where the snapshot came from (a file name for offline
	// analysis), for messages.
	Source string
	// Interval is the time between samples the run asked for; zero for
	// dump files (the Aggregator then uses the time between snapshots).
	Interval time.Duration
	// Dump is the thread dump taken at this tick; nil on ticks without one.
	Dump *threaddump.Dump
	// DumpLocks is Dump.Locks(), when the sampler worked it out on a
	// second CPU while it finished the snapshot; nil otherwise (a
	// recording does not keep it: a replay works it out again).
	DumpLocks []*threaddump.LockInfo
	// DumpText is the dump as the JVM printed it, kept so a recording can
	// store it and a replay parse it again; nil when not kept.
	DumpText []byte
	// DumpCost is what taking the dump cost this tick: the request's wall
	// time, and the safepoint time the JVM spent on it (the pause ctprof
	// caused in the target), when known.
	DumpCost *DumpCost
	// JVM holds the JVM's own counters (hsperfdata); nil for native
	// targets or when unreadable.
	JVM *JVMCounters

	// Waits are the waits the JVM measured itself (JFR) since the previous
	// batch; GCPauses its garbage collections. Nil without a recording.
	Waits    []WaitEvent
	GCPauses []GCPause
	// JFRPause is the safepoint time this tick's read of the JFR
	// recording cost the JVM (JFR.dump), when known; zero otherwise.
	JFRPause time.Duration
	// CPULoads are the JVM's own CPU load samples from a .jfr file (a
	// live run has /proc's figures instead, and does not record them).
	CPULoads []CPULoad

	// Threads is the /proc sample of every OS thread; nil when the tick
	// has none (dump files).
	Threads []OSThread
	// Futexes groups the threads blocked in futex(2) by address.
	Futexes []FutexWait
	// Connections are the target's established TCP connections; nil when
	// not sampled.
	Connections *Connections
	// Host is system-wide context; nil when not sampled.
	Host *Host
	// Missing names what could not be read for lack of permission
	// ("syscall", "fd"), so the summary can say so once.
	Missing []string
	// Cost is how long taking this snapshot took.
	Cost time.Duration
	// Errors are the problems of this tick that did not stop sampling
	// (a failed dump request, an unreadable file), for the summary and the
	// error counter.
	Errors []string

	// FutexTrace is what the kernel counted of a native target's futex
	// waits since the previous sample (attach as root: --exact-waits);
	// nil without it.
	FutexTrace *FutexTrace
	// FastReads is what fast reads of the threads that block most often
	// caught, when there is no FutexTrace; nil when none were made.
	FastReads *FastReads

	// Stopped is set when every thread of the process was stopped at this
	// tick (hung.go); NoAnswer when the JVM has not answered a request
	// within its deadline. Neither is kept in recordings.
	Stopped  *Stopped
	NoAnswer *NoAnswer
}

// DumpCost is what one thread dump cost.
type DumpCost struct {
	// Method says how the dump was taken: "attach", "jcmd",
	// "dump_to_file".
	Method string
	// Wall is the time from request to the last byte.
	Wall time.Duration
	// Pause is the safepoint time the JVM accumulated during the request
	// (from hsperfdata); zero when unknown.
	Pause time.Duration
	// Early says the request was sent while ctprof started, before its
	// command line was parsed (jvm.EarlyDump).
	Early bool
}

// JVMCounters are a JVM's hsperfdata counters at one instant. Cumulative
// counters count since the JVM started.
type JVMCounters struct {
	LiveThreads    int64
	DaemonThreads  int64
	PeakThreads    int64
	StartedThreads int64
	Safepoints     int64
	SafepointTime  time.Duration
	GCTime         time.Duration
	// Sync holds the sun.rt._sync_* monitor counters (JDK 8 to 21) by
	// name without the prefix ("ContendedLockAttempts", "Parks", ...).
	Sync map[string]int64
}

// The /proc parts of a snapshot are procfs's types: the reader fills them
// in place, so the sweep does not copy every thread into a second struct.
type (
	// OSThread is one kernel thread of the target at one instant.
	OSThread = procfs.Thread
	// FutexWait is a set of threads blocked in futex(2) on one address.
	FutexWait = procfs.FutexWait
	// FutexKind tells contention from idle waiting.
	FutexKind = procfs.FutexKind
	// Connections are the target's TCP connections.
	Connections = procfs.Connections
	// Host is system-wide context.
	Host = procfs.Host
)

// Futex kinds.
const (
	FutexLock      = procfs.FutexLock
	FutexCondition = procfs.FutexCondition
	FutexUnknown   = procfs.FutexUnknown
)
