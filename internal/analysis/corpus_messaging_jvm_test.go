package analysis

import (
	"strings"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The corpus cases of the messaging group: LMAX Disruptor (producers on a
// full ring), Apache Lucene (indexers committing one IndexWriter) and Netty
// (a business handler on a DefaultEventExecutorGroup serialised on one
// monitor). The rules below follow what each workload's header comment
// (testdata/javalibs/<workload>.java) says every thread does.

// msgFrames are a stack's frame lines ("at ..."), without the "at ".
func msgFrames(st testjvm.ThreadStack) []string {
	var out []string
	for _, l := range st.Lines {
		if f, ok := strings.CutPrefix(l, "at "); ok {
			out = append(out, f)
		}
	}
	return out
}

// msgMachinery reports a frame of the JDK's waiting machinery: parking,
// Object.wait, and java.util.concurrent's locks, queues, latches and
// futures (and the ForkJoinPool.managedBlock they block through).
func msgMachinery(f string) bool {
	for _, p := range []string{
		"jdk.internal.misc.Unsafe.park", "sun.misc.Unsafe.park", "java.lang.Object.wait",
		"java.util.concurrent.", "java.lang.VirtualThread.park",
	} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// msgCallSite is the first frame from the top outside the waiting
// machinery: where the thread called in to wait.
func msgCallSite(st testjvm.ThreadStack) string {
	for _, f := range msgFrames(st) {
		if !msgMachinery(f) {
			return f
		}
	}
	return ""
}

// msgCallsIn reports a thread whose call site (msgCallSite) is in method
// (e.g. "IndexWriter.commitInternal"), followed by '('.
func msgCallsIn(st testjvm.ThreadStack, method string) bool {
	return strings.Contains(msgCallSite(st), method+"(")
}

// msgBlockedOn is the class of the monitor a BLOCKED thread waits to lock
// ("java.lang.Object"), or "".
func msgBlockedOn(st testjvm.ThreadStack) string {
	if !strings.HasPrefix(st.State, "BLOCKED") {
		return ""
	}
	for _, l := range st.Lines {
		if rest, ok := strings.CutPrefix(l, "- waiting to lock <"); ok {
			if _, class, ok := strings.Cut(rest, "(a "); ok {
				return strings.TrimSuffix(class, ")")
			}
		}
	}
	return ""
}

// msgCount counts the threads whose name starts with prefix, that are not
// running or sleeping, and for which is reports true.
func msgCount(stacks []testjvm.ThreadStack, prefix string, is func(testjvm.ThreadStack) bool) int {
	n := 0
	for _, st := range stacks {
		if !strings.HasPrefix(st.Name, prefix) {
			continue
		}
		if _, ok := basicTruth(st); ok || st.State == "" {
			continue
		}
		if is(st) {
			n++
		}
	}
	return n
}

// Disruptor: the producers wait for ring capacity in
// MultiProducerSequencer.next, a LockSupport.parkNanos(1) loop with no
// blocker; the idle ring's consumers wait for their next event in
// BlockingWaitStrategy.waitFor (Object.wait on its mutex).
func labelDisruptorRingFull(st testjvm.ThreadStack) threadTruth {
	switch {
	case strings.HasPrefix(st.Name, "producer-"):
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		if msgCallsIn(st, "MultiProducerSequencer.next") {
			return threadTruth{truthContention, "ring capacity"}
		}
		return threadTruth{truthContention, "disruptor"}
	case st.Name == "slow-consumer", strings.HasPrefix(st.Name, "idle-consumer-"):
		// The slow consumer sleeps in its handler (its ~1 ms of work);
		// should its ring ever run empty it waits for events like the
		// idle ones.
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		if msgCallsIn(st, "WaitStrategy.waitFor") && !strings.HasPrefix(st.State, "BLOCKED") {
			return threadTruth{Verdict: truthIdle}
		}
		// Woken by a publish, re-entering the strategy's mutex.
		return threadTruth{truthContention, "wait strategy mutex"}
	}
	return threadTruth{}
}

func readyDisruptorRingFull(stacks []testjvm.ThreadStack) bool {
	producers := msgCount(stacks, "producer-", func(st testjvm.ThreadStack) bool {
		return msgCallsIn(st, "MultiProducerSequencer.next")
	})
	idle := msgCount(stacks, "idle-consumer-", func(st testjvm.ThreadStack) bool {
		return msgCallsIn(st, "BlockingWaitStrategy.waitFor")
	})
	return producers >= 4 && idle >= 1
}

// Lucene: the indexers queue on IndexWriter's commitLock (a plain Object
// monitor, BLOCKED in commitInternal) while one commits. The committer may
// wait for merges on commit; merge threads exist only while they merge;
// the NRT reopen thread waits for its next refresh.
func labelLuceneIndexCommit(st testjvm.ThreadStack) threadTruth {
	switch {
	case strings.HasPrefix(st.Name, "indexer-"):
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		return luceneWait(st)
	case strings.HasPrefix(st.Name, "Lucene Merge Thread"):
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		if st.Has("MergeRateLimiter") {
			// Paused by the merge rate limiter: a pause by design.
			return threadTruth{Verdict: truthSleep}
		}
		return luceneWait(st)
	case st.Name == "nrt-reopen":
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		if msgCallsIn(st, "ControlledRealTimeReopenThread.run") {
			// Waiting (reopenCond.awaitNanos) for the next refresh.
			return threadTruth{Verdict: truthIdle}
		}
		return luceneWait(st)
	}
	return threadTruth{}
}

// luceneWait labels a waiting Lucene thread by where it waits.
func luceneWait(st testjvm.ThreadStack) threadTruth {
	switch class := msgBlockedOn(st); {
	case msgCallsIn(st, "IndexWriter.commitInternal") && class != "":
		return threadTruth{truthContention, "commit lock"}
	case msgCallsIn(st, "MergeSpecification.await"):
		// The committer, holding commitLock, waits for the merges it
		// asked for on commit (the merge threads must finish them).
		return threadTruth{truthContention, "merge on commit"}
	case st.Has("DocumentsWriterStallControl"):
		return threadTruth{truthContention, "indexing stall"}
	case st.Has("ConcurrentMergeScheduler.maybeStall"):
		return threadTruth{truthContention, "merge backlog"}
	case class == "org.apache.lucene.index.IndexWriter":
		return threadTruth{truthContention, "IndexWriter monitor"}
	case class != "":
		return threadTruth{truthContention, "lucene monitor " + class}
	}
	return threadTruth{truthContention, "lucene"}
}

func readyLuceneIndexCommit(stacks []testjvm.ThreadStack) bool {
	return msgCount(stacks, "indexer-", func(st testjvm.ThreadStack) bool {
		return luceneWait(st).Resource == "commit lock"
	}) >= 6
}

// Netty: the biz executors queue on the handler's shared monitor (BLOCKED
// in NettySyncHandler$Biz.channelRead) while one holds it asleep; an
// executor with nothing queued, and the idle-biz group's, wait for a task
// in SingleThreadEventExecutor.takeTask. Event loops and clients are
// RUNNABLE in epoll and socket reads: running (I/O).
func labelNettySyncHandler(st testjvm.ThreadStack) threadTruth {
	netty := func(role string) threadTruth {
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		switch {
		case msgCallsIn(st, "SingleThreadEventExecutor.takeTask"):
			return threadTruth{Verdict: truthIdle}
		case role == "biz" && msgBlockedOn(st) != "" && msgCallsIn(st, "NettySyncHandler$Biz.channelRead"):
			return threadTruth{truthContention, "handler monitor"}
		case role == "loop" && msgBlockedOn(st) == "" && st.Has("NioEventLoop.run"):
			// An event loop parked between its tasks and its selector.
			return threadTruth{Verdict: truthIdle}
		}
		return threadTruth{truthContention, "netty"}
	}
	switch {
	case strings.HasPrefix(st.Name, "client-"):
		if tr, ok := basicTruth(st); ok {
			return tr
		}
		return threadTruth{truthContention, "server reply"}
	case strings.HasPrefix(st.Name, "biz-"):
		return netty("biz")
	case strings.HasPrefix(st.Name, "idle-biz-"):
		return netty("idle")
	case strings.HasPrefix(st.Name, "boss-"), strings.HasPrefix(st.Name, "worker-"):
		return netty("loop")
	}
	return threadTruth{}
}

func readyNettySyncHandler(stacks []testjvm.ThreadStack) bool {
	biz := msgCount(stacks, "biz-", func(st testjvm.ThreadStack) bool {
		return labelNettySyncHandler(st).Resource == "handler monitor"
	})
	idle := msgCount(stacks, "idle-biz-", func(st testjvm.ThreadStack) bool {
		return msgCallsIn(st, "SingleThreadEventExecutor.takeTask")
	})
	return biz >= 4 && idle >= 1
}

func init() {
	corpusCases = append(corpusCases,
		corpusCase{
			workload: "DisruptorRingFull", args: []string{"8", "64"}, kind: "messaging",
			ready: readyDisruptorRingFull, label: labelDisruptorRingFull,
			topFrame: "MultiProducerSequencer.next",
		},
		corpusCase{
			workload: "LuceneIndexCommit", args: []string{"12", "50", "20000"}, kind: "search",
			ready: readyLuceneIndexCommit, label: labelLuceneIndexCommit,
			topFrame: "IndexWriter.commitInternal",
		},
		corpusCase{
			workload: "NettySyncHandler", args: []string{"16"}, kind: "messaging",
			ready: readyNettySyncHandler, label: labelNettySyncHandler,
			topFrame: "NettySyncHandler$Biz.channelRead",
		},
	)
}
