package analysis

import "time"

// SchemaVersion is the version of the JSON summary (docs/json.md). Fields
// may be added without a bump; renaming or removing one bumps it.
const SchemaVersion = 1

// Summary is everything the sinks print. It is computed by the Aggregator
// only; sinks format it and never compute statistics of their own.
type Summary struct {
	Schema int `json:"schema"`
	// Samples is the number of snapshots taken (live) or dumps read.
	Samples int `json:"samples"`
	// Target is the live process profiled; absent for dump files.
	Target *TargetSummary `json:"target,omitempty"`
	// DurationSeconds is the wall time between the first and last sample.
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	// Dumps is the number of thread dumps read.
	Dumps int `json:"dumps"`
	// Threads is the number of threads in the last dump, VM-internal
	// threads included.
	Threads int `json:"threads"`
	// States counts the threads of the last dump by Java state. VM-internal
	// threads have no Java state and are counted under "NONE".
	States map[string]int `json:"states"`
	// VM is the last dump's VM description.
	VM string `json:"vm,omitempty"`
	// FirstDump and LastDump are the dumps' timestamps when they have one.
	FirstDump *time.Time `json:"first_dump,omitempty"`
	LastDump  *time.Time `json:"last_dump,omitempty"`

	// OSStates counts the target's OS threads by kernel state in the last
	// live sample (running, sleeping, uninterruptible, ...).
	OSStates map[string]int `json:"os_states,omitempty"`
	// CPUPercent is the process's CPU use over the run (100 = one core);
	// compare with Target.CPUs.
	CPUPercent float64 `json:"cpu_percent,omitempty"`
	// RunQueueWaitShare is the share of the threads' runnable time spent
	// waiting for a CPU rather than running (schedstat).
	RunQueueWaitShare    float64               `json:"run_queue_wait_share,omitempty"`
	ContextSwitches      *ContextSwitchSummary `json:"context_switches,omitempty"`
	Host                 *HostSummary          `json:"host,omitempty"`
	Connections          *ConnectionSummary    `json:"connections,omitempty"`
	ThreadsPerConnection *ThreadsPerConnection `json:"threads_per_connection,omitempty"`
	SampleCost           *SampleCost           `json:"sample_cost,omitempty"`

	Locks []LockSummary `json:"locks"`
	// FutexWaits are native threads waiting on a condition (idle, not
	// contention), by futex address.
	FutexWaits   []FutexWaitSummary `json:"futex_waits,omitempty"`
	Deadlocks    []DeadlockSummary  `json:"deadlocks"`
	Pools        []PoolSummary      `json:"pools"`
	StackGroups  []StackGroup       `json:"stack_groups"`
	ThreadCPU    []ThreadCPU        `json:"thread_cpu"`
	StuckThreads []StuckThread      `json:"stuck_threads"`
	Findings     []Finding          `json:"findings"`
	// Warnings say what in the input looked wrong or was missing.
	Warnings []string `json:"warnings"`
	// Timelines are downsampled time series over the run, one per chart;
	// absent when the run has a single sample.
	Timelines []Timeline `json:"timelines,omitempty"`
}

// Timeline is one chart's worth of time series.
type Timeline struct {
	// ID is stable so outputs can be compared: threads_by_state,
	// context_switches, connections_threads, cpu, run_queue_wait.
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Unit   string   `json:"unit"`
	Series []Series `json:"series"`
}

// Series is one named line of a Timeline.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// Point is one value at one instant (Unix milliseconds).
type Point struct {
	T int64   `json:"t"`
	V float64 `json:"v"`
}

// LockSummary is one lock some thread queued on.
type LockSummary struct {
	// ID identifies the lock within this summary (kind, class and
	// address); FoldedStack.ByLock refers to it.
	ID string `json:"id"`
	// Kind is "monitor", "synchronizer" or (native targets) "futex".
	Kind    string `json:"kind"`
	Class   string `json:"class"`
	Address string `json:"address"`
	// Owner is the owning thread's name; null when the dump does not say.
	Owner *string `json:"owner"`
	// OwnerFrame is the frame the owner runs (its top frame); null when the
	// owner is unknown.
	OwnerFrame *string `json:"owner_frame"`
	// OwnerLockFrame is the owner's frame that acquired the lock.
	OwnerLockFrame *string `json:"owner_lock_frame"`
	// Waiters is the number of threads queued on the lock: in the one dump,
	// or the peak over a series.
	Waiters int `json:"waiters"`
	// AvgWaiters is the mean number of waiters over all dumps, and
	// BlockedShare the fraction of dumps in which the lock had a waiter.
	AvgWaiters   float64 `json:"avg_waiters"`
	BlockedShare float64 `json:"blocked_share"`
	// WaitFrame is the waiters' first application frame (the most common
	// one when they differ): where the code asks for the lock.
	WaitFrame *string `json:"wait_frame"`
	// WaiterThreads names up to 10 waiters of the peak dump.
	WaiterThreads []string `json:"waiter_threads"`
	// Symbol names a futex's address ("contended_mutex (app+0x4040)");
	// null when the address has no symbol. Only on futex locks.
	Symbol *string `json:"symbol,omitempty"`
	// Module is the binary a futex address belongs to, or the anonymous
	// mapping it lies in. Only on futex locks.
	Module string `json:"module,omitempty"`
	// FutexKind is "lock" or "unknown" for futex locks.
	FutexKind string `json:"futex_kind,omitempty"`
}

// TargetSummary names the live process.
type TargetSummary struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// Kind is "jvm" or "native".
	Kind string `json:"kind"`
	// CPUs the process may run on (its affinity).
	CPUs int `json:"cpus"`
}

// ContextSwitchSummary gives switch rates over the run.
type ContextSwitchSummary struct {
	VoluntaryPerSecond   float64 `json:"voluntary_per_second"`
	InvoluntaryPerSecond float64 `json:"involuntary_per_second"`
	// HostPerSecond is the whole machine's rate (/proc/stat ctxt).
	HostPerSecond float64 `json:"host_per_second"`
}

// HostSummary is the machine's state at the last sample.
type HostSummary struct {
	CPUs         int     `json:"cpus"`
	Load1        float64 `json:"load1"`
	ProcsRunning int     `json:"procs_running"`
	ProcsBlocked int     `json:"procs_blocked"`
}

// ConnectionSummary counts the target's established TCP connections.
type ConnectionSummary struct {
	Established int `json:"established"`
	// ByPort maps a local port (as a string, for JSON) to its count.
	ByPort    map[string]int `json:"by_port"`
	Listening []int          `json:"listening"`
	Peers     int            `json:"peers"`
}

// ThreadsPerConnection relates thread count to connected users.
type ThreadsPerConnection struct {
	// Ratio is threads / established connections at the last sample.
	Ratio float64 `json:"ratio"`
}

// SampleCost is what taking a live sample cost ctprof.
type SampleCost struct {
	AvgSeconds  float64 `json:"avg_seconds"`
	PeakSeconds float64 `json:"peak_seconds"`
}

// FutexWaitSummary is a futex address native threads wait on for a signal.
type FutexWaitSummary struct {
	Address    string  `json:"address"`
	Symbol     *string `json:"symbol"`
	Module     string  `json:"module"`
	Kind       string  `json:"kind"`
	Waiters    int     `json:"waiters"`
	AvgWaiters float64 `json:"avg_waiters"`
}

// DeadlockSummary is one cycle of threads waiting for each other.
type DeadlockSummary struct {
	Threads []string `json:"threads"`
	// Locks[i] is what Threads[i] waits for.
	Locks []LockRef `json:"locks"`
	// Source says who found it: "jvm" (the dump's own report), "ctprof"
	// (cycle detection over the owner graph) or "jvm+ctprof".
	Source string `json:"source"`
	// Dumps is the number of dumps in which the cycle appears.
	Dumps int `json:"dumps"`
}

// LockRef names a lock.
type LockRef struct {
	Kind    string `json:"kind"`
	Class   string `json:"class"`
	Address string `json:"address"`
}

// PoolSummary is a group of threads whose names differ only in numbers.
type PoolSummary struct {
	Name    string         `json:"name"`
	Threads int            `json:"threads"`
	States  map[string]int `json:"states"`
	// Live runs add the pool's CPU and context-switch rates.
	CPUPercent           float64 `json:"cpu_percent,omitempty"`
	VoluntaryPerSecond   float64 `json:"voluntary_per_second,omitempty"`
	InvoluntaryPerSecond float64 `json:"involuntary_per_second,omitempty"`
}

// StackGroup is a set of threads of the last dump with identical stacks.
type StackGroup struct {
	Threads int      `json:"threads"`
	State   string   `json:"state"`
	Frames  []string `json:"frames"`
	// Names lists up to 5 of the threads.
	Names []string `json:"names"`
}

// ThreadCPU is a thread's CPU use over a series, from cpu= deltas.
type ThreadCPU struct {
	Thread     string  `json:"thread"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// Percent is CPU time over wall time between the first and last dump
	// that show the thread (100 = one core).
	Percent float64 `json:"cpu_percent"`
	// Live runs add the OS view of the thread.
	TID                  int     `json:"tid,omitempty"`
	VoluntaryPerSecond   float64 `json:"voluntary_per_second,omitempty"`
	InvoluntaryPerSecond float64 `json:"involuntary_per_second,omitempty"`
	RunQueueWaitShare    float64 `json:"run_queue_wait_share,omitempty"`
	Policy               string  `json:"policy,omitempty"`
	Nice                 int     `json:"nice,omitempty"`
	RTPriority           int     `json:"rt_priority,omitempty"`
	CPUsAllowed          string  `json:"cpus_allowed,omitempty"`
}

// StuckThread is a thread whose stack did not change across a series.
type StuckThread struct {
	Thread string `json:"thread"`
	State  string `json:"state"`
	Frame  string `json:"frame"`
	Dumps  int    `json:"dumps"`
}

// Finding is one conclusion, in plain words, with its evidence.
type Finding struct {
	// Kind is a stable name: lock-hotspot, deadlock, stuck-thread (and
	// later serialization, thread-per-connection, wakeup-storm,
	// cpu-saturation).
	Kind string `json:"kind"`
	// Severity is "critical", "warning" or "info".
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
	NextStep string   `json:"next_step"`
	// impact orders findings; higher first.
	impact float64
}
