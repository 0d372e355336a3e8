package sample

import (
	"strings"

	"github.com/ctprof/ctprof/internal/nativewait"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Native user stacks. A thread blocked in a system call shows its stack
// pointer and program counter in /proc/<tid>/syscall; the unwinder reads
// its stack through /proc/<pid>/mem and unwinds it with the binaries'
// call-frame information, without stopping the process. Threads that run
// have no stack here (their registers change under the reader).
//
// For a native target every blocked thread is unwound: its stack says
// where it waits, for a lock or for work. For a JVM only the threads the
// lock table keeps (waiters of a JNI library's lock, and their holders)
// and the threads the latest dump showed RUNNABLE in a native method that
// are blocked in a futex (a JNI library's waits on its own conditions:
// RocksDB's write-group followers) are: the thread dumps give the Java
// stacks, and the rest of a JVM's futex waits are its own machinery.

// maxUnwindsPerTick bounds the stacks unwound afresh in one sample, so a
// first sample of a process with tens of thousands of blocked threads
// stays short; the rest come in the following samples (a thread whose
// stack is cached costs nothing).
const maxUnwindsPerTick = 4096

// stackKey says a thread has not moved since its stack was unwound: the
// same thread (tid and start time), blocked at the same stack pointer and
// program counter, with no voluntary switch since (it did not wake up and
// block again in between).
type stackKey struct {
	start, sp, pc, voluntary uint64
}

type cachedStack struct {
	key   stackKey
	stack []symbolize.StackFrame
}

// stackState is the sampler's unwinder and the stacks of its previous
// sample.
type stackState struct {
	unwinder *symbolize.Unwinder
	cache    map[int]cachedStack
	// Unwound counts the stacks unwound afresh, Reused those taken from
	// the cache, Discarded those dropped because the thread woke while
	// its stack was read, and Retried those of them read again in the
	// same wait, over the run (for tests and benchmarks).
	Unwound, Reused, Discarded, Retried int
	// symGen is symbolize.SymbolGeneration when cache was named.
	symGen uint64
	// next is the tick's cache as it is filled (nil before its first
	// unwind), early the threads unwindEarly took in the tick.
	next  map[int]cachedStack
	early map[int]bool
}

// readHoldersNow reads each lock holder's state again right after its
// lock's memory named it: the sweep came first, and a thread that took
// the lock since was doing something else then (in memcached's LRU
// convoy, 1 holder in about 50 was "in epoll_wait", from before it took
// the lock). Its stack is then unwound from where it is now.
func (s *Sampler) readHoldersNow(threads []snapshot.OSThread, futexes []snapshot.FutexWait) {
	var index map[int]int
	for _, fw := range futexes {
		if fw.Holder == nil || fw.Holder.TID == 0 {
			continue
		}
		if index == nil {
			index = make(map[int]int, len(threads))
			for i := range threads {
				index[threads[i].TID] = i
			}
		}
		if i, ok := index[fw.Holder.TID]; ok {
			s.threads.ReadNow(&threads[i])
		}
	}
}

// unwindStacks fills Stack for the threads this target's stacks are taken
// of (see above), from the cache where a thread has not moved. It reports
// whether a thread was read again in another wait than the sweep saw, so
// that the sample's futex waits must be grouped again. The threads
// unwindEarly read in this tick keep what it found.
func (s *Sampler) unwindStacks(threads []snapshot.OSThread, futexes []snapshot.FutexWait) (moved bool) {
	defer s.endUnwinds()
	var want map[int]bool
	if s.target.Kind == snapshot.KindJVM {
		want = map[int]bool{}
		for i := range threads {
			if _, _, _, ok := procfs.BlockingFutex(&threads[i]); ok && s.dumped[threads[i].TID] == dumpedJavaInNative {
				want[threads[i].TID] = true
			}
		}
		for _, fw := range futexes {
			if fw.Kind == snapshot.FutexCondition {
				continue
			}
			for _, tid := range fw.TIDs {
				want[tid] = true
			}
			if fw.Holder != nil && fw.Holder.TID != 0 {
				want[fw.Holder.TID] = true
			}
		}
		for tid := range s.stacks.early {
			delete(want, tid)
		}
		if len(want) == 0 {
			return false
		}
	}
	return s.unwindThreads(threads, want)
}

// unwindEarly unwinds, right after a sweep taken while a thread dump is
// under way, the threads the previous dump showed in a library's native
// code (inNative) that the sweep found blocked in a futex: they went on
// through the dump's safepoint, and read after it their waits would be
// those the safepoint left (a write group's followers, woken, return into
// the safepoint and queue no more: RocksDB's waiters ran up to a quarter
// under /proc's own count). unwindStacks leaves them as read here.
func (s *Sampler) unwindEarly(threads []snapshot.OSThread, inNative map[int]bool) {
	want := map[int]bool{}
	for i := range threads {
		if _, _, _, ok := procfs.BlockingFutex(&threads[i]); ok && inNative[threads[i].TID] {
			want[threads[i].TID] = true
		}
	}
	if len(want) == 0 {
		return
	}
	s.unwindThreads(threads, want)
	s.stacks.early = want
}

// unwindThreads unwinds the threads of want (nil: all) blocked in a system
// call, into the tick's cache (see unwindStacks).
func (s *Sampler) unwindThreads(threads []snapshot.OSThread, want map[int]bool) (moved bool) {
	u := s.unwinder()
	if s.stacks.next == nil {
		// The tick's first unwinds. Debug files a debuginfod server sent
		// since the last sample name frames from now on: stacks named
		// before are read again.
		s.notes = append(s.notes, u.Refresh()...)
		if g := symbolize.SymbolGeneration(); g != s.stacks.symGen {
			s.stacks.symGen, s.stacks.cache = g, nil
		}
		s.stacks.next = make(map[int]cachedStack, len(s.stacks.cache))
	}
	next := s.stacks.next
	jvmModule := "" // named once: a module's name is worked out by a regexp
	if s.target.Kind == snapshot.KindJVM {
		jvmModule = s.libjvm.Module()
	}
	fresh := 0
	for i := range threads {
		t := &threads[i]
		if t.Syscall < 0 || t.SyscallSP == 0 || t.SyscallPC == 0 || want != nil && !want[t.TID] {
			continue
		}
		key := waitKey(t)
		if c, ok := s.stacks.cache[t.TID]; ok && c.key == key {
			t.Stack = c.stack
			next[t.TID] = c
			s.stacks.Reused++
			continue
		}
		if fresh == maxUnwindsPerTick {
			continue
		}
		fresh++
		t.Stack = u.Unwind(symbolize.Regs{PC: t.SyscallPC, SP: t.SyscallSP}, s.mem, symbolize.MaxStackFrames)
		s.stacks.Unwound++
		if len(t.Stack) > 0 && !s.threads.StillBlocked(t) {
			// It woke while its stack was read: the frames may mix two
			// moments. No stack rather than a wrong one, unless it is
			// blocked again and a second read holds: the thread is then
			// reported where it is now (a convoy's waiters wake and
			// queue again within microseconds: without the retry, a
			// third of a write group's followers had no stack; Varnish's
			// requests streaming a busy object wait again on its
			// condition with a new sequence value, and a sixth of them
			// had none while only the same arguments were retried).
			t.Stack = nil
			s.stacks.Discarded++
			var again bool
			t.Stack, again = s.unwindAgain(u, t)
			if again {
				key = waitKey(t)
				moved = true
			}
		}
		if s.target.Kind == snapshot.KindJVM {
			t.Stack = nativePart(t.Stack, jvmModule)
		}
		if len(t.Stack) > 0 {
			next[t.TID] = cachedStack{key: key, stack: t.Stack}
		}
	}
	return moved
}

// endUnwinds ends a tick's unwinds: the stacks it read (or kept) are the
// next tick's cache.
func (s *Sampler) endUnwinds() {
	s.stacks.cache, s.stacks.next, s.stacks.early = s.stacks.next, nil, nil
}

// nativePart cuts a JVM thread's native stack where it enters code no
// binary holds (JIT-compiled Java, the interpreter's generated code): the
// unwinder has no call-frame information there and what it finds beyond
// is a guess, while the thread dump has the Java frames. It is nil when
// the wait's site (the first frame above the C runtime's machinery) is in
// the JVM's own library jvmModule: a wait of the JVM itself (a thread
// coming back from native code into a safepoint, as ctprof's own thread
// dumps make them, or the JVM's own locks), which the dump judges, not a
// wait in a library the Java code called.
func nativePart(st []symbolize.StackFrame, jvmModule string) []symbolize.StackFrame {
	for i, f := range st {
		if f.Function == "" && !strings.HasSuffix(f.Module, ".so") && !strings.Contains(f.Module, ".so.") {
			st = st[:i]
			break
		}
	}
	if len(st) == 0 || jvmModule != "" && nativewait.SiteModule(st) == jvmModule {
		return nil
	}
	return st
}

// unwindAgain reads a thread whose stack was discarded once more: when it
// is blocked again in a system call, its stack is unwound from where it is
// now and kept if the thread did not move meanwhile, and t then holds the
// thread's state of this second read (moved says so when its system call
// or arguments differ from the sweep's). Otherwise the thread is left as
// the sweep saw it, without a stack.
func (s *Sampler) unwindAgain(u *symbolize.Unwinder, t *snapshot.OSThread) (st []symbolize.StackFrame, moved bool) {
	orig := *t
	for try := 0; try < unwindRetries; try++ {
		if !s.threads.ReadNow(t) || t.Syscall < 0 || t.SyscallSP == 0 || t.SyscallPC == 0 {
			break // running, or gone
		}
		st = u.Unwind(symbolize.Regs{PC: t.SyscallPC, SP: t.SyscallSP}, s.mem, symbolize.MaxStackFrames)
		if len(st) == 0 {
			break
		}
		if s.threads.StillBlocked(t) {
			s.stacks.Retried++
			return st, t.Syscall != orig.Syscall || t.SyscallArgs != orig.SyscallArgs
		}
	}
	*t = orig
	return nil, false
}

// unwindRetries bounds the reads again of a thread that keeps moving while
// its stack is read: a write group's followers wait a few hundred
// microseconds at a time, and on a busy 2-core machine one retry read a
// third of RocksDB's JNI writers in the first sample, three most of them.
const unwindRetries = 3
