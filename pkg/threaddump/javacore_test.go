package threaddump

import (
	"github.com/ctprof/ctprof/internal/testcorpus"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const corpusJavacore = "openj9-javacore-semeru21-macos-aarch64-2024-flamegrapher.txt"

// The real Liberty javacore from ../shared/dumps (README: 66 threads; 36
// CW, 3 P, 27 R).
func TestJavacoreCorpus(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, corpusJavacore))
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	d := dumps[0]
	assert.Equal(t, FormatJavacore, d.Format)
	assert.Len(t, d.Threads, 66)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	assert.Empty(t, d.Warnings)
	assert.Equal(t, 37560, d.PID)
	assert.Contains(t, d.VM, "21.0.4+7")
	assert.Contains(t, d.VM, "openj9")
	assert.Equal(t, time.Date(2024, 11, 18, 12, 20, 39, 414e6, time.UTC), d.Time)

	states := map[string]int{}
	status := map[string]int{}
	for _, th := range d.Threads {
		states[string(th.State)]++
		status[th.Status]++
	}
	assert.Equal(t, map[string]int{"CW": 36, "P": 3, "R": 27}, status, "OpenJ9's own states, kept in Status")
	assert.Equal(t, 27, states["RUNNABLE"])
	assert.Equal(t, 39, states["WAITING"]+states["TIMED_WAITING"])

	main := d.Threads[0]
	assert.Equal(t, "main", main.Name)
	assert.Equal(t, int64(2), main.ID)
	assert.Equal(t, int64(0x8D14A), main.OSThreadID)
	assert.False(t, main.Daemon)
	assert.Equal(t, 5, main.Priority)
	assert.True(t, main.HasCPU)
	assert.InDelta(t, 1.264468, main.CPU.Seconds(), 1e-9)
	require.Len(t, main.Frames, 15)
	assert.Equal(t, Frame{Class: "java.lang.Object", Method: "waitImpl", Native: true}, main.Frames[0])
	assert.Equal(t, Frame{Class: "java.lang.Object", Method: "wait", File: "Object.java", Line: 255}, main.Frames[1])
	ev, ok := main.WaitsOn()
	require.True(t, ok)
	assert.Equal(t, Lock{Class: "java.util.concurrent.atomic.AtomicReference", Address: "0x0000000300349b90"}, ev.Lock)

	// Monitors entered under a frame (5XESTACKTRACE) are held.
	held := 0
	for i := range d.Threads {
		held += len(d.Threads[i].Holds())
	}
	assert.Positive(t, held)
	// JIT-compiled frames keep their line.
	for _, th := range d.Threads {
		for _, f := range th.Frames {
			assert.NotContains(t, f.Method, "(", "frame %+v", f)
		}
	}
}

// The blocked-on, owned-by and deadlock lines below follow the javacore
// examples in the OpenJ9 documentation (eclipse-openj9/openj9-docs,
// dump_javadump.md: "Java dump: threads", "Deadlocks") and the tags written
// by runtime/rasdump/javadump.cpp.
const javacoreBlocked = `0SECTION       TITLE subcomponent dump routine
NULL           ===============================
1TIDATETIME    Date: 2025/03/02 at 09:15:00:001
0SECTION       ENVINFO subcomponent dump routine
1CIJAVAVERSION JRE 17 Linux amd64-64 (build 17.0.9+9)
1CIPROCESSID   Process ID: 4242 (0x1092)
0SECTION       LOCKS subcomponent dump routine
NULL           ===============================
1LKDEADLOCK    Deadlock detected !!!
NULL           ---------------------
NULL
2LKDEADLOCKTHR  Thread "left" (0x0000000001A2B300)
3LKDEADLOCKWTR    is waiting for:
4LKDEADLOCKMON      sys_mon_t:0x00007F1C0000A1B8 infl_mon_t: 0x00007F1C0000A238:
4LKDEADLOCKOBJ      app/Right@0x00000000FFE00010
3LKDEADLOCKOWN    which is owned by:
2LKDEADLOCKTHR  Thread "right" (0x0000000001A2C700)
3LKDEADLOCKWTR    which is waiting for:
4LKDEADLOCKMON      sys_mon_t:0x00007F1C0000A2D8 infl_mon_t: 0x00007F1C0000A358:
4LKDEADLOCKOBJ      app/Left@0x00000000FFE00020
3LKDEADLOCKOWN    which is owned by:
2LKDEADLOCKTHR  Thread "left" (0x0000000001A2B300)
0SECTION       THREADS subcomponent dump routine
NULL           =================================
1XMTHDINFO     Thread Details
NULL
3XMTHREADINFO      "holder" J9VMThread:0x0000000001A2A000, omrthread_t:0x00007F1C00001000, java/lang/Thread:0x00000000FFF00010, state:R, prio=5
3XMJAVALTHREAD            (java/lang/Thread getId:0x11, isDaemon:false)
3XMTHREADINFO1            (native thread ID:0x1100, native priority:0x5, native policy:UNKNOWN, vmstate:R, vm thread flags:0x00000020)
3XMTHREADINFO3           Java callstack:
4XESTACKTRACE                at app/Cache.refresh(Cache.java:40)
5XESTACKTRACE                   (entered lock: app/Cache@0x00000000FFE00000, entry count: 1)
4XESTACKTRACE                at app/Worker.run(Worker.java:10)
NULL
3XMTHREADINFO      "waiter-1" J9VMThread:0x0000000001A2A400, omrthread_t:0x00007F1C00001100, java/lang/Thread:0x00000000FFF00020, state:B, prio=5
3XMJAVALTHREAD            (java/lang/Thread getId:0x12, isDaemon:true)
3XMTHREADINFO1            (native thread ID:0x1101, native priority:0x5, native policy:UNKNOWN, vmstate:B, vm thread flags:0x00000201)
3XMTHREADBLOCK     Blocked on: app/Cache@0x00000000FFE00000 Owned by: "holder" (J9VMThread:0x0000000001A2A000, java/lang/Thread:0x00000000FFF00010)
3XMTHREADINFO3           Java callstack:
4XESTACKTRACE                at app/Cache.get(Cache.java:20)
4XESTACKTRACE                at app/Worker.run(Worker.java:12)
NULL
3XMTHREADINFO      "parker" J9VMThread:0x0000000001A2A800, omrthread_t:0x00007F1C00001200, java/lang/Thread:0x00000000FFF00030, state:P, prio=5
3XMJAVALTHREAD            (java/lang/Thread getId:0x13, isDaemon:false)
3XMTHREADINFO1            (native thread ID:0x1102, native priority:0x5, native policy:UNKNOWN, vmstate:P, vm thread flags:0x00000281)
3XMTHREADBLOCK     Parked on: java/util/concurrent/locks/ReentrantLock$NonfairSync@0x00000000FFE00030 Owned by: "holder" (J9VMThread:0x0000000001A2A000, java/lang/Thread:0x00000000FFF00010)
3XMTHREADINFO3           Java callstack:
4XESTACKTRACE                at jdk/internal/misc/Unsafe.park(Native Method)
4XESTACKTRACE                at java/util/concurrent/locks/LockSupport.park(LockSupport.java:211(Compiled Code))
4XESTACKTRACE                at app/Worker.lock(Worker.java:30)
NULL
3XMTHREADINFO      Anonymous native thread
3XMTHREADINFO1            (native thread ID:0x1103, native priority:0x0, native policy:UNKNOWN, vmstate:R, vm thread flags:0x00000000)
NULL
0SECTION       Javadump End section
`

func TestJavacoreBlockedOwnedAndDeadlock(t *testing.T) {
	require.True(t, looksLikeJavacore(javacoreBlocked))
	dumps, err := ParseString(javacoreBlocked)
	require.NoError(t, err)
	d := dumps[0]
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	assert.Empty(t, d.Warnings)
	require.Len(t, d.Threads, 4)
	assert.Equal(t, StateRunnable, d.Threads[0].State)
	assert.Equal(t, StateBlocked, d.Threads[1].State)
	assert.True(t, d.Threads[1].Daemon)
	assert.Equal(t, StateWaiting, d.Threads[2].State)
	assert.True(t, d.Threads[3].VMInternal(), "an anonymous native thread has no Java identity")

	locks := map[string]*LockInfo{}
	for _, li := range d.Locks() {
		locks[li.Lock.Class] = li
	}
	monitor := locks["app.Cache"]
	require.NotNil(t, monitor)
	assert.Equal(t, KindMonitor, monitor.Kind)
	require.NotNil(t, monitor.Owner)
	assert.Equal(t, "holder", monitor.Owner.Name)
	require.Len(t, monitor.Waiters, 1)
	assert.Equal(t, "waiter-1", monitor.Waiters[0].Thread.Name)
	assert.Equal(t, 0, monitor.Waiters[0].Frame)

	sync := locks["java.util.concurrent.locks.ReentrantLock$NonfairSync"]
	require.NotNil(t, sync)
	assert.Equal(t, KindSynchronizer, sync.Kind)
	require.NotNil(t, sync.Owner, "Owned by names the synchronizer's owner")
	assert.Equal(t, "holder", sync.Owner.Name)

	require.Len(t, d.Deadlocks, 1)
	dl := d.Deadlocks[0]
	assert.Equal(t, []string{"left", "right"}, dl.Threads)
	assert.Equal(t, DeadlockEdge{Thread: "left", WaitsFor: Lock{Class: "app.Right", Address: "0x00000000ffe00010"}, HeldBy: "right"}, dl.Edges[0])
	assert.Equal(t, "left", dl.Edges[1].HeldBy)
}

func TestJavacoreTruncated(t *testing.T) {
	cut := javacoreBlocked[:strings.Index(javacoreBlocked, `3XMTHREADINFO      "parker"`)]
	dumps, err := ParseString(cut)
	require.NoError(t, err)
	assert.Len(t, dumps[0].Threads, 2)
	require.Len(t, dumps[0].Warnings, 1)
	assert.Contains(t, dumps[0].Warnings[0], "cut off")
}

func TestJavacoreDetectionLeavesOthersAlone(t *testing.T) {
	for _, in := range []string{"Full thread dump OpenJDK:\n", "2024-01-01 0SECTION in a log line\n", jdk21Text} {
		assert.False(t, looksLikeJavacore(in), in)
	}
}

func FuzzParseJavacore(f *testing.F) {
	f.Add(javacoreBlocked)
	if b, err := os.ReadFile(corpusPath(corpusJavacore)); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkParsed(t, s)
	})
}

// BenchmarkParseJavacore parses the real javacore of ../shared/dumps.
//
//	go test -run '^$' -bench Javacore -benchmem -cpu 1 -count 3 ./pkg/threaddump/
func BenchmarkParseJavacore(b *testing.B) {
	in := readCorpus(b, corpusJavacore)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := ParseBytes(in); err != nil {
			b.Fatal(err)
		}
	}
}

// corpusPath is the path of a corpus file, for seeding fuzzers (which do
// without it when the corpus is absent).
func corpusPath(name string) string { return filepath.Join(testcorpus.Path(), name) }
