package threaddump

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stack builds frames (top first) from "Class.method" strings.
func stack(fs ...string) []Frame {
	out := make([]Frame, len(fs))
	for i, f := range fs {
		k := strings.LastIndexByte(f, '.')
		out[i] = Frame{Class: f[:k], Method: f[k+1:]}
	}
	return out
}

// The wait rule on stacks as real libraries print them (top first). The
// table holds libraries the rule was written on and others it was not
// (marked "unseen"): the rule reads the stack's shape, never these names.
func TestWaitRule(t *testing.T) {
	park := []string{"jdk.internal.misc.Unsafe.park", "java.util.concurrent.locks.LockSupport.park"}
	cond := append(park, "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await")
	with := func(top []string, rest ...string) []Frame {
		return stack(append(append([]string{}, top...), rest...)...)
	}
	for _, tc := range []struct {
		name     string
		frames   []Frame
		program  string
		idle     bool
		callSite string
	}{
		{"executor worker in getTask", with(cond, "java.util.concurrent.LinkedBlockingQueue.take",
			"java.util.concurrent.ThreadPoolExecutor.getTask", "java.util.concurrent.ThreadPoolExecutor.runWorker",
			"java.util.concurrent.ThreadPoolExecutor$Worker.run", "java.lang.Thread.run"), "com.acme", true, ""},
		{"fork-join awaitWork", with(park, "java.util.concurrent.ForkJoinPool.awaitWork",
			"java.util.concurrent.ForkJoinPool.runWorker", "java.util.concurrent.ForkJoinWorkerThread.run"), "com.acme", true, ""},
		{"timer", stack("java.lang.Object.wait", "java.util.TimerThread.mainLoop", "java.util.TimerThread.run"), "com.acme", true, ""},
		{"finalizer", stack("java.lang.Object.wait", "java.lang.ref.ReferenceQueue.remove",
			"java.lang.ref.Finalizer$FinalizerThread.run"), "?", true, ""},
		{"jetty pool thread waits for a job", with(cond, "org.eclipse.jetty.util.BlockingArrayQueue.poll",
			"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
			"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run", "java.lang.Thread.run"), "com.acme", true,
			"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll"},
		{"jetty reserved thread on a semaphore", with(park, "java.util.concurrent.locks.AbstractQueuedSynchronizer.tryAcquireSharedNanos",
			"java.util.concurrent.Semaphore.tryAcquire",
			"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
			"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.run",
			"org.eclipse.jetty.util.thread.QueuedThreadPool.runJob",
			"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run", "java.lang.Thread.run"), "com.acme", true,
			"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait"},
		{"unseen: netty executor in takeTask", with(cond, "java.util.concurrent.LinkedBlockingQueue.take",
			"io.netty.util.concurrent.SingleThreadEventExecutor.takeTask", "io.netty.util.concurrent.DefaultEventExecutor.run",
			"io.netty.util.concurrent.SingleThreadEventExecutor$4.run", "io.netty.util.internal.ThreadExecutorMap$2.run",
			"io.netty.util.concurrent.FastThreadLocalRunnable.run", "java.lang.Thread.run"), "com.acme", true,
			"io.netty.util.concurrent.SingleThreadEventExecutor.takeTask"},
		{"unseen: disruptor consumer waits for the next event", with(cond,
			"com.lmax.disruptor.BlockingWaitStrategy.waitFor", "com.lmax.disruptor.ProcessingSequenceBarrier.waitFor",
			"com.lmax.disruptor.BatchEventProcessor.processEvents", "com.lmax.disruptor.BatchEventProcessor.run",
			"java.lang.Thread.run"), "com.acme", true, "com.lmax.disruptor.BlockingWaitStrategy.waitFor"},
		{"program's consumer loop takes from a queue", with(cond, "java.util.concurrent.LinkedBlockingQueue.take",
			"com.acme.Consumer.run", "java.lang.Thread.run"), "com.acme", true, "com.acme.Consumer.run"},
		{"exhausted connection pool", with(park, "java.util.concurrent.SynchronousQueue$TransferStack.transfer",
			"java.util.concurrent.SynchronousQueue.poll", "com.zaxxer.hikari.util.ConcurrentBag.borrow",
			"com.zaxxer.hikari.pool.HikariPool.getConnection", "com.zaxxer.hikari.HikariDataSource.getConnection",
			"com.acme.Worker.work", "com.acme.Worker.run", "java.lang.Thread.run"), "com.acme", false,
			"com.zaxxer.hikari.util.ConcurrentBag.borrow"},
		{"latch inside a task of an executor", with(park, "java.util.concurrent.CountDownLatch.await",
			"com.acme.Task.run", "java.util.concurrent.ThreadPoolExecutor.runWorker",
			"java.util.concurrent.ThreadPoolExecutor$Worker.run", "java.lang.Thread.run"), "com.acme", false, "com.acme.Task.run"},
		{"future inside the program's own work", with(park, "java.util.concurrent.FutureTask.get",
			"com.acme.Service.awaitResult", "com.acme.Service.process", "com.acme.Service$Worker.run",
			"java.lang.Thread.run"), "com.acme", false, "com.acme.Service.awaitResult"},
		{"the program's poller waits through a helper of its loop's class", stack("java.lang.Object.wait",
			"SessionServer.poll", "SessionServer.pollLoop", "SessionServer.lambda$main$0", "SessionServer$$Lambda/0x1.run",
			"java.lang.Thread.run"), "", true, "SessionServer.poll"},
		{"the program's loop reached through its own class's lambda is its own code", with(park, "java.util.concurrent.locks.LockSupport.park",
			"Server.awaitData", "Server.readLoop", "Server$$Lambda$1/0x0000000800c01234.run", "Server.descend", "Server.descend",
			"Server.lambda$main$0", "Server$$Lambda/0x2.run", "java.lang.Thread.run"), "", true, "Server.awaitData"},
		{"a lambda of another of the program's classes is work", with(park, "java.util.concurrent.locks.LockSupport.park",
			"Server.awaitData", "Server.readLoop", "Dispatcher$$Lambda$1/0x0000000800c01234.run", "Dispatcher.dispatch",
			"Dispatcher.lambda$main$0", "java.lang.Thread.run"), "", false, "Server.awaitData"},
		{"unseen: the JDK's HTTP client inside the program's request", with(park, "java.util.concurrent.CompletableFuture.get",
			"jdk.internal.net.http.HttpClientImpl.send", "jdk.internal.net.http.HttpClientFacade.send",
			"Client.request", "Client.lambda$main$0", "java.lang.Thread.run"), "", false, "jdk.internal.net.http.HttpClientImpl.send"},
		{"unseen: guava cache load of another thread", with(park, "com.google.common.util.concurrent.AbstractFuture.get",
			"com.google.common.util.concurrent.Uninterruptibles.getUninterruptibly",
			"com.google.common.cache.LocalCache$LoadingValueReference.waitForValue",
			"com.google.common.cache.LocalCache$Segment.waitForLoadingValue", "com.google.common.cache.LocalCache.get",
			"Reader.run", "java.lang.Thread.run"), "", false, "com.google.common.util.concurrent.Uninterruptibles.getUninterruptibly"},
		{"unseen: commons-pool borrow", with(cond, "org.apache.commons.pool2.impl.LinkedBlockingDeque.takeFirst",
			"org.apache.commons.pool2.impl.GenericObjectPool.borrowObject", "Borrower.lambda$main$0", "java.lang.Thread.run"),
			"", false, "org.apache.commons.pool2.impl.GenericObjectPool.borrowObject"},
		{"a library's thread waits in the program's callback", with(park, "java.util.concurrent.CountDownLatch.await",
			"com.acme.Handler.onEvent", "com.lmax.disruptor.BatchEventProcessor.processEvents",
			"com.lmax.disruptor.BatchEventProcessor.run", "java.lang.Thread.run"), "com.acme", false, "com.acme.Handler.onEvent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ApplyWaitRule(tc.frames, 0, tc.program)
			assert.Equal(t, tc.idle, r.Idle, r.Reason())
			if tc.callSite != "" {
				assert.Equal(t, tc.callSite, r.CallSite.Function())
			}
			assert.NotEmpty(t, r.Reason())
		})
	}
}

// Object.wait() on a structure's own monitor: the structure's class is
// machinery for the verdict (a library's buffer under the JDK's executor),
// while the call site still names its method.
func TestMonitorWaitRule(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		frames       []Frame
		idle         bool
		callSite     string
	}{
		{"unseen: Liberty's executor waits in its bounded buffer", "com.ibm.ws.threading.internal.BoundedBuffer$GetQueueLock",
			stack("java.lang.Object.wait", "com.ibm.ws.threading.internal.BoundedBuffer.waitGet_",
				"com.ibm.ws.threading.internal.BoundedBuffer.take", "java.util.concurrent.ThreadPoolExecutor.getTask",
				"java.util.concurrent.ThreadPoolExecutor.runWorker", "java.util.concurrent.ThreadPoolExecutor$Worker.run",
				"java.lang.Thread.runWith", "java.lang.Thread.run"), true, "com.ibm.ws.threading.internal.BoundedBuffer.waitGet_"},
		{"group commit: writers wait in the log's flush", "org.apache.derby.impl.store.raw.log.LogToFile",
			stack("java.lang.Object.wait", "org.apache.derby.impl.store.raw.log.LogToFile.flush",
				"org.apache.derby.impl.store.raw.log.FileLogger.flush", "org.apache.derby.impl.store.raw.xact.Xact.commit",
				"Writer.write", "Writer.lambda$main$0", "java.lang.Thread.run"), false, "org.apache.derby.impl.store.raw.log.LogToFile.flush"},
		{"the program's own structure: writers wait in its commit", "GroupCommit$Log",
			stack("java.lang.Object.wait", "GroupCommit$Log.commit", "GroupCommit.lambda$main$1", "GroupCommit$$Lambda/0x1.run",
				"java.lang.Thread.run"), false, "GroupCommit$Log.commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ApplyMonitorWaitRule(tc.frames, 0, "", tc.object)
			assert.Equal(t, tc.idle, r.Idle, r.Reason())
			assert.Equal(t, tc.callSite, r.CallSite.Function())
		})
	}
}

func TestOrganization(t *testing.T) {
	for class, want := range map[string]string{
		"java.util.concurrent.ThreadPoolExecutor": "jdk", "sun.nio.ch.EPoll": "jdk", "jdk.internal.misc.Unsafe": "jdk",
		"org.eclipse.jetty.util.thread.QueuedThreadPool": "org.eclipse", "com.zaxxer.hikari.pool.HikariPool": "com.zaxxer",
		"Main": "", "app.Main": "app",
	} {
		assert.Equal(t, want, Organization(class), class)
	}
}

// HotSpot's "<no object reference available>" takes its object from the
// next "- locked" line; a BLOCKED thread there re-locks.
func TestResolveHiddenWait(t *testing.T) {
	hidden := func(state State) *Thread {
		return &Thread{State: state, Locks: []LockEvent{
			{Action: LockWaitingOn, Frame: 0},
			{Action: LockLocked, Lock: Lock{Address: "0x1", Class: "app.Log"}, Frame: 2},
			{Action: LockLocked, Lock: Lock{Address: "0x2", Class: "app.Outer"}, Frame: 4},
		}}
	}
	w := hidden(StateWaiting)
	resolveHiddenWait(w)
	assert.Equal(t, LockEvent{Action: LockWaitingOn, Lock: Lock{Address: "0x1", Class: "app.Log"}, Frame: 0, Inferred: true}, w.Locks[0])
	assert.Equal(t, []Lock{{Address: "0x2", Class: "app.Outer"}}, w.Holds(), "wait() released app.Log, not app.Outer")
	b := hidden(StateBlocked)
	resolveHiddenWait(b)
	assert.Equal(t, LockWaitingToRelock, b.Locks[0].Action)
	ev, ok := b.BlockedOn()
	assert.True(t, ok)
	assert.Equal(t, "0x1", ev.Lock.Address)
}

// A thread waiting for its child process to exit (the JDK's Process waits
// on itself until the reaper notifies it) waits for something outside the
// JVM: io, not contention, though it waits inside the program's work (a
// commons-exec executor's thread, as in a Selenium dump).
func TestChildProcessWaitIsIO(t *testing.T) {
	const dump = `2024-01-01 00:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):

"CommandLine.executeAsync" #23 daemon prio=5 os_prio=31 cpu=0.30ms elapsed=40.10s tid=0x0000000143837a00 nid=0xa503 in Object.wait()  [0x000000016f6be000]
   java.lang.Thread.State: WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.8/Native Method)
	- waiting on <0x0000000601402858> (a java.lang.ProcessImpl)
	at java.lang.Object.wait(java.base@17.0.8/Object.java:338)
	at java.lang.ProcessImpl.waitFor(java.base@17.0.8/ProcessImpl.java:434)
	- locked <0x0000000601402858> (a java.lang.ProcessImpl)
	at org.apache.commons.exec.DefaultExecutor.executeInternal(DefaultExecutor.java:364)
	at org.apache.commons.exec.DefaultExecutor$1.run(DefaultExecutor.java:200)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

`
	d := parseOne(t, dump)
	var proc *LockInfo
	for _, li := range d.Locks() {
		if li.Lock.Class == "java.lang.ProcessImpl" {
			proc = li
		}
	}
	require.NotNil(t, proc)
	assert.Empty(t, proc.Waiters, "no contention on the process")
	require.Len(t, proc.Waiting, 1)
	r := proc.Waiting[0].Rule
	assert.True(t, r.IO)
	assert.True(t, r.Idle)
	assert.Contains(t, r.Reason(), "child process")
	assert.True(t, ChildProcessWait("java.lang.UNIXProcess"))
	assert.False(t, ChildProcessWait("com.example.ProcessImpl"))
}

// A timed Object.wait() on an object that no other thread of the dump
// uses is a pause between polls (a scheduler's worker polling a remote job
// waits so on its own object): sleep. The same wait with another thread
// waiting on the object, or untimed, stays what the rule says.
func TestTimedWaitOnOwnObjectIsSleep(t *testing.T) {
	thread := func(name, nid, state, addr string) string {
		wait := "in Object.wait()"
		st := "TIMED_WAITING (on object monitor)"
		if state == "WAITING" {
			st = "WAITING (on object monitor)"
		}
		return `"` + name + `" #30 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000001000 nid=` + nid + ` ` + wait + `  [0x00007f0000002000]
   java.lang.Thread.State: ` + st + `
	at java.lang.Object.wait(java.base@17.0.8/Native Method)
	- waiting on <` + addr + `> (a org.quartz.RemoteJob)
	at org.quartz.RemoteJob.awaitCompletion(RemoteJob.java:40)
	- locked <` + addr + `> (a org.quartz.RemoteJob)
	at com.example.jobs.Report.execute(Report.java:12)
	at org.quartz.core.JobRunShell.run(JobRunShell.java:202)
	at org.quartz.simpl.SimpleThreadPool$WorkerThread.run(SimpleThreadPool.java:573)

`
	}
	head := "2024-01-01 00:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):\n\n"
	verdict := func(text string) (sleep int, other int) {
		for _, li := range parseOne(t, text).Locks() {
			for _, w := range li.Waiting {
				if w.Rule.Sleep {
					sleep++
					assert.Contains(t, w.Rule.Reason(), "like a sleep")
				}
			}
			other += len(li.Waiters)
		}
		return
	}
	s, o := verdict(head + thread("worker-1", "0x101", "TIMED_WAITING", "0x0000000601402901") + thread("worker-2", "0x102", "TIMED_WAITING", "0x0000000601402902"))
	assert.Equal(t, 2, s, "each on its own object")
	assert.Zero(t, o)
	s, _ = verdict(head + thread("worker-1", "0x101", "TIMED_WAITING", "0x0000000601402901") + thread("worker-2", "0x102", "TIMED_WAITING", "0x0000000601402901"))
	assert.Zero(t, s, "two threads wait on one object: they wait for whoever notifies it")
	s, _ = verdict(head + thread("worker-1", "0x101", "WAITING", "0x0000000601402901"))
	assert.Zero(t, s, "an untimed wait is no pause")
}

// Objects per task (H2's row locks: each worker waits on the Transaction
// that holds its row): with two instances waited on, a worker in the same
// section that is not waiting may hold the other one, or be about to wait;
// which holds the waited one cannot be told, so none is named (a live
// H2 test caught a worker of the other row named as the releaser).
func TestNoReleaserNamedAmongPerTaskObjects(t *testing.T) {
	waiter := func(name, nid, addr string) string {
		return `"` + name + `" #30 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000001000 nid=` + nid + ` in Object.wait()  [0x00007f0000002000]
   java.lang.Thread.State: TIMED_WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.8/Native Method)
	- waiting on <` + addr + `> (a org.h2.mvstore.tx.Transaction)
	at org.h2.mvstore.tx.Transaction.waitForThisToEnd(Transaction.java:700)
	- locked <` + addr + `> (a org.h2.mvstore.tx.Transaction)
	at org.h2.mvstore.tx.Transaction.waitFor(Transaction.java:650)
	at org.h2.mvstore.tx.TransactionMap.set(TransactionMap.java:400)
	at org.h2.command.dml.Update.update(Update.java:100)
	at com.example.Worker.run(Worker.java:20)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

`
	}
	arriving := `"worker-9" #39 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000009000 nid=0x109 runnable  [0x00007f0000002000]
   java.lang.Thread.State: RUNNABLE
	at org.h2.mvstore.tx.Transaction.waitForThisToEnd(Transaction.java:690)
	at org.h2.mvstore.tx.Transaction.waitFor(Transaction.java:650)
	at org.h2.mvstore.tx.TransactionMap.set(TransactionMap.java:400)
	at org.h2.command.dml.Update.update(Update.java:100)
	at com.example.Worker.run(Worker.java:20)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

`
	d := parseOne(t, "2024-01-01 00:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):\n\n"+
		waiter("worker-1", "0x101", "0x0000000601400001")+waiter("worker-2", "0x102", "0x0000000601400001")+
		waiter("worker-3", "0x103", "0x0000000601400002")+waiter("worker-4", "0x104", "0x0000000601400002")+arriving)
	n := 0
	for _, li := range d.Locks() {
		if li.Lock.Class != "org.h2.mvstore.tx.Transaction" {
			continue
		}
		n++
		assert.Len(t, li.Waiters, 2, "contention: they wait for the row's holder")
		assert.Nil(t, li.Releaser, "%s: a releaser among per-task objects cannot be told", li.Lock.Address)
	}
	assert.Equal(t, 2, n)
}

// A task is a loop of its own: a Runnable or Callable that a loop of
// another organization runs (an executor's worker) or that a wrapper runs
// is idle at the top of its own run() when nothing of another organization
// (in the program, of another class) lies between its run() and the wait,
// and it asks for its next item rather than for another thread's result.
// The names are made up: the rule reads the shape.
func TestTaskLoopRule(t *testing.T) {
	park := []string{"jdk.internal.misc.Unsafe.park", "java.util.concurrent.locks.LockSupport.parkNanos"}
	cond := append(park, "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.awaitNanos")
	latch := append(park, "java.util.concurrent.CountDownLatch.await")
	executor := []string{"java.util.concurrent.ThreadPoolExecutor.runWorker",
		"java.util.concurrent.ThreadPoolExecutor$Worker.run", "java.lang.Thread.run"}
	submitted := append([]string{"java.util.concurrent.Executors$RunnableAdapter.call",
		"java.util.concurrent.FutureTask.run"}, executor...)
	with := func(parts ...[]string) []Frame {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return stack(all...)
	}
	one := func(fs ...string) []string { return fs }
	for _, tc := range []struct {
		name    string
		frames  []Frame
		program string
		idle    bool
		task    bool
	}{
		{"a pool's idle remover waits on a condition for its next period, under an executor",
			with(cond, one("org.pool.idle.IdleRemover$Remover.run"), executor), "com.acme", true, true},
		{"a framework's consumer takes its next item, submitted to an executor",
			with(park, one("java.util.concurrent.LinkedBlockingQueue.poll", "org.frame.bus.Consumer.nextEvent",
				"org.frame.bus.Consumer.run"), submitted), "com.acme", true, true},
		{"a framework's consumer on the program's own executor (Netty-like, through wrappers)",
			with(park, one("java.util.concurrent.LinkedBlockingQueue.take", "org.frame.loop.Executor.takeTask",
				"org.frame.loop.DefaultLoop.run", "org.frame.loop.Executor$4.run", "org.frame.internal.Map$2.run"), executor),
			"com.acme", true, true},
		{"the program's consumer task calls take itself (a lambda submitted to an executor)",
			with(park, one("java.util.concurrent.LinkedBlockingQueue.take", "Main.lambda$main$0", "Main$$Lambda/0x1.run"), submitted),
			"", true, true},
		{"a library's task waits on a latch: another thread's result, inside work",
			with(latch, one("org.pool.Filler.fill", "org.pool.Filler.run"), executor), "com.acme", false, false},
		{"a library's task joins a thread", with(one("java.lang.Object.wait", "java.lang.Thread.join",
			"org.pool.Closer.run"), executor), "com.acme", false, false},
		{"a library's task waits on a queue inside the program's callback",
			with(park, one("java.util.concurrent.LinkedBlockingQueue.take", "com.acme.Handler.onEvent",
				"org.frame.bus.Consumer.run"), executor), "com.acme", false, false},
		{"the program's task waits through a helper of another class",
			with(cond, one("com.acme.Store.awaitSpace", "com.acme.Task.run"), executor), "com.acme", false, false},
		{"a wrapper runs one task that waits on a latch: not idle because the wrapper is the thread's loop",
			with(latch, one("org.lib.Job.await", "org.lib.Job.run", "org.lib.TimeoutHandler$1.run", "java.lang.Thread.run")),
			"com.acme", false, false},
		{"a wrapper runs one task that asks for its next item: idle",
			with(cond, one("org.lib.Poller.run", "org.lib.TimeoutHandler$1.run", "java.lang.Thread.run")), "com.acme", true, false},
		{"a launcher's main is no loop: what it runs is work",
			with(park, one("java.util.concurrent.LinkedBlockingQueue.take", "org.build.Main.run", "org.launch.Boot.main")),
			"org.launch", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ApplyWaitRule(tc.frames, 0, tc.program)
			assert.Equal(t, tc.idle, r.Idle, r.Reason())
			assert.Equal(t, tc.task, r.Task, r.Reason())
			if tc.task {
				assert.Contains(t, r.Reason(), "task's own loop")
			}
		})
	}
}

// A scheduler's worker keeps its own lock while it runs a job (Quartz's
// SimpleThreadPool$WorkerThread): a timed wait on the job's own object is
// still no contention when no other thread of the dump asks for that lock;
// when one queues for it, whoever needs it waits too: contention.
func TestTimedWaitHoldingOnlyItsOwnLockIsSleep(t *testing.T) {
	worker := func(name, nid, obj, own string) string {
		return `"` + name + `" #30 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000001000 nid=` + nid + ` in Object.wait()  [0x00007f0000002000]
   java.lang.Thread.State: TIMED_WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.8/Native Method)
	- waiting on <no object reference available>
	at com.example.PollJob.execute(PollJob.java:51)
	- locked <` + obj + `> (a com.example.PollJob)
	at org.quartz.core.JobRunShell.run(JobRunShell.java:203)
	at org.quartz.simpl.SimpleThreadPool$WorkerThread.run(SimpleThreadPool.java:566)
	- locked <` + own + `> (a java.lang.Object)

`
	}
	blocked := `"scheduler" #40 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000004000 nid=0x140 waiting for monitor entry  [0x00007f0000005000]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at org.quartz.simpl.SimpleThreadPool$WorkerThread.run(SimpleThreadPool.java:540)
	- waiting to lock <0x0000000601400011> (a java.lang.Object)
	at com.example.Scheduler.handOff(Scheduler.java:9)
	at com.example.Scheduler.run(Scheduler.java:5)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

`
	head := "2024-01-01 00:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):\n\n"
	count := func(text string) (sleep, contention int) {
		for _, li := range parseOne(t, text).Locks() {
			if li.Lock.Class != "com.example.PollJob" {
				continue
			}
			// Not contention: a pause, or idle when the rule
			// already finds no work between the loop and the wait.
			sleep += len(li.Waiting)
			contention += len(li.Waiters)
		}
		return
	}
	for _, tc := range []struct {
		name              string
		dump              string
		sleep, contention int
	}{
		{"each worker holds only its own lock", head + worker("jobs_Worker-1", "0x101", "0x0000000601400001", "0x0000000601400011") +
			worker("jobs_Worker-2", "0x102", "0x0000000601400002", "0x0000000601400012"), 2, 0},
		{"another thread queues for a worker's lock", head + worker("jobs_Worker-1", "0x101", "0x0000000601400001", "0x0000000601400011") +
			blocked, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := count(tc.dump)
			assert.Equal(t, tc.sleep, s)
			assert.Equal(t, tc.contention, c)
		})
	}
}

// A task of the JDK's executor runs under the executor's worker lock
// (ThreadPoolExecutor$Worker, an ownable synchronizer): a task that is idle
// by the rule stays idle when no other thread asks for that lock.
func TestIdleTaskHoldingItsExecutorsWorkerLock(t *testing.T) {
	const dump = `2024-01-01 00:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):

"audit-1" #48 daemon prio=5 os_prio=0 cpu=13.28ms elapsed=5.65s tid=0x00007f55c800c9a0 nid=0x6a99 waiting on condition  [0x00007f55decfe000]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x0000000687440658> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
	at java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:341)
	at java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await(java.base@17.0.15/AbstractQueuedSynchronizer.java:1630)
	at java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.15/LinkedBlockingQueue.java:435)
	at io.netty.util.concurrent.SingleThreadEventExecutor.takeTask(SingleThreadEventExecutor.java:243)
	at io.netty.util.concurrent.DefaultEventExecutor.run(DefaultEventExecutor.java:64)
	at io.netty.util.concurrent.SingleThreadEventExecutor$4.run(SingleThreadEventExecutor.java:1007)
	at io.netty.util.internal.ThreadExecutorMap$2.run(ThreadExecutorMap.java:74)
	at java.util.concurrent.ThreadPoolExecutor.runWorker(java.base@17.0.15/ThreadPoolExecutor.java:1136)
	at java.util.concurrent.ThreadPoolExecutor$Worker.run(java.base@17.0.15/ThreadPoolExecutor.java:635)
	at java.lang.Thread.run(java.base@17.0.15/Thread.java:840)

   Locked ownable synchronizers:
	- <0x00000006874406a0> (a java.util.concurrent.ThreadPoolExecutor$Worker)

`
	d := parseOne(t, dump)
	n := 0
	for _, li := range d.Locks() {
		if li.Lock.Class != "java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject" {
			continue
		}
		n++
		assert.Empty(t, li.Waiters, "no contention: nobody asks for the worker lock it holds")
		require.Len(t, li.Waiting, 1)
		assert.True(t, li.Waiting[0].Rule.Task, li.Waiting[0].Rule.Reason())
	}
	assert.Equal(t, 1, n)
}

// The other way: a thread idle by the rule that holds a monitor another
// thread is queued for holds that thread up: contention.
func TestIdleWaitHoldingAnAskedForLockIsContention(t *testing.T) {
	const dump = `2024-01-01 00:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.8+7 mixed mode):

"consumer" #30 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000001000 nid=0x101 waiting on condition  [0x00007f0000002000]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.8/Native Method)
	- parking to wait for  <0x0000000601400001> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
	at java.util.concurrent.locks.LockSupport.park(java.base@17.0.8/LockSupport.java:341)
	at java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject.await(java.base@17.0.8/AbstractQueuedSynchronizer.java:1630)
	at java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.8/LinkedBlockingQueue.java:435)
	at com.example.Consumer.run(Consumer.java:20)
	- locked <0x0000000601400099> (a com.example.Registry)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

"reader" #31 prio=5 os_prio=0 cpu=1.00ms elapsed=9.00s tid=0x00007f0000003000 nid=0x102 waiting for monitor entry  [0x00007f0000004000]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at com.example.Registry.lookup(Registry.java:9)
	- waiting to lock <0x0000000601400099> (a com.example.Registry)
	at com.example.Reader.run(Reader.java:5)
	at java.lang.Thread.run(java.base@17.0.8/Thread.java:833)

`
	d := parseOne(t, dump)
	found := false
	for _, li := range d.Locks() {
		if li.Lock.Address != "0x0000000601400001" {
			continue
		}
		found = true
		assert.Empty(t, li.Waiting, "not idle: a thread is queued for the monitor it holds")
		require.Len(t, li.Waiters, 1)
		assert.Equal(t, "consumer", li.Waiters[0].Thread.Name)
	}
	assert.True(t, found)
}
