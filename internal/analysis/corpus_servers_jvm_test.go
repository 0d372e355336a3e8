package analysis

import (
	"strings"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The "servers" group of the labelled corpus: an HTTP server (Jetty 12), a
// logging library (Logback) and two caches (Caffeine, Guava), each under
// the load testdata/javalibs/<workload>.java describes. The rules below read
// only the dump text.

func init() {
	corpusCases = append(corpusCases,
		corpusCase{
			workload: "JettySyncHandler",
			args:     []string{"24", "40", "2"},
			kind:     "http",
			ready: func(stacks []testjvm.ThreadStack) bool {
				return srvCount(stacks, labelJettySyncHandler, "handler monitor") >= 12
			},
			label:    labelJettySyncHandler,
			topFrame: "HttpClientImpl.send",
		},
		corpusCase{
			workload: "LogbackFileAppender",
			args:     []string{"16", "100"},
			kind:     "logging",
			ready: func(stacks []testjvm.ThreadStack) bool {
				return srvCount(stacks, labelLogbackFileAppender, "appender lock") >= 8
			},
			label:    labelLogbackFileAppender,
			topFrame: "OutputStreamAppender.writeBytes",
		},
		corpusCase{
			workload: "CaffeineSameKeyLoad",
			args:     []string{"16", "2", "20", "2", "1"},
			kind:     "cache",
			ready: func(stacks []testjvm.ThreadStack) bool {
				return srvCount(stacks, labelCaffeineSameKeyLoad, "loading key") >= 8
			},
			label:    labelCaffeineSameKeyLoad,
			topFrame: "BoundedLocalCache.doComputeIfAbsent",
		},
		corpusCase{
			workload: "GuavaCacheLoad",
			args:     []string{"16", "2", "20", "2", "1"},
			kind:     "cache",
			ready: func(stacks []testjvm.ThreadStack) bool {
				return srvCount(stacks, labelGuavaCacheLoad, "loading key") >= 8
			},
			label: labelGuavaCacheLoad,
			// Guava's own future (AbstractFutureState.blockingGet in 33.5,
			// AbstractFuture.get before) sits between LockSupport.park and
			// the cache's waitForValue: the future's package is machinery.
			topFrame: "LocalCache$LoadingValueReference.waitForValue",
		},
	)
}

// srvCount counts the threads of a dump that label calls contention on
// resource.
func srvCount(stacks []testjvm.ThreadStack, label func(testjvm.ThreadStack) threadTruth, resource string) int {
	n := 0
	for _, st := range stacks {
		if t := label(st); t.Verdict == truthContention && t.Resource == resource {
			n++
		}
	}
	return n
}

// srvParked reports whether a thread is parked (WAITING or TIMED_WAITING on
// a j.u.c synchronizer).
func srvParked(st testjvm.ThreadStack) bool {
	return strings.HasSuffix(st.State, "(parking)")
}

// labelJettySyncHandler: Jetty 12's request threads convoy on the handler's
// monitor; the rest of Jetty's pool, its scheduler and the JDK HttpClient's
// executor are idle.
func labelJettySyncHandler(st testjvm.ThreadStack) threadTruth {
	// RUNNABLE: the acceptor (in accept), the selector (in epoll), a thread
	// parsing or writing; Thread.sleep: the request holding the monitor,
	// or main.
	if t, ok := basicTruth(st); ok {
		return t
	}
	switch {
	case strings.HasPrefix(st.Name, "qtp"):
		switch {
		case strings.HasPrefix(st.State, "BLOCKED") && st.Has("JettySyncHandler.serve"):
			return threadTruth{Verdict: truthContention, Resource: "handler monitor"}
		case srvParked(st) && st.Has("QueuedThreadPool$Runner.idleJobPoll"):
			// An idle pool thread waiting for a job.
			return threadTruth{Verdict: truthIdle}
		case srvParked(st) && st.Has("ReservedThreadExecutor$ReservedThread.waitForTask"):
			// A reserved thread waiting to be handed a job.
			return threadTruth{Verdict: truthIdle}
		}
	case strings.HasPrefix(st.Name, "Scheduler-"):
		// Jetty's timer thread between timeouts.
		if srvParked(st) && st.Has("ScheduledThreadPoolExecutor$DelayedWorkQueue.take") {
			return threadTruth{Verdict: truthIdle}
		}
	case strings.HasPrefix(st.Name, "HttpClient-") && strings.Contains(st.Name, "-Worker-"):
		// The JDK client's executor between response-processing tasks.
		if srvParked(st) && st.Has("ThreadPoolExecutor.getTask") {
			return threadTruth{Verdict: truthIdle}
		}
	case strings.HasPrefix(st.Name, "client-"):
		if srvParked(st) && st.Has("HttpClientImpl.send") {
			return jettyClientTruth
		}
	}
	return threadTruth{}
}

// jettyClientTruth is the truth for a load-generating client thread parked
// in HttpClient.send until the server answers: it cannot go on until
// another thread acts (the client's selector completes the future when the
// server's handler, queued on the monitor, answers), so it waits for a
// future inside its work: contention on the HTTP response. There are always
// as many as there are clients, one more than the monitor's waiters, so
// the response is the top resource and the monitor the second.
var jettyClientTruth = threadTruth{Verdict: truthContention, Resource: "HTTP response"}

// labelLogbackFileAppender: loggers convoy on the file appender's
// streamWriteLock; Logback's AsyncAppender worker is idle.
func labelLogbackFileAppender(st testjvm.ThreadStack) threadTruth {
	// RUNNABLE: a logger formatting an event or holding the lock in the
	// write; Thread.sleep: "audit", "truncator", main.
	if t, ok := basicTruth(st); ok {
		return t
	}
	switch {
	case strings.HasPrefix(st.Name, "logger-"):
		if srvParked(st) && st.Has("ReentrantLock") && st.Has("ch.qos.logback.core.OutputStreamAppender.writeBytes") {
			return threadTruth{Verdict: truthContention, Resource: "appender lock"}
		}
	case strings.HasPrefix(st.Name, "AsyncAppender-Worker-"):
		// Waiting in its queue's take() for the next audit event.
		if srvParked(st) && st.Has("AsyncAppenderBase$Worker.run") && st.Has("BlockingQueue.take") {
			return threadTruth{Verdict: truthIdle}
		}
	}
	return threadTruth{}
}

// labelCaffeineSameKeyLoad: readers wait on the monitor of the loading
// key's ConcurrentHashMap bin; Caffeine's maintenance thread (the common
// pool's worker) is idle.
func labelCaffeineSameKeyLoad(st testjvm.ThreadStack) threadTruth {
	// Thread.sleep: a reader in the loader (the slow backend) or thinking.
	if t, ok := basicTruth(st); ok {
		return t
	}
	// BLOCKED on a bin's monitor in ConcurrentHashMap.compute (get) or
	// computeIfPresent (remove, eviction) under Caffeine's frames.
	cacheBin := strings.HasPrefix(st.State, "BLOCKED") &&
		st.Has("java.util.concurrent.ConcurrentHashMap.compute") &&
		st.Has("com.github.benmanes.caffeine.cache.")
	switch {
	case strings.HasPrefix(st.Name, "reader-"):
		if cacheBin {
			return threadTruth{Verdict: truthContention, Resource: "loading key"}
		}
	case strings.HasPrefix(st.Name, "ForkJoinPool.commonPool-worker-"):
		switch {
		case cacheBin:
			// Maintenance evicting an entry whose bin a load holds.
			return threadTruth{Verdict: truthContention, Resource: "loading key"}
		case srvParked(st) && st.Has("ForkJoinPool.awaitWork"):
			return threadTruth{Verdict: truthIdle}
		}
	}
	return threadTruth{}
}

// labelGuavaCacheLoad: getters wait on the loading key's future; the fixed
// pool "refresher-N" is idle.
func labelGuavaCacheLoad(st testjvm.ThreadStack) threadTruth {
	// Thread.sleep: a getter in the loader (the slow backend) or thinking.
	if t, ok := basicTruth(st); ok {
		return t
	}
	switch {
	case strings.HasPrefix(st.Name, "getter-"):
		switch {
		case srvParked(st) && st.Has("LocalCache$LoadingValueReference.waitForValue"):
			return threadTruth{Verdict: truthContention, Resource: "loading key"}
		case srvParked(st) && st.Has("ReentrantLock") && st.Has("com.google.common.cache.LocalCache$Segment."):
			// Queued on the segment's lock (LocalCache$Segment is a
			// ReentrantLock) for a moment after a value expires, or to
			// store a loaded value.
			return threadTruth{Verdict: truthContention, Resource: "segment lock"}
		}
	case strings.HasPrefix(st.Name, "refresher-"):
		// Waiting in the pool's getTask for its once-a-second task.
		if srvParked(st) && st.Has("ThreadPoolExecutor.getTask") {
			return threadTruth{Verdict: truthIdle}
		}
	}
	return threadTruth{}
}
