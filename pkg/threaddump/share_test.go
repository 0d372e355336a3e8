package threaddump

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// explosionDump writes a HotSpot dump of n idle threads shaped like
// testdata/java/ManyThreads.java with `n depth`: thread k parks, sleeps or
// waits by k%3, under depth frames of ManyThreads.descend, so there are
// three distinct stacks. Every unique-th thread (0: none) gets a stack of
// its own (a different line in its top application frame).
func explosionDump(n, depth, unique int) string {
	var b strings.Builder
	b.Grow(n * (200 + 60*depth))
	b.WriteString("2026-11-23 19:05:13\nFull thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing):\n\n")
	for k := 1; k <= n; k++ {
		line := 47
		if unique > 0 && k%unique == 0 {
			line = 1000 + k
		}
		switch k % 3 {
		case 1:
			fmt.Fprintf(&b, "\"conn-%d-reader\" #%d prio=5 os_prio=0 cpu=0.%02dms elapsed=120.50s tid=0x00007f%010x nid=0x%x waiting on condition  [0x00007f%010x]\n", k, k+15, k%100, k*4096, k+6000, k*8192)
			b.WriteString("   java.lang.Thread.State: WAITING (parking)\n")
			b.WriteString("\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)\n")
			fmt.Fprintf(&b, "\t- parking to wait for  <0x%016x> (a ManyThreads$Inbox)\n", 0x45a000000+k*16)
			b.WriteString("\tat java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:211)\n")
			fmt.Fprintf(&b, "\tat ManyThreads.awaitData(ManyThreads.java:%d)\n", line)
			b.WriteString("\tat ManyThreads.readLoop(ManyThreads.java:41)\n")
		case 2:
			fmt.Fprintf(&b, "\"conn-%d-writer\" #%d prio=5 os_prio=0 cpu=0.%02dms elapsed=120.50s tid=0x00007f%010x nid=0x%x waiting on condition  [0x00007f%010x]\n", k, k+15, k%100, k*4096, k+6000, k*8192)
			b.WriteString("   java.lang.Thread.State: TIMED_WAITING (sleeping)\n")
			b.WriteString("\tat java.lang.Thread.sleep(java.base@17.0.15/Native Method)\n")
			fmt.Fprintf(&b, "\tat ManyThreads.flushLater(ManyThreads.java:%d)\n", line+12)
			b.WriteString("\tat ManyThreads.writeLoop(ManyThreads.java:54)\n")
		default:
			fmt.Fprintf(&b, "\"conn-%d-heartbeat\" #%d prio=5 os_prio=0 cpu=0.%02dms elapsed=120.50s tid=0x00007f%010x nid=0x%x in Object.wait()  [0x00007f%010x]\n", k, k+15, k%100, k*4096, k+6000, k*8192)
			b.WriteString("   java.lang.Thread.State: WAITING (on object monitor)\n")
			b.WriteString("\tat java.lang.Object.wait(java.base@17.0.15/Native Method)\n")
			fmt.Fprintf(&b, "\t- waiting on <0x%016x> (a ManyThreads$Heartbeat)\n", 0x46a000000+k*16)
			b.WriteString("\tat java.lang.Object.wait(java.base@17.0.15/Object.java:338)\n")
			fmt.Fprintf(&b, "\tat ManyThreads.heartbeatLoop(ManyThreads.java:%d)\n", line+24)
			fmt.Fprintf(&b, "\t- locked <0x%016x> (a ManyThreads$Heartbeat)\n", 0x46a000000+k*16)
		}
		b.WriteString("\tat ManyThreads$$Lambda$14/0x0000000800c031f0.run(Unknown Source)\n")
		for i := 0; i < depth; i++ {
			b.WriteString("\tat ManyThreads.descend(ManyThreads.java:91)\n")
		}
		b.WriteString("\tat ManyThreads.lambda$main$0(ManyThreads.java:113)\n")
		b.WriteString("\tat ManyThreads$$Lambda$17/0x0000000800c03630.run(Unknown Source)\n")
		b.WriteString("\tat java.lang.Thread.run(java.base@17.0.15/Thread.java:840)\n\n")
	}
	b.WriteString("JNI global refs: 15, weak refs: 0\n\n")
	return b.String()
}

func TestIdenticalStacksShareFrames(t *testing.T) {
	text := "Full thread dump test:\n\n" +
		"\"a\" #1 prio=5 tid=0x1 nid=0x1 waiting on condition  [0x0]\n" +
		"   java.lang.Thread.State: WAITING (parking)\n" +
		"\tat jdk.internal.misc.Unsafe.park(java.base@17/Native Method)\n" +
		"\t- parking to wait for  <0x0000000000000a01> (a X)\n" +
		"\tat app.Worker.run(Worker.java:10)\n\n" +
		"\"b\" #2 prio=5 tid=0x2 nid=0x2 waiting on condition  [0x0]\n" +
		"   java.lang.Thread.State: WAITING (parking)\n" +
		"\tat jdk.internal.misc.Unsafe.park(java.base@17/Native Method)\n" +
		"\t- parking to wait for  <0x0000000000000b01> (a X)\n" +
		"\tat app.Worker.run(Worker.java:10)\n\n" +
		"\"c\" #3 prio=5 tid=0x3 nid=0x3 waiting on condition  [0x0]\n" +
		"   java.lang.Thread.State: WAITING (parking)\n" +
		"\tat jdk.internal.misc.Unsafe.park(java.base@17/Native Method)\n" +
		"\tat app.Worker.run(Worker.java:11)\n\n" +
		"\"d\" #4 prio=5 tid=0x4 nid=0x4 runnable  [0x0]\n" +
		"   java.lang.Thread.State: RUNNABLE\n" +
		"\tat app.Worker.run(Worker.java:12)\n\n" +
		"\"e\" #5 prio=5 tid=0x5 nid=0x5 waiting on condition  [0x0]\n" +
		// CRLF: the same frames, printed with other line endings.
		"\tat jdk.internal.misc.Unsafe.park(java.base@17/Native Method)\r\n" +
		"\tat app.Worker.run(Worker.java:10)\r\n\n" +
		"JNI global refs: 1, weak refs: 0\n"
	d := parseOne(t, text)
	require.Len(t, d.Threads, 5)
	a, b, c, dd, e := &d.Threads[0], &d.Threads[1], &d.Threads[2], &d.Threads[3], &d.Threads[4]
	for _, th := range d.Threads {
		require.NotEmpty(t, th.Frames, th.Name)
		assert.Equal(t, len(th.Frames), cap(th.Frames), "%s: cap must equal len so an append copies", th.Name)
	}
	assert.Equal(t, a.Frames, b.Frames)
	assert.Same(t, &a.Frames[0], &b.Frames[0], "identical stacks share one slice")
	assert.Same(t, &a.Frames[0], &e.Frames[0], "the same lines with CRLF endings are the same stack")
	assert.NotSame(t, &a.Frames[0], &c.Frames[0], "a stack with a different line is its own")
	assert.Equal(t, 11, c.Frames[1].Line, "the run after a shared one reuses the slab space it gave back")
	assert.Equal(t, 12, dd.Frames[0].Line)
	assert.Equal(t, 10, a.Frames[1].Line, "the shared run is not overwritten by later ones")
	// Each thread keeps its own lock lines, tied to the shared frames.
	require.Len(t, b.Locks, 1)
	assert.Equal(t, "0x0000000000000b01", b.Locks[0].Lock.Address)
	assert.Equal(t, 0, b.Locks[0].Frame)

	grown := append(a.Frames, Frame{Method: "x"})
	grown[0].Method = "changed"
	assert.Equal(t, "park", b.Frames[0].Method, "an append to one thread's frames leaves the other's alone")
}

// TestSharedFramesAcrossSlabGrowth parses a dump whose distinct stacks
// outgrow the frame slab several times, with repeated stacks between
// them, and checks every thread's frames against the generator.
func TestSharedFramesAcrossSlabGrowth(t *testing.T) {
	const n, depth = 3000, 21
	text := explosionDump(n, depth, 7) // every 7th thread has a stack of its own
	d := parseOne(t, text)
	require.Len(t, d.Threads, n)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
	distinct := map[*Frame]bool{}
	for i := range d.Threads {
		th := &d.Threads[i]
		k := i + 1
		line := 47
		if k%7 == 0 {
			line = 1000 + k
		}
		var top string
		var appLine, wantLen int
		switch k % 3 {
		case 1:
			top, appLine, wantLen = "jdk.internal.misc.Unsafe.park", line, 4+depth+4
		case 2:
			top, appLine, wantLen = "java.lang.Thread.sleep", line+12, 3+depth+4
		default:
			top, appLine, wantLen = "java.lang.Object.wait", line+24, 3+depth+4
		}
		require.Len(t, th.Frames, wantLen, th.Name)
		assert.Equal(t, len(th.Frames), cap(th.Frames), th.Name)
		assert.Equal(t, top, th.Frames[0].Function(), th.Name)
		app := 2
		if k%3 == 2 {
			app = 1
		}
		require.Equal(t, appLine, th.Frames[app].Line, th.Name)
		assert.Equal(t, "java.lang.Thread.run", th.Frames[len(th.Frames)-1].Function(), th.Name)
		for _, ev := range th.Locks {
			assert.Less(t, ev.Frame, len(th.Frames), th.Name)
		}
		distinct[&th.Frames[0]] = true
	}
	uniques := n / 7
	assert.Len(t, distinct, 3+uniques, "three shared stacks and one per unique thread")
}

// TestThreadExplosionParseMemory is the figure for a thread explosion: a
// 10,000-thread dump of three stacks of about 30 frames (the shape of
// ManyThreads 10000 21), some 15 MB, parsed without a copy. Before frames
// were shared the frame slab alone was 80 bytes a printed frame (24 MB
// here); the threads and lock lines are what remains.
func TestThreadExplosionParseMemory(t *testing.T) {
	text := explosionDump(10000, 21, 0)
	b := []byte(text)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dumps, err := ParseOwnedBytes(b)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	require.Len(t, dumps[0].Threads, 10000)
	allocated := after.TotalAlloc - before.TotalAlloc
	objects := after.Mallocs - before.Mallocs
	t.Logf("input %d bytes, allocated %d bytes (%.2fx) in %d objects", len(b), allocated, float64(allocated)/float64(len(b)), objects)
	// Threads (about 330 bytes each) and lock events: some 5 MB.
	assert.Less(t, allocated, uint64(len(b))/2)
	assert.Less(t, objects, uint64(200))
	runtime.KeepAlive(b)
}

// BenchmarkParseThreadExplosion parses the 10,000-thread dump of
// TestThreadExplosionParseMemory (three stacks), and the same with a stack
// of its own for every thread, where nothing is shared and the frame slab
// grows (run with -benchmem).
func BenchmarkParseThreadExplosion(b *testing.B) {
	for _, bc := range []struct {
		name   string
		unique int
	}{{"shared", 0}, {"distinct", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			in := []byte(explosionDump(10000, 21, bc.unique))
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ParseOwnedBytes(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Frame lines are parsed once and then taken from the memo: every frame
// must still be the parse of its own line, also where distinct lines
// outnumber the memo's slots and evict each other.
func TestFrameMemoGivesEachLineItsOwnFrame(t *testing.T) {
	for _, unique := range []int{0, 1, 7} {
		t.Run(fmt.Sprintf("unique=%d", unique), func(t *testing.T) {
			text := explosionDump(3*frameMemoSlots, 4, unique)
			var want [][]Frame
			for _, line := range strings.Split(text, "\n") {
				switch {
				case strings.HasPrefix(line, `"`):
					want = append(want, nil)
				case strings.HasPrefix(line, "\tat "):
					want[len(want)-1] = append(want[len(want)-1], parseFrame(line[len("\tat "):]))
				}
			}
			dumps, err := ParseString(text)
			require.NoError(t, err)
			require.Len(t, dumps, 1)
			require.Len(t, dumps[0].Threads, len(want))
			for i, th := range dumps[0].Threads {
				require.Equal(t, want[i], th.Frames, "thread %d (%s)", i, th.Name)
			}
		})
	}
}
