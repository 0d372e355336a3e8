package analysis

import (
	"strings"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The corpus cases of libraries whose threads run long tasks: a scheduler
// whose jobs poll a remote job (Quartz), a JDBC pool with a cleaner
// (Tomcat JDBC), and an HTTP client whose background task runner, like a
// framework's event executor run on the program's executor, is a loop of
// its own inside an executor's worker (OkHttp, Netty's DefaultEventExecutor).
// Their labels, by what each workload does (see the header of each
// testdata/javalibs/<workload>.java).

// tasksWaitsIn reports a waiting thread whose first frame below the JDK's
// waiting machinery (poolsWaitFrame) contains frame.
func tasksWaitsIn(st testjvm.ThreadStack, frame string) bool {
	return poolsWaiting(st) && strings.Contains(poolsWaitFrame(st), frame)
}

func init() {
	corpusCases = append(corpusCases,
		// Quartz 2.5, 22 workers: 10 jobs poll a remote job, each pausing
		// on its own job object (synchronized (this) { wait(25) }) between
		// polls: a pause, nobody else's lock. 8 jobs write to one shared
		// store under its monitor (~15 ms each): ~7 BLOCKED entering it.
		// The 4 spare workers wait on their own lock for a job, and the
		// scheduler thread on its signal lock for the next trigger: idle.
		corpusCase{
			workload: "QuartzPollingJobs", args: []string{"10", "8", "22"}, kind: "scheduler",
			ready: func(s []testjvm.ThreadStack) bool {
				n := 0
				for _, st := range s {
					if strings.HasPrefix(st.Name, "jobs_Worker-") && strings.HasPrefix(st.State, "BLOCKED") && st.Has("StoreJob.execute") {
						n++
					}
				}
				return n >= 4
			},
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "jobs_Worker-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					switch {
					case st.Has("StoreJob.execute") && strings.HasPrefix(st.State, "BLOCKED"):
						return threadTruth{truthContention, "result store"}
					case st.Has("PollJob.execute") && strings.HasPrefix(st.State, "TIMED_WAITING"):
						// Between two polls of its remote job, on its
						// own job object.
						return threadTruth{Verdict: truthSleep}
					case tasksWaitsIn(st, "SimpleThreadPool$WorkerThread.run"):
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "quartz"}
				case strings.HasPrefix(st.Name, "jobs_QuartzSchedulerThread"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					// Waiting for the next trigger's time, or for a free
					// worker to hand it to: the scheduler's own loop.
					if tasksWaitsIn(st, "QuartzSchedulerThread.run") || tasksWaitsIn(st, "SimpleThreadPool.blockForAvailableThreads") {
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "quartz"}
				}
				return threadTruth{}
			},
			topFrame: "StoreJob.execute",
		},
		// Tomcat JDBC, 4 connections in a fair queue, 20 workers that
		// hold one ~20 ms: ~16 wait in ConnectionPool.borrowConnection ->
		// FairBlockingQueue.poll, each on its own latch. The pool cleaner
		// is a java.util.Timer waiting for its next run.
		corpusCase{
			workload: "TomcatJdbcPoolExhaustion", args: []string{"20", "4"}, kind: "pool",
			ready: func(s []testjvm.ThreadStack) bool {
				return poolsCount(s, "worker-", "ConnectionPool.borrowConnection") >= 10
			},
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "worker-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					if st.Has("org.apache.tomcat.jdbc.pool.") {
						return threadTruth{truthContention, "connection pool"}
					}
					return threadTruth{truthContention, "h2"}
				case strings.HasPrefix(st.Name, "Tomcat JDBC Pool Cleaner"):
					return poolsService(st, "connection pool", poolsIdleLoops...)
				}
				return threadTruth{}
			},
			topFrame: "ConnectionPool.borrowConnection|FairBlockingQueue.poll",
		},
		// OkHttp 5: 12 clients against the JDK's HTTP server, whose 8
		// handlers serialize on one ledger monitor (~10 ms each): ~7
		// handlers BLOCKED entering it. Clients wait in socket reads
		// (RUNNABLE). OkHttp's TaskRunner threads (renamed to the task
		// they last ran, "OkHttp ..."), Okio's watchdog and the two Netty
		// audit executors on the program's executor wait for their next
		// task, timeout or record: idle.
		corpusCase{
			workload: "OkHttpTaskRunner", args: []string{"12", "8"}, kind: "http",
			ready: func(s []testjvm.ThreadStack) bool {
				n := 0
				for _, st := range s {
					if strings.HasPrefix(st.Name, "handler-") && strings.HasPrefix(st.State, "BLOCKED") {
						n++
					}
				}
				return n >= 4
			},
			label: func(st testjvm.ThreadStack) threadTruth {
				if tr, ok := basicTruth(st); ok && st.State != "" {
					if st.Name == "main" {
						return threadTruth{}
					}
					return tr
				}
				switch {
				case strings.HasPrefix(st.Name, "handler-"):
					switch {
					case strings.HasPrefix(st.State, "BLOCKED") && st.Has("OkHttpTaskRunner.lambda$main"):
						return threadTruth{truthContention, "ledger"}
					case st.Has("ThreadPoolExecutor.getTask"):
						// A worker with no request (getTask is on no
						// stack of a worker running one).
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "http server"}
				case strings.HasPrefix(st.Name, "OkHttp "):
					// The TaskRunner's coordinator waits for its next
					// task's time; the other runners for a task.
					// (JDK 25's SynchronousQueue waits in
					// LinkedTransferQueue, below getTask.)
					if tasksWaitsIn(st, "TaskRunner$RealBackend.coordinatorWait") || st.Has("ThreadPoolExecutor.getTask") {
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "okhttp task"}
				case st.Name == "Okio Watchdog":
					if tasksWaitsIn(st, "AsyncTimeout") {
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "okio"}
				case strings.HasPrefix(st.Name, "audit-"):
					if tasksWaitsIn(st, "SingleThreadEventExecutor.takeTask") {
						return threadTruth{Verdict: truthIdle}
					}
					return threadTruth{truthContention, "audit"}
				case st.Name == "idle-timeout-task":
					return poolsService(st, "http server", poolsIdleLoops...)
				case strings.HasPrefix(st.Name, "client-"):
					return threadTruth{truthContention, "okhttp client"}
				}
				return threadTruth{}
			},
			topFrame: "OkHttpTaskRunner.lambda$main",
		},
	)
}
