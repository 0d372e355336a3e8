package analysis

import (
	"strings"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The corpus cases of the resource pools (HikariCP, Apache Commons Pool 2,
// Apache HttpClient 5's connection pool) and of HSQLDB's table locks: their
// labels, by what each workload does (see the header of each
// testdata/javalibs/<workload>.java).

// poolsWaiting reports a thread that waits (not RUNNABLE, not asleep).
func poolsWaiting(st testjvm.ThreadStack) bool {
	_, ok := basicTruth(st)
	return !ok && st.State != ""
}

// poolsCount counts the threads whose name starts with prefix and that wait
// with a stack holding frame.
func poolsCount(stacks []testjvm.ThreadStack, prefix, frame string) int {
	n := 0
	for _, st := range stacks {
		if strings.HasPrefix(st.Name, prefix) && poolsWaiting(st) && st.Has(frame) {
			n++
		}
	}
	return n
}

// poolsMachinery are the frames of the JDK's waiting machinery: parking,
// locks, conditions, blocking queues, Object.wait.
var poolsMachinery = []string{
	"at jdk.internal.misc.Unsafe.park",
	"at java.util.concurrent.locks.",
	"at java.util.concurrent.ForkJoinPool.managedBlock",
	"at java.util.concurrent.ForkJoinPool.unmanagedBlock",
	"at java.util.concurrent.LinkedBlockingQueue.",
	"at java.util.concurrent.SynchronousQueue",
	"at java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue.",
	"at java.lang.Object.wait",
}

// poolsWaitFrame is the first frame of a stack, from the top, outside the
// waiting machinery: where the thread's own code waits.
func poolsWaitFrame(st testjvm.ThreadStack) string {
next:
	for _, l := range st.Lines {
		if !strings.HasPrefix(l, "at ") {
			continue
		}
		for _, m := range poolsMachinery {
			if strings.HasPrefix(l, m) {
				continue next
			}
		}
		return l
	}
	return ""
}

// poolsService labels a library's service thread (a pool's housekeeper, an
// executor worker, a timer, a selector loop): running or asleep by its
// state, idle when it waits at the top of its loop for the next unit of
// work (its wait frame is one of idleAt), and contention on resource when
// it waits anywhere else (e.g. for a lock inside the task it runs).
func poolsService(st testjvm.ThreadStack, resource string, idleAt ...string) threadTruth {
	if tr, ok := basicTruth(st); ok {
		return tr
	}
	at := poolsWaitFrame(st)
	for _, f := range idleAt {
		if strings.Contains(at, f) {
			return threadTruth{Verdict: truthIdle}
		}
	}
	return threadTruth{truthContention, resource}
}

// Where an executor's worker or a timer waits for its next task.
var poolsIdleLoops = []string{
	"java.util.concurrent.ThreadPoolExecutor.getTask", // ThreadPoolExecutor and ScheduledThreadPoolExecutor workers
	"java.util.TimerThread.mainLoop",
}

func init() {
	corpusCases = append(corpusCases,
		// HikariCP, 4 connections, 24 workers that hold one ~20 ms each:
		// ~20 workers wait in HikariPool.getConnection -> ConcurrentBag.borrow
		// (parked on the bag's SynchronousQueue handoff). The holders sleep
		// with the connection. Hikari's housekeeper and connection adder are
		// executor workers waiting for their next task.
		corpusCase{
			workload: "HikariPoolExhaustion", args: []string{"24", "4"}, kind: "pool",
			ready: func(s []testjvm.ThreadStack) bool { return poolsCount(s, "worker-", "ConcurrentBag.borrow") >= 12 },
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "worker-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					switch {
					case st.Has("ConcurrentBag.borrow"), st.Has("HikariPool.getConnection"):
						return threadTruth{truthContention, "connection pool"}
					case st.Has("ConcurrentBag.requite") && st.Has("LockSupport.parkNanos") && !st.Has("- parking to wait for"):
						// Returning a connection while others wait: a
						// 10 µs pause between handoff attempts.
						return threadTruth{Verdict: truthSleep}
					}
					return threadTruth{truthContention, "h2"}
				case strings.HasPrefix(st.Name, "hikari:"):
					// hikari:housekeeper, hikari:connection-adder,
					// hikari:connection-closer.
					return poolsService(st, "connection pool", poolsIdleLoops...)
				}
				return threadTruth{}
			},
			topFrame: "ConcurrentBag.borrow",
		},
		// Commons Pool 2, maxTotal 3, 16 borrowers that hold an object
		// ~15 ms: ~13 wait in GenericObjectPool.borrowObject -> the pool's
		// own LinkedBlockingDeque.takeFirst (its notEmpty condition). The
		// pool's evictor and the program's "stats" sampler are
		// ScheduledThreadPoolExecutor workers waiting for their next run.
		corpusCase{
			workload: "CommonsPoolExhaustion", args: []string{"16", "3"}, kind: "pool",
			ready: func(s []testjvm.ThreadStack) bool {
				return poolsCount(s, "borrower-", "GenericObjectPool.borrowObject") >= 8
			},
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "borrower-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					// Waiting for an object (the deque's notEmpty), or
					// briefly for the deque's lock to borrow or return one:
					// the same pool either way.
					if st.Has("org.apache.commons.pool2.") {
						return threadTruth{truthContention, "object pool"}
					}
					return threadTruth{truthContention, "borrower"}
				case st.Name == "commons-pool-evictor", st.Name == "stats":
					// Both sample or sweep the pool under the deque's lock
					// when they run.
					return poolsService(st, "object pool", poolsIdleLoops...)
				}
				return threadTruth{}
			},
			// The first frame outside java.util.concurrent is the pool's
			// own deque; its caller, the borrow, names the pool as well.
			topFrame: "GenericObjectPool.borrowObject",
		},
		// HSQLDB in LOCKS mode: every UPDATE write-locks the one table until
		// commit, so one updater holds it (asleep before its commit) and
		// the others wait in Session.executeCompiledStatement on their
		// session's CountUpDownLatch until the holder's commit releases
		// them. An in-memory database runs no thread of its own.
		corpusCase{
			workload: "HsqldbTableLocks", args: []string{"16", "4"}, kind: "database",
			ready: func(s []testjvm.ThreadStack) bool { return poolsCount(s, "updater-", "CountUpDownLatch.await") >= 8 },
			label: func(st testjvm.ThreadStack) threadTruth {
				if !strings.HasPrefix(st.Name, "updater-") {
					return threadTruth{}
				}
				if tr, ok := basicTruth(st); ok {
					return tr
				}
				if st.Has("CountUpDownLatch.await") {
					return threadTruth{truthContention, "table lock"}
				}
				return threadTruth{truthContention, "hsqldb"}
			},
			// HSQLDB's own latch, or (the latch being waiting machinery
			// too) the statement execution that waits on it.
			topFrame: "Session.executeCompiledStatement",
		},
		// HttpClient 5, 4 pooled connections, 20 clients: ~16 wait to lease
		// a connection in the pool's lease future (BasicFuture.get), the 4
		// holders are RUNNABLE in the socket read of their response. The
		// JDK server's 8 workers: 4 asleep in the handler, 4 idle in
		// getTask; its dispatcher is RUNNABLE in epoll, its idle-timeout
		// timer waits for its next run; HttpClient's idle connection
		// evictor sleeps between runs.
		corpusCase{
			workload: "HttpClientPoolExhaustion", args: []string{"20", "8", "4"}, kind: "http",
			ready: func(s []testjvm.ThreadStack) bool { return poolsCount(s, "client-", "BasicFuture.get") >= 10 },
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "client-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					// Leasing (the lease future, or the pool's lock to
					// lease or release a connection).
					if st.Has("org.apache.hc.core5.pool.") || st.Has("PoolingHttpClientConnectionManager") {
						return threadTruth{truthContention, "connection pool"}
					}
					return threadTruth{truthContention, "http client"}
				case strings.HasPrefix(st.Name, "server-"), st.Name == "idle-timeout-task":
					return poolsService(st, "http server", poolsIdleLoops...)
				case st.Name == "HTTP-Dispatcher":
					// Its loop waits RUNNABLE in epoll; not RUNNABLE, it
					// waits for a lock (e.g. BLOCKED on the selector's
					// interrupt lock while a server thread wakes the
					// selector up).
					return poolsService(st, "http server")
				case strings.HasPrefix(st.Name, "idle-connection-evictor"):
					// Asleep between runs; any other wait is on the pool
					// it sweeps.
					return poolsService(st, "connection pool")
				}
				return threadTruth{}
			},
			// httpcore's own future (BasicFuture, on a lock condition), or
			// (the future being waiting machinery too) the pool's lease
			// future and the connection manager's lease request that wrap
			// it.
			topFrame: "StrictConnPool$1.get",
		},
	)
}
