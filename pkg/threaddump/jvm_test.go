package threaddump_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Model-level checks on dumps taken from real JVMs that the tests start.

const dumpTimeout = 60 * time.Second

func parseOne(t testing.TB, b []byte) *threaddump.Dump {
	t.Helper()
	dumps, err := threaddump.ParseBytes(b)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	return dumps[0]
}

func TestJVMThreadsJoinOSThreads(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "SyncSingleton", "4")
			d := parseOne(t, p.ThreadPrint(t))
			assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
			assert.Empty(t, d.Warnings)
			assert.Equal(t, p.PID, d.PID, "jcmd's pid preamble")
			assert.Contains(t, d.VM, "OpenJDK")
			requests := 0
			for i := range d.Threads {
				th := &d.Threads[i]
				assert.NotZero(t, th.OSThreadID, th.Name)
				if strings.HasPrefix(th.Name, "request-") {
					requests++
					assert.NotZero(t, th.ID)
					assert.True(t, th.HasCPU)
					assert.NotEmpty(t, th.Frames)
				}
			}
			assert.Equal(t, 4, requests)
		})
	}
}

// hostileNames are the thread names testdata/java/HostileNames.java gives.
var hostileNames = []string{
	"</script><script>alert(1)</script>",
	"quote\"inside",
	"comma, colon: semi;",
	"[brackets] {braces} (parens) <angles>",
	"Ünïcødé-线程",
	"tab\there",
	"\"left\" 'owner', #1 [0x0]",
	"right: Ünï \"线程\"\t- locked <0x0>",
	"fake\" #999 daemon prio=5 os_prio=0 tid=0x0 nid=0x0 waiting on condition",
	"back\\slash & ampersand",
	"   leading and trailing spaces   ",
	"emoji-\U0001F680-rocket",
	"",
}

func TestJVMHostileNames(t *testing.T) {
	want := hostileNames
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "HostileNames")
			raw := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
				return strings.Contains(string(d), "Found one Java-level deadlock")
			})
			d := parseOne(t, raw)
			assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
			names := map[string]bool{}
			for i := range d.Threads {
				names[d.Threads[i].Name] = true
			}
			for _, n := range want {
				// jcmd decodes the JVM's modified UTF-8 itself and turns a
				// character outside the BMP into two U+FFFD; the SIGQUIT
				// log below keeps the bytes and gets the real character.
				lossy := strings.ReplaceAll(n, "\U0001F680", "\uFFFD\uFFFD")
				assert.True(t, names[n] || names[lossy], "thread %q not found", n)
			}
			// The deadlock report names the hostile threads exactly.
			require.Len(t, d.Deadlocks, 1)
			assert.ElementsMatch(t, []string{want[6], want[7]}, d.Deadlocks[0].Threads)
			cycles := d.FindDeadlocks()
			require.Len(t, cycles, 1)
			// The gate: the HTML-injection name holds it, five waiters queue.
			var gate *threaddump.LockInfo
			for _, l := range d.Locks() {
				if l.Lock.Class == "HostileNames$Gate" {
					gate = l
				}
			}
			require.NotNil(t, gate)
			require.NotNil(t, gate.Owner)
			assert.Equal(t, want[0], gate.Owner.Name)
			assert.Len(t, gate.Waiters, 5)

			// kill -3: the dump goes to the JVM's stdout in modified UTF-8.
			p.SigQuit(t)
			deadline := time.Now().Add(dumpTimeout)
			for !strings.Contains(string(p.Log()), "Found 1 deadlock") {
				require.True(t, time.Now().Before(deadline), "no dump in the log after SIGQUIT")
				time.Sleep(50 * time.Millisecond)
			}
			fromLog := parseOne(t, p.Log())
			logNames := map[string]bool{}
			for i := range fromLog.Threads {
				logNames[fromLog.Threads[i].Name] = true
			}
			for _, n := range want {
				assert.True(t, logNames[n], "thread %q not found in the kill -3 output", n)
			}
		})
	}
}

func TestJVMVirtualThreadCarriers(t *testing.T) {
	jdk := testjvm.JDK25(t)
	p := testjvm.Start(t, jdk, "VirtualThreads")
	raw := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return testjvm.CountLines(d, "Carrying virtual thread #") >= 2
	})
	d := parseOne(t, raw)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	carriers := 0
	for i := range d.Threads {
		th := &d.Threads[i]
		if th.CarryingVirtual == 0 {
			continue
		}
		carriers++
		assert.True(t, strings.HasPrefix(th.Name, "ForkJoinPool-"), th.Name)
		require.NotNil(t, th.Mounted, "the mounted virtual thread's stack is kept apart")
		assert.True(t, th.Mounted.Virtual)
		var pinned bool
		for _, f := range th.Mounted.Frames {
			if f.Class == "VirtualThreads" && f.Method == "pinned" {
				pinned = true
			}
		}
		assert.True(t, pinned, "the virtual thread runs VirtualThreads.pinned")
		assert.NotEmpty(t, th.Mounted.Holds(), "it holds its PinMonitor")
	}
	assert.GreaterOrEqual(t, carriers, 2)
}

func TestJVMKillQuitIntoLog(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "LogNoise")
			p.SigQuit(t)
			deadline := time.Now().Add(dumpTimeout)
			for !strings.Contains(string(p.Log()), "JNI global refs") {
				require.True(t, time.Now().Before(deadline), "no dump in the log after SIGQUIT")
				time.Sleep(50 * time.Millisecond)
			}
			// Let the program log more lines after the dump.
			n := len(p.Log())
			for len(p.Log()) < n+200 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			dumps, err := threaddump.ParseBytes(p.Log())
			require.NoError(t, err)
			require.Len(t, dumps, 1)
			d := dumps[0]
			assert.Greater(t, len(d.Threads), 5)
			for i := range d.Threads {
				th := &d.Threads[i]
				assert.NotZero(t, th.OSThreadID, "log text must not become a thread: %q", th.Name)
			}
		})
	}
}

func TestJVMClassInitializationMonitor(t *testing.T) {
	// JDK 25 prints "waiting on the Class initialization monitor for C";
	// JDK 17 shows the waiters without a lock line, so only 25 is checked.
	jdk := testjvm.JDK25(t)
	p := testjvm.Start(t, jdk, "ClassInitWait")
	raw := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return testjvm.CountLines(d, "Class initialization monitor") >= 2
	})
	d := parseOne(t, raw)
	var ci *threaddump.LockInfo
	for _, l := range d.Locks() {
		if strings.HasPrefix(l.Lock.Address, "class-init:") {
			ci = l
		}
	}
	require.NotNil(t, ci)
	require.NotNil(t, ci.Owner)
	assert.Equal(t, "init-runner", ci.Owner.Name)
	assert.GreaterOrEqual(t, len(ci.Waiters), 2)
	for _, w := range ci.Waiters {
		assert.True(t, strings.HasPrefix(w.Thread.Name, "init-waiter-"), w.Thread.Name)
	}
}

// manyThreadsDump is a Thread.print of a real JVM with 4,000 threads, taken
// once per test binary.
var manyThreadsDump = struct {
	once sync.Once
	b    []byte
}{}

func bigDump(t testing.TB) []byte {
	manyThreadsDump.once.Do(func() {
		p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "4000")
		manyThreadsDump.b = p.WaitForDump(t, 2*dumpTimeout, func(d []byte) bool {
			return testjvm.CountLines(d, "\"conn-") >= 4000
		})
		p.Stop()
	})
	require.NotEmpty(t, manyThreadsDump.b, "the 4,000-thread dump could not be taken")
	return manyThreadsDump.b
}

func TestJVMManyThreads(t *testing.T) {
	b := bigDump(t)
	d := parseOne(t, b)
	assert.GreaterOrEqual(t, len(d.Threads), 4000)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
}

// TestParseMemoryBudget checks the budget "memory at most 3x the input" on
// the 4,000-thread dump. Allocated bytes do not depend on machine load, so
// this is a test rather than a benchmark.
func TestParseMemoryBudget(t *testing.T) {
	b := bigDump(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dumps, err := threaddump.ParseBytes(b)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.NotEmpty(t, dumps)
	allocated := after.TotalAlloc - before.TotalAlloc
	ratio := float64(allocated) / float64(len(b))
	t.Logf("input %d bytes, allocated %d bytes (%.2fx)", len(b), allocated, ratio)
	assert.LessOrEqual(t, ratio, 3.0)
}

// BenchmarkParse4000Threads measures the parser on a real 4,000-thread
// dump: `make bench` (docs/PERFORMANCE.md). The budget is 200 MB/s on one
// core; run with -cpu 1.
func BenchmarkParse4000Threads(b *testing.B) {
	in := bigDump(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := threaddump.ParseBytes(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAndLocks adds the lock table and cycle detection, which
// `ctprof analyze` runs on every dump.
func BenchmarkParseAndLocks(b *testing.B) {
	in := bigDump(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dumps, err := threaddump.ParseBytes(in)
		if err != nil {
			b.Fatal(err)
		}
		dumps[0].Locks()
		dumps[0].FindDeadlocks()
	}
}
