package sample

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// TestJVMFutexesSeenDuringDumpsAreNotLocks sweeps /proc of a real JVM while
// the Sampler's own dumps hold it at a safepoint: the workers then wait in
// futex(2) on HotSpot's safepoint barrier (and the attach listener on
// VMOperation_lock), which the plain grouping reports as a lock-like wait.
// The Sampler's JVM rules must leave none of them as a lock.
func TestJVMFutexesSeenDuringDumpsAreNotLocks(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "ScaleWorkload", "contended", "4")
			s, err := NewSampler(Options{PID: p.PID, Interval: 20 * time.Millisecond, JVM: JVMOptions{PauseBudget: 0.9}})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			require.Equal(t, snapshot.KindJVM, s.Target().Kind)

			fs := procfs.NewFS("")
			tr, err := fs.NewThreadReader(p.PID)
			require.NoError(t, err)
			t.Cleanup(func() { tr.Close() })
			sym := symbolize.NewSymbolizer(fs.Target(p.PID))

			// A second reader sweeps while Take dumps; its sweeps are the
			// worst case: threads caught inside ctprof's own safepoint.
			var mu sync.Mutex
			var seen []procfs.FutexWait
			var seenThreads [][]procfs.Thread
			sweeping := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				close(sweeping)
				for ctx.Err() == nil {
					th, err := tr.Read(nil)
					if err != nil {
						return
					}
					for _, fw := range procfs.GroupFutexWaits(th, sym) {
						if fw.Kind != procfs.FutexCondition {
							mu.Lock()
							seen = append(seen, fw)
							seenThreads = append(seenThreads, th)
							mu.Unlock()
						}
					}
				}
			}()
			<-sweeping
			// Bounded: stop once the concurrent sweeps caught workers at the
			// barrier a few times (it takes a handful of dumps on 2 CPUs).
			deadline := time.Now().Add(30 * time.Second)
			barrier := 0
			for barrier < 3 && time.Now().Before(deadline) {
				_, err := s.Take(context.Background())
				require.NoError(t, err)
				mu.Lock()
				barrier = 0
				for _, fw := range seen {
					// The barrier's word is on the C heap; an odd value in
					// libjvm.so's data is one of JDK 25's own locks.
					if fw.Kind == procfs.FutexUnknown && fw.Value%2 == 1 && fw.Location.Module != "libjvm.so" {
						barrier++
					}
				}
				mu.Unlock()
			}
			cancel()
			wg.Wait()
			require.GreaterOrEqual(t, barrier, 3, "the concurrent sweeps never caught a thread at the safepoint barrier: %v", seen)

			// Each caught wait alone, in the sweep that saw it, through the
			// Sampler's JVM rules.
			var kept []string
			for i, fw := range seen {
				out := s.jvmProgramFutexes([]snapshot.FutexWait{fw}, seenThreads[i], func() bool { return false })
				for _, k := range out {
					kept = append(kept, fmt.Sprintf("%s %s v=%d %s %v", k.Kind, k.Op, k.Value, k.Location, k.TIDs))
				}
			}
			assert.Empty(t, kept, "futex waits caught during ctprof's dumps kept as locks")
			assert.Positive(t, s.droppedFutexes[jvmSafepointBarrier], "dropped: %v", s.droppedFutexes)
		})
	}
}

// fakeMemory is a target's memory for jvmFutexFilter: bytes at addresses.
type fakeMemory map[uint64][]byte

func (m fakeMemory) ReadStack(addr uint64, b []byte) bool {
	for at, data := range m {
		if addr >= at && addr+uint64(len(b)) <= at+uint64(len(data)) {
			copy(b, data[addr-at:])
			return true
		}
	}
	return false
}

// put writes 64-bit words from addr on.
func (m fakeMemory) put(addr uint64, words ...uint64) {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	m[addr] = b
}

// hotspotMutex lays out a HotSpot Mutex whose pthread mutex is at addr
// (see hotspotMutexAt): _owner, the locked mutex (held by tid), the
// condition and _name.
func (m fakeMemory) hotspotMutex(addr, owner, name uint64, tid uint32) {
	words := make([]uint64, 13)
	words[0] = owner
	words[1] = 2                   // __lock 2, __count 0
	words[2] = uint64(tid) | 1<<32 // __owner, __nusers
	words[12] = name               // _name at +88
	m.put(addr-8, words...)
}

func TestJVMFutexFilterRules(t *testing.T) {
	threads := []snapshot.OSThread{{TID: 1, Name: "worker-1"}, {TID: 2, Name: "worker-2"}, {TID: 3, Name: "C2 CompilerThre"}, {TID: 4, Name: "VM Thread"}, {TID: 5, Name: "VM Thread"}}
	const (
		libjvmVtable = 0x7f00_1000_0040 // in libjvm.so
		javaThread   = 0x7f00_2000_1000 // a JavaThread on the C heap: its vtable pointer
		jniStruct    = 0x7f00_2000_2000 // a JNI library's object: its own vtable
		lockName     = 0x7f00_2000_3000 // "Heap_lock"
		garbage      = 0x7f00_2000_4000 // not a name
		hsLock       = 0x7f00_3000_0010 // Heap_lock's pthread mutex, held
		hsFree       = 0x7f00_3000_0110 // a HotSpot Mutex just let go (_owner nullptr)
		jniHeap      = 0x7f00_3000_0210 // a malloc'ed pthread_mutex_t, held
		jniField     = 0x7f00_3000_0310 // a mutex after a pointer field of a JNI struct
		released     = 0x7f00_3000_0410 // a malloc'ed mutex, unlocked
		unreadable   = 0x7f00_4000_0000
	)
	mem := fakeMemory{}
	mem.put(javaThread, libjvmVtable)
	mem.put(jniStruct, 0x7f00_5000_0000)
	mem[lockName] = append([]byte("Heap_lock\x00"), make([]byte, 54)...)
	mem[garbage] = append([]byte{0x90, 0x1, 0x2}, make([]byte, 61)...)
	mem.hotspotMutex(hsLock, javaThread, lockName, 1)
	mem.hotspotMutex(hsFree, 0, lockName, 0)
	mem.hotspotMutex(jniHeap, 0x31, garbage, 2)        // the chunk's size, then the mutex
	mem.hotspotMutex(jniField, jniStruct, lockName, 2) // a name-like pointer after, but no HotSpot Thread before
	mem.hotspotMutex(released, 0x31, 0, 0)
	binary.LittleEndian.PutUint64(mem[released-8][8:], 0) // unlocked
	module := func(addr uint64) string {
		if addr>>12 == libjvmVtable>>12 {
			return "libjvm.so"
		}
		return "anonymous memory"
	}
	filter := jvmFutexFilter{dumped: dumpedThreads{5: dumpedJavaOther, 4: dumpedInternal}, threads: threads, mem: mem, module: module}
	heap := symbolize.Location{Module: "anonymous rw-p 7f00-7f80", Offset: 0xcd4}
	at := func(addr uint64) symbolize.Location { l := heap; l.Address = addr; return l }
	lockWait := func(addr uint64) snapshot.FutexWait {
		return snapshot.FutexWait{Address: addr, Op: "FUTEX_WAIT_PRIVATE", Value: 2, Kind: snapshot.FutexLock, Location: at(addr), TIDs: []int{1, 2}}
	}
	jni := symbolize.Location{Module: "libnative.so", ModulePath: "/opt/app/libnative.so", Symbol: "big_lock", SymbolSize: 40}
	tests := []struct {
		name   string
		fw     snapshot.FutexWait
		window bool
		want   string
	}{
		{"safepoint barrier: odd id, untimed", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 1419, Kind: snapshot.FutexUnknown, Location: heap, TIDs: []int{1, 2}}, false, jvmSafepointBarrier},
		{"even value is some other protocol", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 0, Kind: snapshot.FutexUnknown, Location: heap, TIDs: []int{1, 2}}, false, ""},
		{"timed plain wait is not the barrier", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 7, Timed: true, Kind: snapshot.FutexUnknown, Location: heap, TIDs: []int{1}}, false, ""},
		{"HotSpot lock in libjvm", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 2, Kind: snapshot.FutexLock, Location: symbolize.Location{Module: "libjvm.so", ModulePath: "/jdk/lib/server/libjvm.so"}, TIDs: []int{1, 2}}, false, jvmLockStorage},
		{"only JIT threads wait", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 2, Kind: snapshot.FutexLock, Location: heap, TIDs: []int{3, 4}}, false, jvmInternalWaiters},
		{"a program thread named like the VM thread", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 2, Kind: snapshot.FutexLock, Location: heap, TIDs: []int{5}}, false, ""},
		{"Java threads on a heap mutex, memory unread", lockWait(unreadable), false, ""},
		{"... while a safepoint ran", lockWait(unreadable), true, jvmSafepointWindow},
		{"a JNI library's mutex, even then", snapshot.FutexWait{Op: "FUTEX_WAIT_PRIVATE", Value: 2, Kind: snapshot.FutexLock, Location: jni, TIDs: []int{1, 2}}, true, ""},
		{"condition waits are left alone", snapshot.FutexWait{Op: "FUTEX_WAIT_BITSET_PRIVATE", Kind: snapshot.FutexCondition, Location: symbolize.Location{Module: "libjvm.so"}, TIDs: []int{3}}, true, ""},
		{"JDK 17's Heap_lock on the C heap, held by a Java thread", lockWait(hsLock), false, jvmHotSpotMutex},
		{"... while a safepoint ran", lockWait(hsLock), true, jvmHotSpotMutex},
		{"a HotSpot Mutex between owners", lockWait(hsFree), false, jvmHotSpotMutex},
		{"a JNI library's malloc'ed mutex", lockWait(jniHeap), false, ""},
		{"... while a safepoint ran", lockWait(jniHeap), true, ""},
		{"a mutex in a JNI struct after a pointer that is no HotSpot Thread", lockWait(jniField), true, ""},
		{"an unlocked mutex says nothing: the window decides", lockWait(released), true, jvmSafepointWindow},
		{"... outside one, kept", lockWait(released), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filter
			asked := 0
			f.window = func() bool { asked++; return tt.window }
			assert.Equal(t, tt.want, f.drop(&tt.fw))
			assert.LessOrEqual(t, asked, 1, "the window is asked at most once")
		})
	}
	// No memory to read (a nil reader): the timing alone decides.
	f := jvmFutexFilter{threads: threads, window: func() bool { return true }}
	fw := lockWait(hsLock)
	assert.Equal(t, jvmSafepointWindow, f.drop(&fw))
}

// The dump's table serves both the futex rules and the waits the sweep
// still reads after a dump: Java threads waiting in Java are skipped,
// Java threads running were not stopped, everything else (JVM-internal
// threads, threads the dump does not list) is read again. A tid listed
// twice (a forged entry) is a Java thread when any entry has Java frames.
func TestDumpedThreadsTable(t *testing.T) {
	frames := []threaddump.Frame{{Class: "java.lang.Object", Method: "wait"}}
	d := &threaddump.Dump{Threads: []threaddump.Thread{
		{Name: "waiter", ID: 10, OSThreadID: 101, State: threaddump.StateWaiting, Frames: frames},
		{Name: "blocked", ID: 11, OSThreadID: 102, State: threaddump.StateBlocked, Frames: frames},
		{Name: "runner", ID: 12, OSThreadID: 103, State: threaddump.StateRunnable, Frames: frames},
		{Name: "VM Thread", OSThreadID: 104},
		{Name: "no frames", ID: 13, OSThreadID: 105, State: threaddump.StateRunnable},
		{Name: "forged internal", OSThreadID: 101},
		{Name: "forged internal first", OSThreadID: 106},
		{Name: "java second", ID: 14, OSThreadID: 106, State: threaddump.StateTimedWaiting, Frames: frames},
		{Name: "no nid", ID: 15, State: threaddump.StateWaiting, Frames: frames},
	}}
	s := &Sampler{}
	s.noteDumpThreads(d)
	assert.Equal(t, dumpedThreads{101: dumpedJavaWaiting, 102: dumpedJavaWaiting, 103: dumpedJavaOther, 104: dumpedInternal,
		105: dumpedInternal, 106: dumpedJavaWaiting}, s.dumped)

	f := jvmFutexFilter{dumped: s.dumped}
	for tid, internal := range map[int]bool{101: false, 103: false, 104: true, 105: true, 106: false} {
		assert.Equal(t, internal, f.internal(tid), "tid %d", tid)
	}

	need := s.waitsNeeded(&snapshot.Snapshot{Dump: d, DumpCost: &snapshot.DumpCost{Method: jvm.MethodAttach}})
	for _, tc := range []struct {
		tid   int
		state byte
		want  procfs.WaitRead
	}{
		{101, 'S', procfs.WaitsSkip},    // waits in Java
		{106, 'S', procfs.WaitsSkip},    // waits in Java, listed twice
		{103, 'S', procfs.WaitsRecheck}, // RUNNABLE in Java, asleep: may have been stopped
		{103, 'R', procfs.WaitsSkip},    // runs Java code
		{104, 'S', procfs.WaitsRecheck}, // the JVM's own
		{104, 'R', procfs.WaitsRecheck}, // ran for the dump
		{999, 'S', procfs.WaitsRecheck}, // not in the dump
	} {
		assert.Equal(t, tc.want, need(&snapshot.OSThread{TID: tc.tid, State: tc.state}), "tid %d state %c", tc.tid, tc.state)
	}
}

// TestHotSpotMutexOnTheCHeapIsKnownByItsMemory sweeps /proc of a JVM that
// only allocates (AllocationChurn): on JDK 17 its Java threads queue on
// Heap_lock, a HotSpot Mutex on the C heap, while it collects, and the
// waits look like any malloc'ed pthread mutex's. Read through
// /proc/<pid>/mem, every one must be told a HotSpot Mutex, outside a
// safepoint window too; JDK 25 keeps its Heap_lock in libjvm.so.
func TestHotSpotMutexOnTheCHeapIsKnownByItsMemory(t *testing.T) {
	j := testjvm.JDK17(t)
	p := testjvm.Start(t, j, "AllocationChurn", "4")
	fs := procfs.NewFS("")
	tr, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	mem := fs.NewMemReader(p.PID)
	t.Cleanup(func() { mem.Close() })
	module := func(addr uint64) string {
		l, _ := sym.Resolve(addr)
		return l.Module
	}
	var caught, hotspot []string
	deadline := time.Now().Add(30 * time.Second)
	for len(caught) < 20 && time.Now().Before(deadline) {
		th, err := tr.Read(nil)
		require.NoError(t, err)
		// No dump: every thread counts as a program thread unless its OS
		// name is HotSpot's.
		f := jvmFutexFilter{threads: th, mem: mem, module: module, window: func() bool { return false }}
		for _, fw := range procfs.GroupFutexWaits(th, sym) {
			if fw.Kind != procfs.FutexLock || fw.Value != 2 || fw.Location.ModulePath != "" {
				continue
			}
			why := f.drop(&fw)
			if why == jvmInternalWaiters {
				continue
			}
			desc := fmt.Sprintf("%s %v: %q", fw.Location, fw.TIDs, why)
			caught = append(caught, desc)
			if why == jvmHotSpotMutex {
				hotspot = append(hotspot, desc)
			}
		}
	}
	require.NotEmpty(t, caught, "the sweeps never caught a Java thread on a C-heap lock of JDK 17; the test proves nothing")
	assert.Equal(t, caught, hotspot, "C-heap locks of the JVM not told HotSpot's")
}
