package sample

import (
	"strings"

	"github.com/ctprof/ctprof/internal/snapshot"
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
	// the C heap in JDK 17. Only waits on addresses inside a
	// file-backed binary other than libjvm (a JNI library's static mutex)
	// are kept from such a sweep.
	jvmSafepointWindow = "safepoint-window"
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
	// safepointWindow says a safepoint began or ended during the tick.
	safepointWindow bool
}

// drop returns why fw is not the program's contention, or "".
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
	if f.safepointWindow && fw.Location.ModulePath == "" {
		return jvmSafepointWindow
	}
	return ""
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
)

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
		default:
			s.dumped[tid] = dumpedJavaOther
		}
	}
}

// jvmProgramFutexes removes from futexes (in place) the waits of a JVM
// target that are not the program's contention: see jvmFutexFilter.
// safepointWindow is called, at most once, only when a lock-like wait survives
// the other rules, to tell whether a safepoint began or ended during the
// tick (reading the JVM's counters again costs a file read).
func (s *Sampler) jvmProgramFutexes(futexes []snapshot.FutexWait, threads []snapshot.OSThread, safepointWindow func() bool) []snapshot.FutexWait {
	f := jvmFutexFilter{dumped: s.dumped, threads: threads}
	out := futexes[:0]
	asked := false
	for i := range futexes {
		fw := &futexes[i]
		why := f.drop(fw)
		if why == "" && fw.Kind != snapshot.FutexCondition && !asked {
			asked = true
			f.safepointWindow = safepointWindow()
			why = f.drop(fw)
		}
		if why != "" {
			s.droppedFutexes[why]++
			continue
		}
		out = append(out, *fw)
	}
	return out
}
