package analysis

import (
	"encoding/json"
	"fmt"
	"time"
)

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
	// Processes describes the tree of processes a live run sampled as
	// one target (a server that forks its workers); absent for one
	// process.
	Processes *ProcessTree `json:"processes,omitempty"`
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
	// CPUUse relates the process's CPU use to the CPUs it may run on.
	CPUUse *CPUUse `json:"cpu_use,omitempty"`
	// Totals are the process's counters over the run; they never go down,
	// also when threads exit (Prometheus exports them as counters).
	Totals *Totals `json:"totals,omitempty"`
	// Scheduling says how much the threads wait for a CPU and who suffers.
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	// Serialization lists, for contended locks, how far the lock
	// serializes the pool its waiters belong to.
	Serialization []Serialization `json:"serialization"`
	// Wakeups lists pools whose threads wake often to do little.
	Wakeups []Wakeup `json:"wakeups"`
	// JVM holds the JVM's own counters (hsperfdata), when read.
	JVM *JVMSummary `json:"jvm,omitempty"`
	// Errors counts the problems that did not stop sampling.
	Errors int `json:"errors,omitempty"`
	// JFR describes the recording data read (JFR files, attach --jfr);
	// absent without one.
	JFR *JFRSummary `json:"jfr,omitempty"`
	// ExactWaits describes the futex waits the kernel counted for a native
	// target (attach as root); absent without them.
	ExactWaits *ExactWaitsSummary `json:"exact_waits,omitempty"`
	// FastReads describes the fast reads of the threads that block too
	// often for the samples (native targets without exact waits).
	FastReads *FastReadsSummary `json:"fast_reads,omitempty"`

	Locks []LockSummary `json:"locks"`
	// Waits classes every thread of the last dump that is not running:
	// contention (with the resource it waits for), idle, sleep or io, and
	// why (docs/json.md states the rule).
	Waits []ThreadWait `json:"waits"`
	// ContentionSites group the Java locks by class and wait site: how
	// many instances, how many waiters in all, so a striped design (many
	// instances, one waiter each) is told from one hot lock.
	ContentionSites []ContentionSite `json:"contention_sites"`
	// FutexWaits are native threads waiting on a condition (idle, not
	// contention), by futex address.
	FutexWaits   []FutexWaitSummary `json:"futex_waits"`
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
	Timelines []Timeline `json:"timelines"`
}

// Timeline is one chart's worth of time series.
type Timeline struct {
	// ID is stable so outputs can be compared: threads_by_state,
	// java_threads_by_state, context_switches, connections_threads, cpu,
	// run_queue_wait, lock_waiters.
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

// Point is one value at one instant (Unix milliseconds). In JSON it is the
// pair [t, v], the form charting libraries take, at half the size.
type Point struct {
	T int64
	V float64
}

// MarshalJSON writes [t, v].
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]any{p.T, p.V})
}

// UnmarshalJSON reads [t, v].
func (p *Point) UnmarshalJSON(b []byte) error {
	var pair [2]json.Number
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("timeline point: %w", err)
	}
	t, err := pair[0].Int64()
	if err != nil {
		return fmt.Errorf("timeline point time: %w", err)
	}
	v, err := pair[1].Float64()
	if err != nil {
		return fmt.Errorf("timeline point value: %w", err)
	}
	p.T, p.V = t, v
	return nil
}

// LockSummary is one lock (an object instance, or a futex address) some
// thread waited on: a thread that could not go on until another thread
// acted. Java locks keep their identity by address, followed across GC
// moves where exactly one candidate fits; futexes are identified by address.
type LockSummary struct {
	// ID identifies the lock within this summary ("monitor|<class>|<first
	// address>", "futex||<address>"); FoldedStack.ByLock refers to it.
	ID string `json:"id"`
	// Kind is the wait kind most of its waiter samples had: "monitor"
	// (entering), "relock" (re-acquiring after Object.wait), "wait"
	// (Object.wait inside work), "synchronizer" (parked on a j.u.c. lock),
	// "condition", "future", "class-init", or (native targets) "futex".
	Kind string `json:"kind"`
	// Resource is what the lock is: "monitor" (a Java object's monitor),
	// "synchronizer" (a j.u.c. object threads park on) or "futex".
	Resource string `json:"resource"`
	// WaitKinds counts the waiter samples of each wait kind over the run.
	WaitKinds map[string]int `json:"wait_kinds"`
	Class     string         `json:"class"`
	// Address is the lock's address at the peak; Addresses lists the
	// addresses it had over the run when there were several.
	Address   string   `json:"address"`
	Addresses []string `json:"addresses,omitempty"`
	// Owner is the owning thread's name; null when the dump does not say.
	Owner *string `json:"owner"`
	// OwnerFrame is the frame the owner runs (its top frame); null when the
	// owner is unknown.
	OwnerFrame *string `json:"owner_frame"`
	// OwnerLockFrame is the owner's frame that acquired the lock.
	OwnerLockFrame *string `json:"owner_lock_frame"`
	// Releaser is, when nobody holds the lock and its waiters wait for a
	// signal (a group commit), a thread working in the same code that is
	// not waiting: the one they wait for. ReleaserFrame is its first
	// application frame. Null otherwise.
	Releaser      *string `json:"releaser"`
	ReleaserFrame *string `json:"releaser_frame"`
	// Waiters is the number of threads queued on the lock: in the one dump,
	// or the peak over a series.
	Waiters int `json:"waiters"`
	// CurrentWaiters is the number queued in the latest sample.
	CurrentWaiters int `json:"current_waiters"`
	// AvgWaiters is the mean number of waiters over all dumps, and
	// BlockedShare the fraction of dumps in which the lock had a waiter.
	AvgWaiters   float64 `json:"avg_waiters"`
	BlockedShare float64 `json:"blocked_share"`
	// WaitFrame is the waiters' first application frame (the most common
	// one when they differ): where the code asks for the lock.
	WaitFrame *string `json:"wait_frame"`
	// WaiterThreads names up to 10 waiters of the peak dump.
	WaiterThreads []string `json:"waiter_threads"`
	// BlockedThreadSeconds is the time threads spent queued on the lock:
	// waiters × sample interval, summed over the samples.
	BlockedThreadSeconds float64 `json:"blocked_thread_seconds"`
	// WaitFrames are the frames where threads wait, and OwnerFrames the
	// first application frames the owner ran while holding the lock, most
	// frequent first (at most 5), with the samples that showed them.
	WaitFrames  []FrameCount `json:"wait_frames"`
	OwnerFrames []FrameCount `json:"owner_frames"`
	// Symbol names a futex's address ("contended_mutex (app+0x4040)");
	// null when the address has no symbol. Only on futex locks.
	Symbol *string `json:"symbol,omitempty"`
	// Module is the binary a futex address belongs to, or the anonymous
	// mapping it lies in. Only on futex locks.
	Module string `json:"module,omitempty"`
	// FutexKind is "lock" or "unknown" for futex locks.
	FutexKind string `json:"futex_kind,omitempty"`
	// Holder is the thread a futex lock's memory names as its holder
	// (futexlocks.go); absent when never read. Owner and OwnerFrame
	// repeat its name and what it ran.
	Holder *FutexHolder `json:"holder,omitempty"`
	// DumpsSeen is the number of samples the lock's figures rest on: the
	// dumps in which it had a waiter (for futex locks, the /proc samples).
	DumpsSeen int `json:"dumps_seen"`
	// Site is the ID of the lock's ContentionSite (Java locks only).
	Site string `json:"site,omitempty"`
	// JFR is what a Java Flight Recorder recording measured about the
	// lock (exact waits); absent without a recording.
	JFR *JFRWaits `json:"jfr,omitempty"`
	// Exact is what the kernel counted of a futex lock's waits (attach as
	// root); absent without it.
	Exact *ExactWaits `json:"exact_waits,omitempty"`
	// FastReads is what fast reads of the threads that block most often
	// caught waiting on a futex lock (without exact waits); absent
	// without them.
	FastReads *FastReadWaits `json:"fast_reads,omitempty"`
}

// ContentionSite is one lock class waited for at one frame, over all its
// instances.
type ContentionSite struct {
	// ID is "<kind>|<class>|<wait frame>"; LockSummary.Site refers to it.
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Class     string `json:"class"`
	WaitFrame string `json:"wait_frame"`
	// WaitLine is the source position of a native resource's wait site
	// ("proc.c:1310") where the binary or its debug file has a line
	// table; not part of the resource's key, which stays the same from
	// build to build.
	WaitLine string `json:"wait_line,omitempty"`
	// Instances is the number of distinct lock instances seen waited for
	// here over the run; PeakInstances the most in one dump.
	Instances     int `json:"instances"`
	PeakInstances int `json:"peak_instances"`
	// Waiters is the most threads queued here (on all instances) in one
	// dump; MaxInstanceWaiters the most queued on one instance in one dump.
	Waiters            int `json:"waiters"`
	MaxInstanceWaiters int `json:"max_instance_waiters"`
	CurrentWaiters     int `json:"current_waiters"`
	// AvgWaiters is the mean over all dumps.
	AvgWaiters           float64 `json:"avg_waiters"`
	BlockedThreadSeconds float64 `json:"blocked_thread_seconds"`
	DumpsSeen            int     `json:"dumps_seen"`
	// Striped is true when more than one instance had waiters in one dump,
	// no instance ever had more than one, and every such instance had an
	// owner: the load is spread over locks held by different threads,
	// there is no hot lock. Waiters on instances nobody holds (a latch per
	// waiter, a hand-off from a pool) are a queue at the resource instead.
	Striped bool `json:"striped"`
	// BlockedShare is the fraction of dumps with a waiter here.
	BlockedShare float64 `json:"blocked_share"`
	// Ownerless is true when some instance had waiters and no owner: they
	// wait for a signal or a hand-off, not behind a holder.
	Ownerless bool `json:"ownerless"`
	// WaiterThreads names up to 10 waiters of the dump with the most.
	WaiterThreads []string `json:"waiter_threads"`
	// Pool is the thread pool most of that dump's waiters belong to
	// (PoolName), PoolThreads its size in that dump and PoolWaiting how
	// many of its threads waited here; OthersRun is what the pool's
	// threads that were not waiting here ran (their first application
	// frame), most common first.
	Pool        string       `json:"pool"`
	PoolThreads int          `json:"pool_threads"`
	PoolWaiting int          `json:"pool_waiting"`
	OthersRun   []FrameCount `json:"others_run"`
	// Holders are the first application frames the instances' owners (or,
	// for signal waits, their releasers) ran in that dump.
	Holders []FrameCount `json:"holders"`
	// JFR is what a recording measured here, over all instances; absent
	// without one. A resource only the recording saw has dumps_seen 0.
	JFR *JFRResourceWaits `json:"jfr,omitempty"`
	// Native marks a native resource: Kind is the primitive ("mutex",
	// "rwlock", "condition", "semaphore", "futex", "filelock"), Class the module of
	// the wait site, and its counts are over the /proc samples.
	Native bool `json:"native,omitempty"`
	// Exact is what the kernel counted of a native resource's waits
	// (attach --exact-waits); absent without it.
	Exact *ExactResourceWaits `json:"exact,omitempty"`
	// WaiterStack is a native resource's waiter's stack at the sample
	// with the most waiters, innermost frame first (at most 16 frames);
	// absent when none was unwound.
	WaiterStack []string `json:"waiter_stack,omitempty"`
	// Files are the files a native file lock's waiters waited to lock
	// (their descriptors' paths, the first 8 seen); absent for other
	// kinds.
	Files []string `json:"files,omitempty"`
	// WaiterProcesses says a native resource's waiters at the peak were
	// each the one thread of a process of a tree (a backend per client):
	// its finding counts processes.
	WaiterProcesses bool `json:"waiter_processes,omitempty"`
}

// FrameCount is a frame and the number of samples that showed it.
type FrameCount struct {
	Frame   string `json:"frame"`
	Samples int    `json:"samples"`
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

// ConnectionSummary counts the target's established TCP connections and
// the clients on its Unix sockets.
type ConnectionSummary struct {
	// Established is the TCP connections plus the Unix clients (ByPath's
	// sum): the connected users threads per connection divides by.
	Established int `json:"established"`
	// ByPort maps a local port (as a string, for JSON) to its count.
	ByPort    map[string]int `json:"by_port"`
	Listening []int          `json:"listening"`
	Peers     int            `json:"peers"`
	// ByPath maps a Unix socket path the target listens on to its
	// connected clients ('@' starts an abstract name). Paths are the
	// target's bytes: escape them where shown.
	ByPath map[string]int `json:"by_path"`
	// ListeningPaths are the Unix socket paths the target listens on.
	ListeningPaths []string `json:"listening_paths"`
}

// ProcessTree is the tree of processes a run sampled: the target and its
// descendants.
type ProcessTree struct {
	// Last counts the processes of the last sample, Seen the distinct
	// ones over the run (processes that exited included).
	Last int `json:"last"`
	Seen int `json:"seen"`
}

// ThreadsPerConnection relates thread count to connected users.
type ThreadsPerConnection struct {
	// Ratio is threads / established connections at the last sample.
	Ratio float64 `json:"ratio"`
	// ProcessesRatio is processes / established connections at the last
	// sample, for a tree of processes (PostgreSQL's backend per client
	// is 1 and by design).
	ProcessesRatio float64 `json:"processes_ratio,omitempty"`
	// When the number of connections changed during the run: Slope is the
	// threads added per connection by a least-squares line over the
	// samples, Intercept the threads with no connection, R2 how well the
	// line fits (1 = perfectly).
	Slope     *float64 `json:"slope,omitempty"`
	Intercept *float64 `json:"intercept,omitempty"`
	R2        *float64 `json:"r2,omitempty"`
	// MinConnections and MaxConnections give the range observed.
	MinConnections int `json:"min_connections"`
	MaxConnections int `json:"max_connections"`
	// GrowingPools are the pools whose size follows the connections.
	GrowingPools []PoolGrowth `json:"growing_pools,omitempty"`
}

// PoolGrowth is a pool whose size grows with the connections.
type PoolGrowth struct {
	Pool  string  `json:"pool"`
	Slope float64 `json:"slope"`
	R2    float64 `json:"r2"`
}

// SampleCost is what sampling cost: ctprof's time per sample, and for
// JVMs the thread dumps and the pause they caused in the target.
type SampleCost struct {
	AvgSeconds  float64 `json:"avg_seconds"`
	PeakSeconds float64 `json:"peak_seconds"`
	// LastSeconds is the latest sample's cost.
	LastSeconds float64 `json:"last_seconds"`
	// Dumps is the number of thread dumps taken, DumpSeconds their total
	// wall time, and DumpMethods how they were taken ("attach", "jcmd").
	Dumps       int            `json:"dumps,omitempty"`
	DumpSeconds float64        `json:"dump_seconds,omitempty"`
	DumpMethods map[string]int `json:"dump_methods,omitempty"`
	// EarlyDumps counts the dumps asked for while ctprof was starting,
	// before it had parsed its command line: a one-shot's (`attach PID
	// --count 1`), sent some milliseconds sooner.
	EarlyDumps int `json:"early_dumps,omitempty"`
	// TargetPauseSeconds is the safepoint time the dumps cost the target
	// (from its hsperfdata), and TargetPauseShare that time over the run.
	TargetPauseSeconds *float64 `json:"target_pause_seconds,omitempty"`
	TargetPauseShare   *float64 `json:"target_pause_share,omitempty"`
}

// CPUUse relates the process's CPU use to the CPUs it may use: a
// synchronized singleton on 2 CPUs shows as 50 %.
type CPUUse struct {
	// CoresUsed is CPU seconds per second (1 = one core busy).
	CoresUsed float64 `json:"cores_used"`
	// CPUsAllowed is the size of the process's affinity mask.
	CPUsAllowed int `json:"cpus_allowed"`
	// ShareOfAllowed is CoresUsed / CPUsAllowed.
	ShareOfAllowed float64 `json:"share_of_allowed"`
}

// Totals are process counters over the run.
type Totals struct {
	CPUSeconds          float64 `json:"cpu_seconds"`
	VoluntarySwitches   uint64  `json:"voluntary_switches"`
	InvoluntarySwitches uint64  `json:"involuntary_switches"`
	RunQueueWaitSeconds float64 `json:"run_queue_wait_seconds"`
	// HostSwitches is the machine's context switches over the run.
	HostSwitches uint64 `json:"host_switches"`
}

// Scheduling describes CPU saturation.
type Scheduling struct {
	// RunnableAvg is the average number of threads runnable (running or
	// waiting for a CPU): RunningAvg + WaitingForCPUAvg, from schedstat
	// (run time plus run-queue wait, per second of the run). Without
	// schedstat it is the threads in state R per sample. Compare with CPUs.
	RunnableAvg float64 `json:"runnable_avg"`
	// RunningAvg is the average number of threads on a CPU (run time per
	// second of the run).
	RunningAvg float64 `json:"running_avg"`
	CPUs       int     `json:"cpus"`
	// RunQueueWaitShare is the share of runnable time spent waiting for a
	// CPU rather than running.
	RunQueueWaitShare float64 `json:"run_queue_wait_share"`
	// WaitingForCPUAvg is the average number of the process's threads
	// waiting in a run queue (run-queue wait seconds per second).
	WaitingForCPUAvg float64 `json:"waiting_for_cpu_avg"`
	// HostLoad1 is the host's one-minute load average, for context: the
	// CPUs may be taken by other processes.
	HostLoad1 float64 `json:"host_load1"`
	// InvoluntaryPerThreadPerSecond is the preemption rate of an average
	// thread.
	InvoluntaryPerThreadPerSecond float64 `json:"involuntary_per_thread_per_second"`
	// Suffering are the threads that waited longest for a CPU (by
	// run-queue wait over the run, at least 5 % of it), with their
	// scheduling policy, priority and affinity.
	Suffering []ThreadCPU `json:"suffering"`
	// RunnableSampledAvg is the threads in state R (running or in a run
	// queue) per sample: a second estimate that schedstat's accounting
	// does not delay. Schedstat counts a wait when the thread gets a CPU,
	// so on a heavily loaded host a short run can see three busy threads
	// as one runnable; the cause takes the larger of the two.
	RunnableSampledAvg float64 `json:"runnable_sampled_avg"`
	// Cause says who the waiting is owed to (the Cause constants); "none"
	// when the threads do not wait in earnest.
	Cause string `json:"cause"`
	// OtherCPUsAvg is the CPU the rest of the host used on average (its
	// busy time less the process's own), in CPUs, and StealCPUsAvg what a
	// hypervisor withheld from the host's CPUs; nil when the run did not
	// read the host's CPU time (a recording).
	OtherCPUsAvg *float64 `json:"other_cpus_avg"`
	StealCPUsAvg *float64 `json:"steal_cpus_avg"`
	// Consumers are the processes other than the target that used the
	// most CPU over ConsumersSeconds of the run, biggest first.
	Consumers        []ProcessCPU `json:"consumers"`
	ConsumersSeconds float64      `json:"consumers_seconds"`
	// Quota is the cgroup CPU quota that throttled the process most; nil
	// when none applies (or none could be read).
	Quota *CPUQuota `json:"cpu_quota"`
}

// Causes of CPU saturation (Scheduling.Cause).
const (
	CauseNone           = "none"
	CauseOwnThreads     = "own-threads"
	CauseOtherProcesses = "other-processes"
	CauseCgroupQuota    = "cgroup-quota"
	CauseUnknown        = "unknown"
)

// ProcessCPU is another process's CPU use over the run.
type ProcessCPU struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// CPUs is its CPU time per second of the time measured (1 = a CPU).
	CPUs       float64 `json:"cpus"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

// CPUQuota is a cgroup's CPU quota and how much it throttled over the run.
type CPUQuota struct {
	Cgroup  string `json:"cgroup"`
	Version int    `json:"version"`
	// CPUs is quota over period; QuotaMicros and PeriodMicros are the
	// setting itself (cpu.max, or cpu.cfs_quota_us and cpu.cfs_period_us).
	CPUs         float64 `json:"cpus"`
	QuotaMicros  int64   `json:"quota_us"`
	PeriodMicros int64   `json:"period_us"`
	// Periods and ThrottledPeriods count over the run; ThrottledShare is
	// their ratio and ThrottledSeconds the time the cgroup was held back.
	Periods          uint64  `json:"periods"`
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledShare   float64 `json:"throttled_share"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// Serialization says how far a lock serializes the pool its waiters
// belong to: "12 worker threads, 1.1 running on average while 9.8 queue".
type Serialization struct {
	LockID string `json:"lock_id"`
	Pool   string `json:"pool"`
	// Threads, Running and Queueing are per-sample averages: the pool's
	// size, its threads running, and its threads queued on the lock.
	Threads  float64 `json:"threads"`
	Running  float64 `json:"running"`
	Queueing float64 `json:"queueing"`
	Samples  int     `json:"samples"`
}

// Wakeup is a pool whose threads wake often while using little CPU.
type Wakeup struct {
	Pool    string `json:"pool"`
	Threads int    `json:"threads"`
	// PeriodMillis is the typical time between a thread's wake-ups and
	// PerSecond the pool's wake-ups per second in all.
	PeriodMillis float64 `json:"period_ms"`
	PerSecond    float64 `json:"per_second"`
	// CPUPercentPerThread is an average thread's CPU use (100 = a core).
	CPUPercentPerThread float64 `json:"cpu_percent_per_thread"`
	// HostShare is the share of the host's context switches they cause.
	HostShare float64 `json:"host_share"`
}

// JVMSummary holds the JVM's counters at the last sample and over the run.
type JVMSummary struct {
	LiveThreads    int64 `json:"live_threads"`
	DaemonThreads  int64 `json:"daemon_threads"`
	PeakThreads    int64 `json:"peak_threads"`
	StartedThreads int64 `json:"started_threads"`
	// ThreadsStartedInRun counts threads the JVM started during the run.
	ThreadsStartedInRun int64            `json:"threads_started_in_run"`
	Safepoints          int64            `json:"safepoints"`
	SafepointSeconds    float64          `json:"safepoint_seconds"`
	GCSeconds           float64          `json:"gc_seconds"`
	Sync                map[string]int64 `json:"sync,omitempty"`
}

// FutexWaitSummary is a futex address native threads wait on for a signal.
type FutexWaitSummary struct {
	Address string `json:"address"`
	// Name is the address's stable name ("[heap]+0x2a0"; see
	// LockSummary.Class for futex locks).
	Name       string  `json:"name"`
	Symbol     *string `json:"symbol"`
	Module     string  `json:"module"`
	Kind       string  `json:"kind"`
	Waiters    int     `json:"waiters"`
	AvgWaiters float64 `json:"avg_waiters"`
	// CountedWaiters is the most waiters a glibc condition variable's
	// own memory counted (its waiters on both of its futex words), where
	// a symbol says the address is one; absent otherwise.
	CountedWaiters int `json:"counted_waiters,omitempty"`
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
	// Live runs add the OS view of the thread: its Java state (when a
	// dump named it) and OS state, and the CPU it last ran on.
	TID                  int     `json:"tid,omitempty"`
	JavaState            string  `json:"java_state,omitempty"`
	OSState              string  `json:"os_state,omitempty"`
	LastCPU              int     `json:"last_cpu,omitempty"`
	VoluntaryPerSecond   float64 `json:"voluntary_per_second,omitempty"`
	InvoluntaryPerSecond float64 `json:"involuntary_per_second,omitempty"`
	RunQueueWaitShare    float64 `json:"run_queue_wait_share,omitempty"`
	RunQueueWaitSeconds  float64 `json:"run_queue_wait_seconds,omitempty"`
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
	// Kind is a stable name: deadlock, lock-hotspot, serialization,
	// thread-per-connection, wakeup-storm, cpu-saturation, stuck-thread,
	// process-stopped, safepoint-stall, gc-pause.
	Kind string `json:"kind"`
	// Subject names what the finding is about in words that stay the same
	// while its numbers move, from dump to dump and from run to run: a
	// resource's key, a lock's name without its address, the pool, a
	// stuck stack's state and frame, the deadlocked threads (FindingKey).
	Subject string `json:"subject"`
	// Severity is "critical", "warning" or "info".
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
	NextStep string   `json:"next_step"`

	// Figures some kinds carry for scripts (absent elsewhere):
	// wakeup-storm: PeriodSeconds and Threads; thread-per-connection:
	// ThreadsPerConnection and the growing Pool (empty when no single
	// pool grows); cpu-saturation: Cause.
	PeriodSeconds        *float64 `json:"period_seconds,omitempty"`
	Threads              *int     `json:"threads,omitempty"`
	ThreadsPerConnection *float64 `json:"threads_per_connection,omitempty"`
	Pool                 string   `json:"pool,omitempty"`
	// cpu-saturation: Cause, as Scheduling.Cause says it.
	Cause string `json:"cause,omitempty"`

	// impact orders findings; higher first.
	impact float64
}

// DumpInterval is the mean time between the thread dumps, the wall time
// one thread sample stands for in an estimate of blocked time; for a run
// without dumps (a native target, whose stacks the samples unwound) the
// mean time between samples. It is zero when there are fewer than two
// timed dumps or samples.
func (s *Summary) DumpInterval() time.Duration {
	if s.Dumps == 0 && s.Samples > 1 && s.DurationSeconds > 0 {
		// A native target's stacks come from its samples, one per tick.
		return time.Duration(s.DurationSeconds / float64(s.Samples-1) * float64(time.Second))
	}
	if s.Dumps < 2 || s.FirstDump == nil || s.LastDump == nil || !s.LastDump.After(*s.FirstDump) {
		return 0
	}
	return s.LastDump.Sub(*s.FirstDump) / time.Duration(s.Dumps-1)
}
