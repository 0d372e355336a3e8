package sample

import (
	"encoding/binary"
	"strings"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// A JVM's futex waits are mostly not the program's contention, and some
// are caused by ctprof itself: a thread dump stops the JVM at a safepoint,
// and the threads that reach it wait on the JVM's safepoint barrier with
// futex(2), the same call a queue on a native mutex makes. For a JVM the
// thread dumps are the authority on Java locks: a Java monitor or j.u.c.
// lock also ends in a futex (ObjectMonitor and LockSupport.park wait on the
// thread's own ParkEvent/Parker condition variable), but at one address
// per thread, each a condition wait with one waiter, while the dump names
// the lock, its owner and its waiters. So for a JVM target the lock table
// keeps only the futex waits that can be native code's own locks (JNI
// libraries and their threads); jvmProgramFutexes drops the others.

// futex waits of a JVM dropped as not the program's contention, by reason.
const (
	// jvmLockStorage: HotSpot's own Mutex/Monitor objects, which JDK 25
	// keeps in libjvm.so's data (mutex_init's *_lock_storage; JDK 17
	// allocates them on the C heap).
	jvmLockStorage = "libjvm"
	// jvmHotSpotMutex: a HotSpot Mutex/Monitor object on the C heap (JDK
	// 17 allocates every one there, Heap_lock and Threads_lock too; later
	// JDKs the few made at run time), told by its memory (hotspotMutexAt).
	jvmHotSpotMutex = "hotspot-mutex"
	// jvmInternalWaiters: every waiter is a JVM-internal thread (VM thread,
	// GC, JIT compilers, signal, attach and service threads).
	jvmInternalWaiters = "internal-thread"
	// jvmSafepointBarrier: threads stopped at a safepoint. HotSpot's
	// LinuxWaitBarrier (JDK 13+) waits with an untimed FUTEX_WAIT(_PRIVATE)
	// for the safepoint id, which is odd while a safepoint is in progress;
	// glibc's mutexes wait for 2, its condition variables with
	// FUTEX_WAIT_BITSET.
	jvmSafepointBarrier = "safepoint-barrier"
	// jvmSafepointWindow: a safepoint (ctprof's dump or the JVM's own)
	// began or ended between the tick's start and the end of the /proc
	// sweep: a Java thread then waits on HotSpot locks held for the
	// safepoint's length (Heap_lock while the GC runs, Threads_lock), on
	// the C heap in JDK 17. Such a wait on memory no binary holds is
	// dropped only when its memory could not tell whose lock it is (see
	// jvmFutexFilter.drop).
	jvmSafepointWindow = "safepoint-window"
)

// Which lock a futex word on the C heap belongs to, as its memory says
// (hotspotMutexAt).
type heapLockKind uint8

const (
	// heapLockUnknown: the memory could not be read (no ptrace rights, the
	// lock freed), or reads as neither of the others (a mutex just let
	// go).
	heapLockUnknown heapLockKind = iota
	// heapLockHotSpot: inside a HotSpot Mutex/Monitor object.
	heapLockHotSpot
	// heapLockPlain: a locked glibc mutex that is not a HotSpot
	// Mutex's: native code's own (a JNI library's malloc'ed mutex).
	heapLockPlain
)

// jvmFutexFilter decides, for one sweep of a JVM target, which futex waits
// are not the program's contention.
type jvmFutexFilter struct {
	// dumped are the tids the latest dump lists (dumpedThreads); nil
	// before the first dump.
	dumped dumpedThreads
	// threads are this sweep's threads, whose OS names tell the threads no
	// dump has listed; names indexes them, built on first use.
	threads []snapshot.OSThread
	names   map[int]string
	// mem reads the target's memory (/proc/<pid>/mem) and module names
	// the binary an address lies in ("libjvm.so"; a mapping's
	// description for memory no binary holds), for hotspotMutexAt; a nil
	// mem reads nothing.
	mem    symbolize.StackMemory
	module func(addr uint64) string
	// window says whether a safepoint began or ended during the tick:
	// asked at most once (it costs a read of the JVM's counters), and
	// only for a wait on the C heap whose memory did not tell.
	window                func() bool
	windowAsked, inWindow bool
}

// drop returns why fw is not the program's contention, or "".
//
// A futex wait on memory no binary holds (the C heap, a malloc arena) is
// the hard case: a JNI library's malloc'ed pthread mutex and a HotSpot
// Mutex of JDK 17 (Heap_lock while a collection runs, Threads_lock) both
// wait with FUTEX_WAIT_PRIVATE for 2, from Java threads, on an anonymous
// address. Their memory tells them apart (hotspotMutexAt): a HotSpot
// Mutex is dropped, on any tick; a locked glibc mutex that is not one is
// native code's own and kept, even while a safepoint runs. Only a wait
// whose memory could not be read (no ptrace rights) falls back on the
// timing: dropped when a safepoint began or ended during the tick, since
// HotSpot's locks are held for a safepoint's length. A lock in a binary's
// data other than libjvm.so (a JNI library's static mutex) is kept
// without reading it.
func (f *jvmFutexFilter) drop(fw *snapshot.FutexWait) string {
	if fw.Kind == snapshot.FutexCondition {
		// Idle waiting, reported apart already; not a lock either way.
		return ""
	}
	if fw.Location.Module == "libjvm.so" {
		return jvmLockStorage
	}
	internal := len(fw.TIDs) > 0
	for _, tid := range fw.TIDs {
		if !f.internal(tid) {
			internal = false
			break
		}
	}
	if internal {
		return jvmInternalWaiters
	}
	if (fw.Op == "FUTEX_WAIT" || fw.Op == "FUTEX_WAIT_PRIVATE") && fw.Kind == snapshot.FutexUnknown && !fw.Timed && fw.Value%2 == 1 {
		return jvmSafepointBarrier
	}
	if fw.Location.ModulePath != "" {
		return ""
	}
	switch f.hotspotMutexAt(fw.Address) {
	case heapLockHotSpot:
		return jvmHotSpotMutex
	case heapLockPlain:
		return ""
	}
	if f.safepointWindow() {
		return jvmSafepointWindow
	}
	return ""
}

// safepointWindow asks window once.
func (f *jvmFutexFilter) safepointWindow() bool {
	if !f.windowAsked && f.window != nil {
		f.windowAsked, f.inWindow = true, f.window()
	}
	return f.inWindow
}

// The layout of HotSpot's Mutex (and its subclass Monitor) on Linux,
// JDK 17 to 25 (src/hotspot/share/runtime/mutex.hpp, os_posix.hpp), on
// x86-64: no virtual methods, so no vtable pointer;
//
//	Thread* volatile _owner;        // -8: nullptr, or the owning Thread
//	os::PlatformMonitor _lock;      //  0: pthread_mutex_t, 40 bytes
//	                                // 40: pthread_cond_t, 48 bytes
//	const char* _name;              // 88: "Heap_lock", "Threads_lock", …
//
// relative to the pthread mutex, whose first word threads wait on.
// A Thread (JavaThread, VMThread, …) is a C++ object with virtual
// methods: its first word points into libjvm.so. A malloc'ed mutex of
// native code has the malloc chunk's size before it (an odd number, never
// a pointer); a mutex inside a struct has the struct's field, which is not
// a HotSpot Thread.
const (
	hsMutexOwner = -8
	hsMutexName  = 88
	// hsMutexRead is what one read takes: from _owner to _name.
	hsMutexRead = hsMutexName - hsMutexOwner + 8
	// hsNameMax bounds a lock's name (HotSpot's are under 40 bytes).
	hsNameMax = 64
)

// hotspotMutexAt reads the memory around the futex word at addr and says
// whose lock it is: a HotSpot Mutex when its _name points to a name (a
// NUL-terminated printable string) and its _owner is nullptr or a
// HotSpot Thread; a plain glibc mutex when the word is a locked mutex
// (lock word set, an owner tid) that is not a HotSpot Mutex; unknown
// otherwise. Three reads at most, and only for a wait on the C heap that
// the other rules kept.
func (f *jvmFutexFilter) hotspotMutexAt(addr uint64) heapLockKind {
	if f.mem == nil || addr < 8 || addr%4 != 0 {
		return heapLockUnknown
	}
	var b [hsMutexRead]byte
	if !f.mem.ReadStack(addr-8, b[:]) {
		return heapLockUnknown
	}
	word := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off-hsMutexOwner:]) }
	owner, name := word(hsMutexOwner), word(hsMutexName)
	if (owner == 0 || f.hotspotThread(owner)) && f.lockName(name) {
		return heapLockHotSpot
	}
	// glibc's struct __pthread_mutex_s: int __lock (0), unsigned
	// __count (4), int __owner (8).
	lock, tid := int32(binary.LittleEndian.Uint32(b[-hsMutexOwner:])), int32(binary.LittleEndian.Uint32(b[8-hsMutexOwner:]))
	if lock != 0 && tid > 0 {
		return heapLockPlain
	}
	return heapLockUnknown
}

// hotspotThread says p points to a HotSpot Thread: an 8-aligned pointer
// to memory whose first word (the vtable pointer) lies in libjvm.so.
func (f *jvmFutexFilter) hotspotThread(p uint64) bool {
	if p%8 != 0 || f.module == nil {
		return false
	}
	var b [8]byte
	if !f.mem.ReadStack(p, b[:]) {
		return false
	}
	return f.module(binary.LittleEndian.Uint64(b[:])) == "libjvm.so"
}

// lockName says p points to a HotSpot lock's name: 3 to hsNameMax-1
// printable ASCII bytes and a NUL.
func (f *jvmFutexFilter) lockName(p uint64) bool {
	if p == 0 {
		return false
	}
	var b [hsNameMax]byte
	if !f.mem.ReadStack(p, b[:]) {
		// The name may end near the end of a mapping: try a shorter read.
		if !f.mem.ReadStack(p, b[:16]) {
			return false
		}
		clear(b[16:])
	}
	for i, c := range b {
		if c == 0 {
			return i >= 3
		}
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return false
}

// internal reports whether tid is a JVM-internal thread: the latest dump
// lists it without Java frames, or, for a thread no dump has listed, its
// OS name is one HotSpot gives its own threads. A program thread may carry
// such a name (names are the target's to choose); once a dump shows it
// running Java code, the dump wins.
func (f *jvmFutexFilter) internal(tid int) bool {
	if kind, ok := f.dumped[tid]; ok {
		return kind == dumpedInternal
	}
	if f.names == nil {
		f.names = make(map[int]string, len(f.threads))
		for i := range f.threads {
			f.names[f.threads[i].TID] = f.threads[i].Name
		}
	}
	return jvmInternalThreadName(f.names[tid])
}

// hotspotThreadNames are the OS names (comm, cut at 15 bytes) HotSpot gives
// its own threads, by prefix.
var hotspotThreadNames = []string{
	"VM Thread", "VM Periodic Tas", "GC Thread#", "G1 ", "C1 CompilerThre", "C2 CompilerThre",
	"JVMCI", "Sweeper thread", "Signal Dispatch", "Service Thread", "Monitor Deflati",
	"Notification Th", "Attach Listener", "VM JFR Buffer T", "JFR ", "ZDirector", "ZDriver",
	"ZStat", "ZUnmapper", "ZWorker", "ZRelocate", "Shenandoah", "Concurrent Mark", "Conc#",
}

func jvmInternalThreadName(name string) bool {
	for _, p := range hotspotThreadNames {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// dumpedThreads says, by tid, how the latest dump lists each thread.
type dumpedThreads map[int]dumpedThread

type dumpedThread uint8

const (
	// dumpedInternal: listed without Java frames (VM-internal threads,
	// JIT compilers, signal and attach threads).
	dumpedInternal dumpedThread = iota
	// dumpedJavaWaiting: with Java frames, BLOCKED, WAITING or
	// TIMED_WAITING: it waits on the JVM's own per-thread futex.
	dumpedJavaWaiting
	// dumpedJavaOther: with Java frames, in any other state.
	dumpedJavaOther
	// dumpedJavaInNative: RUNNABLE in a native method (its top frame) of
	// a library, not of the JDK: where it blocks, it blocks in the
	// library's code, which only its native stack shows.
	dumpedJavaInNative
)

// jdkModule says a frame's module (as the dump prints it,
// "java.base@17.0.15") is one of the JDK's own: by JEP 200 their names
// begin with "java." or "jdk.". The JDK's native methods (the reference
// handler's wait for pending references) wait in the JVM's machinery, and
// the dump's verdict on them stands. A class on the class path prints no
// module.
func jdkModule(m string) bool {
	return strings.HasPrefix(m, "java.") || strings.HasPrefix(m, "jdk.")
}

// noteDumpThreads remembers how the dump lists each tid, for
// jvmFutexFilter.internal and waitsNeeded: one table for both, built
// once per dump (a one-shot builds it while the summary waits). A tid
// listed twice (a forged entry) counts as Java if any entry has Java
// frames: the dump wins over a name.
func (s *Sampler) noteDumpThreads(d *threaddump.Dump) {
	s.dumped = make(dumpedThreads, len(d.Threads))
	for i := range d.Threads {
		t := &d.Threads[i]
		if t.OSThreadID <= 0 {
			continue
		}
		tid := int(t.OSThreadID)
		if t.ID == 0 || len(t.Frames) == 0 {
			if _, listed := s.dumped[tid]; !listed {
				s.dumped[tid] = dumpedInternal
			}
			continue
		}
		switch t.State {
		case threaddump.StateBlocked, threaddump.StateWaiting, threaddump.StateTimedWaiting:
			s.dumped[tid] = dumpedJavaWaiting
		case threaddump.StateRunnable:
			if t.Frames[0].Native && !jdkModule(t.Frames[0].Module) {
				s.dumped[tid] = dumpedJavaInNative
			} else {
				s.dumped[tid] = dumpedJavaOther
			}
		default:
			s.dumped[tid] = dumpedJavaOther
		}
	}
}

// javaInNative are the threads the latest dump showed in a library's
// native code (nil: none, or no dump yet).
func (s *Sampler) javaInNative() map[int]bool {
	var in map[int]bool
	for tid, kind := range s.dumped {
		if kind == dumpedJavaInNative {
			if in == nil {
				in = map[int]bool{}
			}
			in[tid] = true
		}
	}
	return in
}

// jvmProgramFutexes removes from futexes (in place) the waits of a JVM
// target that are not the program's contention: see jvmFutexFilter.
// safepointWindow is called, at most once, only when a wait on the C heap
// survives the other rules and its memory did not tell whose lock it is,
// to tell whether a safepoint began or ended during the tick (reading the
// JVM's counters again costs a file read).
func (s *Sampler) jvmProgramFutexes(futexes []snapshot.FutexWait, threads []snapshot.OSThread, safepointWindow func() bool) []snapshot.FutexWait {
	f := jvmFutexFilter{dumped: s.dumped, threads: threads, window: safepointWindow}
	if s.mem != nil {
		f.mem = s.mem
	}
	if s.sym != nil {
		f.module = func(addr uint64) string {
			l, _ := s.sym.Resolve(addr)
			return l.Module
		}
	}
	out := futexes[:0]
	for i := range futexes {
		fw := &futexes[i]
		if why := f.drop(fw); why != "" {
			s.droppedFutexes[why]++
			continue
		}
		out = append(out, *fw)
	}
	return out
}
