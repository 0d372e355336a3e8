package metrics

import "github.com/prometheus/client_golang/prometheus"

// Every metric ctprof exports, with its help text. docs/prometheus.md lists
// the same set; a test checks that the two agree.
//
// Target series carry the labels pid and target (the process name). Values
// come from the target's analysis.Summary at scrape time; nothing here
// computes statistics of its own.

// targetLabels identify the process a series belongs to.
var targetLabels = []string{"pid", "target"}

func newDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, targetLabels...), extra...), nil)
}

var (
	descBuildInfo = prometheus.NewDesc("ctprof_build_info",
		"A metric with a constant '1' value labelled by the version of ctprof and the Go version it was built with.",
		[]string{"version", "goversion"}, nil)

	descUp = newDesc("ctprof_up",
		"1 while ctprof samples the target, 0 when a target asked for by --pid has exited or cannot be read.")
	descTargetInfo = newDesc("ctprof_target_info",
		"A metric with a constant '1' value labelled by the kind of target (jvm or native).", "kind")
	descCPUsAllowed = newDesc("ctprof_target_cpus_allowed",
		"CPUs the target may run on (the size of its affinity mask).")

	descSamples = newDesc("ctprof_samples_total",
		"Samples ctprof has taken of the target.")
	descSampleErrors = newDesc("ctprof_sample_errors_total",
		"Problems that did not stop sampling (a failed thread dump, an unreadable file).")
	descSampleDuration = newDesc("ctprof_sample_duration_seconds",
		"Time ctprof spends taking one sample of the target: the average and the peak over the run.", "stat")
	descTargetPause = newDesc("ctprof_target_pause_seconds_total",
		"Safepoint time ctprof's thread dumps caused in the target (from its hsperfdata): the cost of profiling it.")

	descThreads = newDesc("ctprof_threads",
		"OS threads of the target by kernel state at the last sample.", "state")
	descJVMThreads = newDesc("ctprof_jvm_threads",
		"Java threads of the target by Java state in the last thread dump; VM-internal threads count as NONE.", "state")
	descPoolThreads = newDesc("ctprof_pool_threads",
		"Threads by pool (thread names with digits replaced by N) at the last sample: the largest pools and 'other' for the rest.", "pool")

	descCPUSeconds = newDesc("ctprof_cpu_seconds_total",
		"CPU time the target used since ctprof started sampling it, exited threads included.")
	descContextSwitches = newDesc("ctprof_context_switches_total",
		"Context switches of the target's threads since ctprof started sampling it, exited threads included; voluntary (the thread blocked) or involuntary (it was preempted).", "kind")
	descHostContextSwitches = newDesc("ctprof_host_context_switches_total",
		"Context switches of the whole machine (/proc/stat ctxt) since ctprof started sampling the target.")
	descRunQueueWait = newDesc("ctprof_runqueue_wait_seconds_total",
		"Time the target's threads spent runnable but waiting for a CPU (schedstat) since ctprof started sampling it.")

	descConnections = newDesc("ctprof_connections",
		"Connected clients of the target at the last sample: established TCP connections (only those to --port when given) plus the clients on the Unix sockets it listens on.")
	descThreadsPerConnection = newDesc("ctprof_threads_per_connection",
		"Threads of the target divided by its connected clients (ctprof_connections) at the last sample.")
	descProcesses = newDesc("ctprof_processes",
		"Processes of a target sampled as a tree of processes (a server that forks its workers: the target and its descendants) at the last sample; absent for one process.")

	descLockBlockedThreads = newDesc("ctprof_lock_blocked_threads",
		"Threads queued on a lock at the last sample, by lock (kind and class, or futex symbol) and the frame they wait in; the locks with the most blocked thread-seconds and 'other' for the rest.", "lock", "site")
	descLockBlockedSeconds = newDesc("ctprof_lock_blocked_thread_seconds_total",
		"Thread-seconds spent queued on a lock (waiters times sample interval, summed), by lock and wait frame, with 'other' for the rest.", "lock", "site")
	descResourceWaiters = newDesc("ctprof_resource_waiting_threads",
		"Threads waiting at a resource at the last dump, over all its instances: a class waited for at the method where the waiters call in ('SynchronousQueue at ConcurrentBag.borrow'), the resources with the most waiters and 'other' for the rest.", "resource")
	descDeadlockedThreads = newDesc("ctprof_deadlocked_threads",
		"Threads caught in a deadlock found in the thread dumps.")
	descWakeups = newDesc("ctprof_wakeups_per_second",
		"Wake-ups per second of pools whose threads wake often to do little (polling), over the run.", "pool")

	descJVMLiveThreads = newDesc("ctprof_jvm_live_threads",
		"Live Java threads (hsperfdata java.threads.live).")
	descJVMDaemonThreads = newDesc("ctprof_jvm_daemon_threads",
		"Live Java daemon threads (hsperfdata java.threads.daemon).")
	descJVMPeakThreads = newDesc("ctprof_jvm_peak_threads",
		"Peak number of live Java threads since the JVM started (hsperfdata java.threads.livePeak).")
	descJVMThreadsStarted = newDesc("ctprof_jvm_threads_started_total",
		"Java threads started since the JVM started (hsperfdata java.threads.started).")
	descJVMSafepoints = newDesc("ctprof_jvm_safepoints_total",
		"Safepoints the JVM reached since it started (hsperfdata sun.rt.safepoints).")
	descJVMSafepointSeconds = newDesc("ctprof_jvm_safepoint_seconds_total",
		"Time the JVM spent in safepoints since it started (hsperfdata sun.rt.safepointTime).")
	descJVMGCSeconds = newDesc("ctprof_jvm_gc_seconds_total",
		"Time the JVM spent in garbage collection since it started (hsperfdata collector times).")
	descJVMMonitorEvents = newDesc("ctprof_jvm_monitor_events_total",
		"The JVM's monitor counters since it started (hsperfdata sun.rt._sync_*, JDK 8 to 21), by event.", "event")
)

// allDescs is every descriptor, for Describe.
var allDescs = []*prometheus.Desc{
	descBuildInfo, descUp, descTargetInfo, descCPUsAllowed,
	descSamples, descSampleErrors, descSampleDuration, descTargetPause,
	descThreads, descJVMThreads, descPoolThreads,
	descCPUSeconds, descContextSwitches, descHostContextSwitches, descRunQueueWait,
	descConnections, descThreadsPerConnection, descProcesses,
	descLockBlockedThreads, descLockBlockedSeconds, descResourceWaiters, descDeadlockedThreads, descWakeups,
	descJVMLiveThreads, descJVMDaemonThreads, descJVMPeakThreads, descJVMThreadsStarted,
	descJVMSafepoints, descJVMSafepointSeconds, descJVMGCSeconds, descJVMMonitorEvents,
}

// osStates are the kernel states ctprof_threads always exports (zero when
// no thread is in them), so a dashboard's series do not come and go.
var osStates = []string{"running", "sleeping", "uninterruptible", "stopped", "zombie", "idle", "other"}

// javaStates are the Java states ctprof_jvm_threads always exports; any
// other state string a dump may carry counts under "other".
var javaStates = []string{"NEW", "RUNNABLE", "BLOCKED", "WAITING", "TIMED_WAITING", "TERMINATED", "NONE", "other"}

// monitorEvents are the hsperfdata sun.rt._sync_* counters exported: the
// ones that only grow. The rest (MonExtant, MonInCirculation, ...) are
// gauges of the JVM's internals, not worth a series each.
var monitorEvents = []string{
	"ContendedLockAttempts", "FutileWakeups", "Parks", "Notifications",
	"Inflations", "Deflations", "SlowEnter", "SlowExit", "SlowNotify", "SlowNotifyAll",
	"FailedSpins", "SuccessfulSpins",
}
