package threaddump

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Edge cases the corpus does not cover. Each snippet follows what HotSpot
// prints (src/hotspot/share/runtime/{javaThread,vframe}.cpp); the real-JVM
// tests in jvm_test.go cover the common shapes end to end.

func parseOne(t *testing.T, text string) *Dump {
	t.Helper()
	dumps, err := ParseString(text)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	return dumps[0]
}

func TestHeaderFields(t *testing.T) {
	tests := []struct {
		name   string
		header string
		check  func(t *testing.T, th *Thread)
	}{
		{"jdk21 os tid and decimal nid", `"Reference Handler" #9 [15] daemon prio=10 os_prio=0 cpu=9.07ms elapsed=287.91s tid=0x00007f0490134f70 nid=15 waiting on condition  [0x00007f0452eee000]`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, "Reference Handler", th.Name)
				assert.Equal(t, int64(9), th.ID)
				assert.Equal(t, int64(15), th.OSThreadID)
				assert.True(t, th.Daemon)
				assert.Equal(t, 10, th.Priority)
				assert.Equal(t, 9070*time.Microsecond, th.CPU)
				assert.Equal(t, 287910*time.Millisecond, th.Elapsed)
				assert.Equal(t, "0x00007f0490134f70", th.NativeAddress)
				assert.Equal(t, "waiting on condition", th.Status)
			}},
		{"jdk11 hex nid", `"main" #1 prio=5 os_prio=0 cpu=75.83ms elapsed=9.33s tid=0x00007fb5bc013800 nid=0xd85 waiting on condition  [0x00007fb5c3021000]`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, int64(0xd85), th.OSThreadID)
				assert.False(t, th.Daemon)
			}},
		{"decimal comma locale", `"GC Thread#0" os_prio=2 cpu=125,50ms elapsed=507,38s tid=0x0000024e7d0fb880 nid=42612 runnable  `,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, 125500*time.Microsecond, th.CPU)
				assert.Equal(t, 507380*time.Millisecond, th.Elapsed)
				assert.Equal(t, "runnable", th.Status)
				assert.Zero(t, th.ID)
			}},
		{"jdk25 allocated and defined classes", `"main" #3 [5891] prio=5 os_prio=31 cpu=508.53ms elapsed=24.44s allocated=103M defined_classes=2343 tid=0x000000013e00d800 nid=5891 runnable  [0x000000016fc69000]`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, int64(103<<20), th.Allocated)
				assert.Equal(t, int64(2343), th.DefinedClasses)
			}},
		{"name with quotes, commas, colons, brackets", `"a "quoted", name: [x] #1 prio=1" #42 daemon prio=5 os_prio=0 tid=0x01 nid=0x2a runnable`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, `a "quoted", name: [x] #1 prio=1`, th.Name)
				assert.Equal(t, int64(42), th.ID)
				assert.Equal(t, int64(42), th.OSThreadID)
			}},
		{"non-ASCII name", `"Ünïcødé-线程-1" #7 prio=5 os_prio=0 tid=0x01 nid=0x10 sleeping`,
			func(t *testing.T, th *Thread) { assert.Equal(t, "Ünïcødé-线程-1", th.Name) }},
		{"bytes that are not UTF-8", "\"caf\xe9\" #7 prio=5 os_prio=0 tid=0x01 nid=0x10 sleeping",
			func(t *testing.T, th *Thread) { assert.Equal(t, "caf\uFFFD", th.Name) }},
		{"visualvm", `"http-nio-8080-exec-3" - Thread t@57`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, "http-nio-8080-exec-3", th.Name)
				assert.Equal(t, int64(57), th.ID)
			}},
		{"carrier without nid", `"ForkJoinPool-1-worker-1" #65 [62471] daemon prio=5 os_prio=31 cpu=305.89ms elapsed=15.79s allocated=39288B defined_classes=4 tid=0x000000013e056a00  [0x0000000174151000]`,
			func(t *testing.T, th *Thread) {
				assert.Equal(t, int64(62471), th.OSThreadID)
				assert.Equal(t, int64(39288), th.Allocated)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := parseOne(t, "Full thread dump OpenJDK 64-Bit Server VM (21 mixed mode):\n\n"+tc.header+"\n\nJNI global refs: 1, weak refs: 0\n")
			require.Len(t, d.Threads, 1)
			tc.check(t, &d.Threads[0])
			assert.Zero(t, d.UnknownLines)
		})
	}
}

const lockLines = `2024-01-02 03:04:05
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing):

"waiter" #20 prio=5 os_prio=0 cpu=1.00ms elapsed=2.00s tid=0x01 nid=0x14 in Object.wait()  [0x0]
   java.lang.Thread.State: WAITING (on object monitor)
	at java.lang.Object.wait(java.base@17.0.15/Native Method)
	- waiting on <no object reference available>
	at java.lang.Object.wait(java.base@17.0.15/Object.java:338)
	at app.Queue.take(Queue.java:10)
	- locked <0x00000000aa000001> (a app.Queue)

"relocker" #21 prio=5 os_prio=0 tid=0x02 nid=0x15 waiting for monitor entry  [0x0]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at java.lang.Object.wait(java.base@17.0.15/Native Method)
	- waiting to re-lock in wait() <0x00000000aa000002> (a app.Box)
	at app.Box.get(Box.java:5)
	- locked <0x00000000aa000002> (a app.Box)

"holder" #22 prio=5 os_prio=0 tid=0x03 nid=0x16 runnable  [0x0]
   java.lang.Thread.State: RUNNABLE
	at app.Box.put(Box.java:9)
	- eliminated <owner is scalar replaced> (a java.lang.Object)
	- locked <0x00000000aa000002> (a app.Box)
	at app.Main.lambda$main$0(Main.java:3)
	at app.Main$$Lambda/0x0000000801001234.run(Unknown Source)

   Locked ownable synchronizers:
	- <0x00000000aa000003> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

"parker" #23 prio=5 os_prio=0 tid=0x04 nid=0x17 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000aa000003> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at java.util.concurrent.locks.ReentrantLock.lock(java.base@17.0.15/ReentrantLock.java:322)
	at app.Service.call(Service.java:44)

   Locked ownable synchronizers:
	- None

"idle" #24 prio=5 os_prio=0 tid=0x05 nid=0x18 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000aa000004> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)
	at java.util.concurrent.LinkedBlockingQueue.take(java.base@17.0.15/LinkedBlockingQueue.java:435)

"init-waiter" #25 prio=5 os_prio=0 tid=0x06 nid=0x19 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (on object monitor)
	at app.Use.run(Use.java:7)
	- waiting on the Class initialization monitor for app.Config

"initializer" #26 prio=5 os_prio=0 tid=0x07 nid=0x1a waiting on condition  [0x0]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
	at java.lang.Thread.sleep(java.base@17.0.15/Native Method)
	at app.Config.<clinit>(Config.java:3)
	at app.Use.run(Use.java:7)

"VM Thread" os_prio=0 cpu=10.00ms elapsed=2.00s tid=0x08 nid=0x1b runnable

JNI global refs: 9, weak refs: 2

Heap
 def new generation   total 4928K, used 1200K [0x00000000f0000000, 0x00000000f0550000, 0x00000000f5550000)
`

func TestLockLines(t *testing.T) {
	d := parseOne(t, lockLines)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	assert.Empty(t, d.Warnings)
	assert.Equal(t, 9, d.JNIGlobalRefs)
	assert.Equal(t, 2, d.JNIWeakRefs)
	require.Len(t, d.Threads, 8)
	by := map[string]*Thread{}
	for i := range d.Threads {
		by[d.Threads[i].Name] = &d.Threads[i]
	}

	// "waiting on <no object reference available>": the object is the
	// monitor the caller entered, and the waiter does not hold it.
	waiter := by["waiter"]
	assert.Equal(t, []LockEvent{
		{Action: LockWaitingOn, Lock: Lock{Address: "0x00000000aa000001", Class: "app.Queue"}, Frame: 0, Inferred: true},
		{Action: LockLocked, Lock: Lock{Address: "0x00000000aa000001", Class: "app.Queue"}, Frame: 2},
	}, waiter.Locks)

	holder := by["holder"]
	assert.Equal(t, LockEliminated, holder.Locks[0].Action)
	assert.Equal(t, "", holder.Locks[0].Lock.Address)
	assert.True(t, holder.HasSynchronizerSection)
	assert.Equal(t, []Lock{{Address: "0x00000000aa000003", Class: "java.util.concurrent.locks.ReentrantLock$NonfairSync"}}, holder.OwnableSynchronizers)
	assert.Equal(t, "app.Main$$Lambda/0x0000000801001234", holder.Frames[2].Class)
	assert.Equal(t, "run", holder.Frames[2].Method)
	assert.Len(t, holder.Holds(), 2)

	parker := by["parker"]
	assert.True(t, parker.HasSynchronizerSection)
	assert.Empty(t, parker.OwnableSynchronizers)
	assert.Equal(t, "java.base@17.0.15", parker.Frames[0].Module)
	assert.True(t, parker.Frames[0].Native)
	assert.Equal(t, Frame{Class: "app.Service", Method: "call", File: "Service.java", Line: 44}, parker.Frames[2])

	assert.True(t, by["VM Thread"].VMInternal())
	assert.False(t, by["idle"].VMInternal())

	locks := d.Locks()
	byAddr := map[string]*LockInfo{}
	for _, l := range locks {
		byAddr[l.Lock.Address] = l
	}
	// The BLOCKED re-locker queues on the Box monitor that "holder" owns.
	box := byAddr["0x00000000aa000002"]
	require.NotNil(t, box)
	require.NotNil(t, box.Owner)
	assert.Equal(t, "holder", box.Owner.Name)
	require.Len(t, box.Waiters, 1)
	assert.Equal(t, "relocker", box.Waiters[0].Thread.Name)
	// The ReentrantLock's owner comes from "Locked ownable synchronizers".
	rl := byAddr["0x00000000aa000003"]
	require.NotNil(t, rl)
	assert.Equal(t, KindSynchronizer, rl.Kind)
	assert.Equal(t, "holder", rl.Owner.Name)
	assert.Equal(t, "parker", rl.Waiters[0].Thread.Name)
	assert.Empty(t, waiter.Holds())
	// A worker waiting in a queue's take is idle, not contention; nobody
	// owns the queue's monitor.
	q := byAddr["0x00000000aa000001"]
	require.NotNil(t, q)
	assert.Nil(t, q.Owner)
	assert.Empty(t, q.Waiters)
	require.Len(t, q.Waiting, 1)
	assert.Equal(t, WaitObject, q.Waiting[0].Kind)
	assert.Equal(t, WaitRelock, box.Waiters[0].Kind)
	assert.Equal(t, WaitSynchronizer, rl.Waiters[0].Kind)
	// A condition wait inside a queue's take is idle, not contention.
	cond := byAddr["0x00000000aa000004"]
	require.NotNil(t, cond)
	assert.Empty(t, cond.Waiters)
	assert.Len(t, cond.Waiting, 1)
	// The class initialization monitor's owner runs <clinit>.
	ci := byAddr["class-init:app.Config"]
	require.NotNil(t, ci)
	assert.Equal(t, "initializer", ci.Owner.Name)
	assert.Equal(t, "init-waiter", ci.Waiters[0].Thread.Name)
	// Contention is sorted first.
	assert.NotEmpty(t, locks[0].Waiters)
}

func TestOwnableSynchronizerDeadlockReport(t *testing.T) {
	text := `Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing):

"cycle-1" #20 prio=5 os_prio=0 tid=0x01 nid=0x14 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000bb000002> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at LockDeadlock.run(LockDeadlock.java:10)

   Locked ownable synchronizers:
	- <0x00000000bb000001> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

"cycle-2" #21 prio=5 os_prio=0 tid=0x02 nid=0x15 waiting on condition  [0x0]
   java.lang.Thread.State: WAITING (parking)
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000bb000001> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at LockDeadlock.run(LockDeadlock.java:10)

   Locked ownable synchronizers:
	- <0x00000000bb000002> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

JNI global refs: 9, weak refs: 0


Found one Java-level deadlock:
=============================
"cycle-1":
  waiting for ownable synchronizer 0x00000000bb000002, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),
  which is held by "cycle-2"

"cycle-2":
  waiting for ownable synchronizer 0x00000000bb000001, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),
  which is held by "cycle-1"

Java stack information for the threads listed above:
===================================================
"cycle-1":
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000bb000002> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at LockDeadlock.run(LockDeadlock.java:10)
"cycle-2":
	at jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
	- parking to wait for  <0x00000000bb000001> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
	at LockDeadlock.run(LockDeadlock.java:10)

Found 1 deadlock.

`
	d := parseOne(t, text)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	require.Len(t, d.Threads, 2, "the report's repeated stacks are not threads")
	require.Len(t, d.Deadlocks, 1)
	e := d.Deadlocks[0].Edges[0]
	assert.True(t, e.Synchronizer)
	assert.Equal(t, Lock{Address: "0x00000000bb000002", Class: "java.util.concurrent.locks.ReentrantLock$NonfairSync"}, e.WaitsFor)
	assert.Equal(t, "cycle-2", e.HeldBy)
	cycles := d.FindDeadlocks()
	require.Len(t, cycles, 1)
	assert.Len(t, cycles[0].Threads, 2)
}

func TestForeignTextAfterThreadIsNotPartOfItsStack(t *testing.T) {
	text := `Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing):

"worker" #20 prio=5 os_prio=0 tid=0x01 nid=0x14 runnable  [0x0]
   java.lang.Thread.State: RUNNABLE
	at app.Work.loop(Work.java:1)
12:00:01.123 [main] INFO app.Main - tick
	at not.a.Frame(Of.java:2)

"other" #21 prio=5 os_prio=0 tid=0x02 nid=0x15 runnable  [0x0]
   java.lang.Thread.State: RUNNABLE
	at app.Work.loop(Work.java:1)

JNI global refs: 1, weak refs: 0
`
	d := parseOne(t, text)
	require.Len(t, d.Threads, 2)
	assert.Len(t, d.Threads[0].Frames, 1)
	assert.Equal(t, 2, d.UnknownLines)
	assert.Equal(t, "12:00:01.123 [main] INFO app.Main - tick", d.UnknownSamples[0].Text)
}

func TestTruncatedDump(t *testing.T) {
	text := lockLines[:strings.Index(lockLines, `"init-waiter"`)+40]
	dumps, err := ParseString(text)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	assert.Len(t, dumps[0].Threads, 6)
	require.NotEmpty(t, dumps[0].Warnings)
	assert.Contains(t, dumps[0].Warnings[0], "truncated")
}

func TestThreadsWithoutHeader(t *testing.T) {
	text := "\"pasted\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable\n   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:1)\n"
	d := parseOne(t, text)
	assert.Len(t, d.Threads, 1)
	assert.NotEmpty(t, d.Warnings)
}

func TestThreadInfoToString(t *testing.T) {
	text := "\"t1\" Id=12 BLOCKED on java.lang.Object@1b2c3d owned by \"t2\" Id=13\n\tat app.A.f(A.java:3)\n\t-  blocked on java.lang.Object@1b2c3d\n\n" +
		"\"t2\" Id=13 RUNNABLE\n\tat app.A.g(A.java:9)\n\t-  locked java.lang.Object@1b2c3d\n\n"
	d := parseOne(t, text)
	require.Len(t, d.Threads, 2)
	assert.Equal(t, StateBlocked, d.Threads[0].State)
	locks := d.Locks()
	require.Equal(t, "t2", locks[0].Owner.Name)
	assert.Equal(t, "t1", locks[0].Waiters[0].Thread.Name)
}

func TestUnsupportedAndEmpty(t *testing.T) {
	for name, text := range map[string]string{
		"jrockit": "===== FULL THREAD DUMP ===============\nMon Jan 1 2012\nOracle JRockit(R) R28.2.0\n\n\"Main Thread\" id=1 idx=0x4 tid=1 prio=5 alive, in native\n",
		"android": "----- pid 1234 at 2020-01-01 -----\nCmd line: com.example\n\nDALVIK THREADS (12):\n\"main\" prio=5 tid=1 Native\n",
		"go":      "goroutine 1 [running]:\nmain.main()\n\t/tmp/x.go:5 +0x1d\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseString(text)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrUnsupportedFormat), err)
		})
	}
	for name, text := range map[string]string{"empty": "", "log": "just a log line\nand another\n", "binary": "\x00\x01\x02\x03"} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseString(text)
			assert.True(t, errors.Is(err, ErrNoThreadDump), err)
		})
	}
}

func TestGarbageGzip(t *testing.T) {
	_, err := ParseString("\x1f\x8bnot really gzip")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gzip")
}

// FuzzParse checks that no input makes the parser panic or loop, and that
// the lock analysis holds up on whatever it produced.
func FuzzParse(f *testing.F) {
	f.Add(lockLines)
	f.Add("\"a\" #1 prio=5 tid=0x1 nid=0x2 runnable\n\tat a.b(c)\n\t- locked <0x1> (a X)\n")
	f.Add("Found one Java-level deadlock:\n\"x\":\n  waiting to lock monitor 0x1 (object 0x2, a y),\n  which is held by \"z\"\n")
	f.Add("12:\n2020-01-01 00:00:00\nFull thread dump x:\n\"\" #\n   Carrying virtual thread #\n   Mounted virtual thread #1\n\tat .(/:)\n")
	f.Add("\xff\xfe\"\x00a\x00\"\x00")
	for _, s := range forgedNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dumps, err := ParseString(s)
		if err != nil {
			return
		}
		for _, d := range dumps {
			for _, li := range d.Locks() {
				_ = li.Owner
			}
			d.FindDeadlocks()
			for i := range d.Threads {
				th := &d.Threads[i]
				for _, ev := range th.Locks {
					if ev.Frame >= len(th.Frames) {
						t.Fatalf("lock event frame %d out of range (%d frames)", ev.Frame, len(th.Frames))
					}
				}
			}
		}
	})
}
