package analysis

import "time"

// SchemaVersion is the version of the JSON summary (docs/json.md). Fields
// may be added without a bump; renaming or removing one bumps it.
const SchemaVersion = 1

// Summary is everything the sinks print. It is computed by the Aggregator
// only; sinks format it and never compute statistics of their own.
type Summary struct {
	Schema int `json:"schema"`
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

	Locks        []LockSummary     `json:"locks"`
	Deadlocks    []DeadlockSummary `json:"deadlocks"`
	Pools        []PoolSummary     `json:"pools"`
	StackGroups  []StackGroup      `json:"stack_groups"`
	ThreadCPU    []ThreadCPU       `json:"thread_cpu"`
	StuckThreads []StuckThread     `json:"stuck_threads"`
	Findings     []Finding         `json:"findings"`
	// Warnings say what in the input looked wrong or was missing.
	Warnings []string `json:"warnings"`
}

// LockSummary is one lock some thread queued on.
type LockSummary struct {
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
