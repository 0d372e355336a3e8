package procfs

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// LockHolder is what a glibc lock's own memory says of it: which thread
// holds a mutex, which writes an rwlock, how many wait on a condition
// variable. ctprof reads it through /proc/<pid>/mem without stopping or
// writing to the target; the memory changes while it is read, so a figure
// is kept only when it is consistent (the lock word says locked, the
// owner is a thread of the target).
type LockHolder struct {
	// Lock says what the futex word belongs to: "mutex", "recursive
	// mutex", "error-checking mutex", "adaptive mutex" (with "robust "
	// or "PI " before it), "rwlock" or "condition variable".
	Lock string
	// TID is the thread holding the mutex, or writing the rwlock; 0 when
	// the memory names none (an rwlock held by readers, a condition).
	TID int
	// Readers is the number of readers an rwlock counts.
	Readers int
	// Waiters is the number of waiters a condition variable counts.
	Waiters int
	// Across is the system call the holder of a mutex was blocked in
	// while it held the lock (ConfirmHolders); nil when it was not seen
	// so.
	Across *HeldAcross
}

// HeldAcross is a blocking system call a lock's holder was in, read from
// /proc between two reads of the lock that both named it: the holder held
// the lock through it. Syscall, SP and PC are task/<tid>/syscall's, to be
// matched with the sweep's view of the holder (the wait its stack was read
// in).
type HeldAcross struct {
	Syscall int
	SP, PC  uint64
}

// The layout of glibc's pthread types on x86-64, from this machine's
// headers (/usr/include/x86_64-linux-gnu/bits/struct_mutex.h,
// struct_rwlock.h, pthreadtypes.h; glibc 2.36) and unchanged since glibc
// 2.25's new rwlock and condition variable:
//
//	struct __pthread_mutex_s { int __lock; unsigned __count; int __owner;
//	  unsigned __nusers; int __kind; short __spins, __elision; list }
//	struct __pthread_rwlock_arch_t { unsigned __readers, __writers,
//	  __wrphase_futex, __writers_futex, __pad3, __pad4; int __cur_writer; … }
//	struct __pthread_cond_s { u64 __wseq, __g1_start; unsigned __g_refs[2],
//	  __g_size[2], __g1_orig_size, __wrefs, __g_signals[2]; }
//
// A mutex's waiters wait on __lock (offset 0), an rwlock's readers on
// __wrphase_futex (8) and writers on __writers_futex (12), a condition's
// waiters on __g_signals (40, 44).
const (
	mutexLock   = 0
	mutexCount  = 4
	mutexOwner  = 8
	mutexNUsers = 12
	mutexKind   = 16
	mutexRead   = 20

	rwlockReaders   = 0
	rwlockCurWriter = 24
	rwlockRead      = 28
	// rwlockReaderShift: __readers counts readers above three flag bits
	// (glibc's PTHREAD_RWLOCK_READER_SHIFT).
	rwlockReaderShift = 3

	condWRefs = 36
	// condWRefsShift: __wrefs counts waiters above three flag bits.
	condWRefsShift = 3

	sizeofPthreadRwlock = 56
)

// layoutKnown says the layout above is this architecture's: it was
// checked on x86-64 only (other 64-bit ports share the mutex's, not
// necessarily the rest); elsewhere no holder is read rather than a wrong
// one.
var layoutKnown = runtime.GOARCH == "amd64"

// glibc's mutex kinds (__kind): the type in the low two bits, and flags.
const (
	mutexTypeMask = 3
	mutexRobust   = 16  // PTHREAD_MUTEX_ROBUST_NORMAL_NP
	mutexPI       = 32  // PTHREAD_MUTEX_PRIO_INHERIT_NP
	mutexPP       = 64  // PTHREAD_MUTEX_PRIO_PROTECT_NP
	mutexPShared  = 128 // PTHREAD_MUTEX_PSHARED_BIT
	mutexElision  = 256 | 512
	mutexKnown    = mutexTypeMask | mutexRobust | mutexPI | mutexPP | mutexPShared | mutexElision
	// futexTIDMask takes the owner out of a robust or PI lock word
	// (linux/futex.h FUTEX_TID_MASK).
	futexTIDMask = 0x3fffffff
)

var mutexTypes = [4]string{"mutex", "recursive mutex", "error-checking mutex", "adaptive mutex"}

// ErrMemDenied says the target's memory could not be opened for lack of
// ptrace rights (root, or the target's user where ptrace_scope allows).
var ErrMemDenied = errors.New("no permission to read the target's memory")

// MemReader reads glibc lock words of one process through
// /proc/<pid>/mem: one descriptor for the run, opened read-only on first
// use, and pread at each address. It never writes.
type MemReader struct {
	fs     FS
	pid    int
	file   *os.File
	denied bool
	failed bool
	buf    [64]byte
	// peers says whether a thread of another process that shares memory
	// with this one (a tree of processes) may hold a lock in it.
	peers func(tid int) bool
}

// SetPeers names the threads of other processes that may hold the locks
// in this process's shared memory: a process-shared mutex of a server
// made of processes is held by a thread of another of its processes.
func (r *MemReader) SetPeers(peers func(tid int) bool) {
	if r != nil {
		r.peers = peers
	}
}

// NewMemReader returns a reader of pid's memory; it opens nothing yet.
func (f FS) NewMemReader(pid int) *MemReader { return &MemReader{fs: f, pid: pid} }

// Denied reports whether opening the memory was refused for lack of
// permission (said once in the summary's warnings, as "mem").
func (r *MemReader) Denied() bool { return r != nil && r.denied }

// Close closes the descriptor.
func (r *MemReader) Close() error {
	if r == nil || r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// read returns n bytes at addr, or false when they cannot be read (an
// unmapped address, a process gone, no permission).
func (r *MemReader) read(addr uint64, n int) ([]byte, bool) {
	if n > len(r.buf) || !r.ReadStack(addr, r.buf[:n]) {
		return nil, false
	}
	return r.buf[:n], true
}

// FillHolders reads, for each futex the threads queue on, what its lock
// says of its holder, and sets FutexWait.Holder; threads are the sample's
// threads (a holder must be one of them). A futex the waits left unknown
// or took for a condition (a timed lock waits as a condition does) whose
// memory is plainly a locked glibc mutex becomes a lock.
func (r *MemReader) FillHolders(futexes []FutexWait, threads []Thread) {
	if r == nil || len(futexes) == 0 || !layoutKnown {
		return
	}
	var tids map[int]bool
	isThread := func(tid int) bool {
		if tids == nil {
			tids = make(map[int]bool, len(threads))
			for i := range threads {
				tids[threads[i].TID] = true
			}
		}
		return tid > 0 && tids[tid]
	}
	isPeer := func(tid int) bool { return isThread(tid) || tid > 0 && r.peers(tid) }
	for i := range futexes {
		fw := &futexes[i]
		fw.Holder = nil
		l := fw.Location
		isThread := isThread
		if r.peers != nil && l.InSharedMemory() {
			isThread = isPeer
		}
		switch {
		case l.SymbolSize == sizeofPthreadRwlock && (l.SymbolOffset == 8 || l.SymbolOffset == 12):
			fw.Holder = r.rwlock(fw.Address-l.SymbolOffset, isThread)
		case l.SymbolSize == sizeofPthreadCond && (l.SymbolOffset == 40 || l.SymbolOffset == 44):
			fw.Holder = r.condition(fw.Address - l.SymbolOffset)
		case rwlockWait(fw) && l.SymbolSize == 0:
			// No symbol to say what the word is: the rwlock's own layout
			// must (rwlockByLayout), or it stays what the wait said.
			if h := r.rwlockByLayout(fw.Address, isThread); h != nil {
				fw.Holder, fw.Kind = h, FutexLock
			}
		case fw.Kind == FutexLock || fw.Kind == FutexUnknown || timedLockWait(fw):
			h, sure := r.mutex(fw.Address, isThread)
			if h == nil {
				continue
			}
			if fw.Kind != FutexLock && !sure {
				continue // not enough to call it a mutex
			}
			fw.Holder, fw.Kind = h, FutexLock
		}
		DropWaitingHolder(fw)
	}
}

// ConfirmHolders reads again, for each mutex of futexes whose memory
// named its holder (FillHolders, earlier), the holder's system call and
// then the mutex: a holder blocked in a system call (other than a wait on
// this very lock) that the mutex still names held the lock while it was
// there, and its Across says where. It reads /proc/<tid>/syscall, not the
// sweep's descriptors: the holder of a process-shared mutex may be a
// thread of another process of the tree.
func (r *MemReader) ConfirmHolders(futexes []FutexWait) {
	if r == nil || !layoutKnown {
		return
	}
	for i := range futexes {
		fw := &futexes[i]
		h := fw.Holder
		if h == nil || h.TID <= 0 || h.Readers != 0 || h.Waiters != 0 || h.Lock == "rwlock" || h.Lock == "condition variable" {
			continue
		}
		h.Across = nil
		b, err := r.fs.readFile(r.fs.pidPath(h.TID, "syscall"))
		if err != nil {
			continue
		}
		var t Thread
		parseSyscall(b, &t)
		if t.Syscall < 0 || t.Syscall == unix.SYS_FUTEX && t.SyscallArgs[0] == fw.Address {
			continue
		}
		again, _ := r.mutex(fw.Address, func(tid int) bool { return tid == h.TID })
		if again == nil {
			continue
		}
		h.Across = &HeldAcross{Syscall: t.Syscall, SP: t.SyscallSP, PC: t.SyscallPC}
	}
}

// DropWaitingHolder unnames a holder that the sweep saw wait on this very
// lock: it took the lock between the sweep and the read of the lock's
// memory (a self-deadlock looks the same, and is left unnamed rather than
// guessed). An rwlock keeps what it says of its readers. A holder seen
// blocked elsewhere with the lock held (Across) stays: that was read after
// the lock, and the sweep's sighting is the older one.
func DropWaitingHolder(fw *FutexWait) {
	if fw.Holder == nil || fw.Holder.Across != nil || !slices.Contains(fw.TIDs, fw.Holder.TID) {
		return
	}
	if fw.Holder.Lock != "rwlock" {
		fw.Holder = nil
		return
	}
	h := *fw.Holder
	h.TID = 0
	fw.Holder = &h
}

// timedLockWait is a wait that may be pthread_mutex_timedlock's: glibc
// waits for a held mutex with FUTEX_WAIT_BITSET (a timeout) and the value
// 2 ("locked, with waiters"); condition variables wait for another value.
func timedLockWait(fw *FutexWait) bool {
	return (fw.Op == "FUTEX_WAIT_BITSET" || fw.Op == "FUTEX_WAIT_BITSET_PRIVATE") && fw.Value == 2
}

// rwlockWait is a wait that may be an rwlock's: glibc's readers and
// writers wait with FUTEX_WAIT_BITSET for 1|PTHREAD_RWLOCK_FUTEX_USED (3)
// on the phase or the writers' word; condition variables and semaphores
// wait for other values.
func rwlockWait(fw *FutexWait) bool {
	return (fw.Op == "FUTEX_WAIT_BITSET" || fw.Op == "FUTEX_WAIT_BITSET_PRIVATE") && fw.Value == 3
}

// rwlockByLayout tells, without a symbol, whether the futex word at addr
// is a glibc rwlock's phase word (offset 8) or writers' word (offset 12)
// by the rest of the rwlock: both futex words hold 0-3, the padding
// (__pad3, __pad4, the bytes after __rwelision, __pad2) is zero, __shared
// is 0 or 1 and __flags at most 2. Both readings can fit an rwlock that
// no writer holds; then the one that names a writer of the target wins,
// and with none, no count of readers is given (it would be one of two
// words).
func (r *MemReader) rwlockByLayout(addr uint64, isThread func(int) bool) *LockHolder {
	var found []*LockHolder
	for _, off := range []uint64{8, 12} {
		if addr < off {
			continue
		}
		b, ok := r.read(addr-off, sizeofPthreadRwlock)
		if !ok {
			continue
		}
		le := binary.LittleEndian
		u32 := func(o int) uint32 { return le.Uint32(b[o:]) }
		if u32(8) > 3 || u32(12) > 3 || u32(16) != 0 || u32(20) != 0 || u32(28) > 1 ||
			le.Uint64(b[32:])&^0xff != 0 || le.Uint64(b[40:]) != 0 || u32(48) > 2 {
			continue
		}
		h := &LockHolder{Lock: "rwlock", Readers: int(u32(rwlockReaders) >> rwlockReaderShift)}
		if w := int(int32(u32(rwlockCurWriter))); w != 0 {
			if !isThread(w) {
				continue // a writer that is no thread of the target: not an rwlock
			}
			h.TID = w
		}
		found = append(found, h)
	}
	switch {
	case len(found) == 1:
		return found[0]
	case len(found) == 2:
		for _, h := range found {
			if h.TID != 0 {
				return h
			}
		}
		return &LockHolder{Lock: "rwlock"}
	}
	return nil
}

// mutex reads a glibc mutex at addr: its holder when the lock word says
// locked and the owner is a thread of the target. sure says the memory is
// a mutex beyond doubt (a known kind, a user count), enough to call a
// futex of unknown use a lock.
func (r *MemReader) mutex(addr uint64, isThread func(int) bool) (*LockHolder, bool) {
	b, ok := r.read(addr, mutexRead)
	if !ok {
		return nil, false
	}
	le := binary.LittleEndian
	lock := le.Uint32(b[mutexLock:])
	owner := int(int32(le.Uint32(b[mutexOwner:])))
	nusers := le.Uint32(b[mutexNUsers:])
	kind := le.Uint32(b[mutexKind:])
	if kind&^mutexKnown != 0 {
		return nil, false
	}
	name := mutexTypes[kind&mutexTypeMask]
	var tid int
	switch {
	case kind&mutexPI != 0:
		// A PI mutex's word is its owner's TID (FUTEX_LOCK_PI's protocol).
		name, tid = "PI "+name, int(lock&futexTIDMask)
	case kind&mutexRobust != 0:
		// So is a robust one's: the kernel releases it if the owner dies.
		name, tid = "robust "+name, int(lock&futexTIDMask)
	default:
		// 1: locked, 2: locked with waiters; __owner is set right after
		// the lock is taken and cleared right before it is released.
		if lock != 1 && lock != 2 {
			return nil, false
		}
		tid = owner
	}
	if !isThread(tid) {
		return nil, false
	}
	return &LockHolder{Lock: name, TID: tid}, nusers >= 1 && owner == tid
}

// rwlock reads a glibc rwlock at addr: its writer, when one holds it and
// is a thread of the target, and its readers.
func (r *MemReader) rwlock(addr uint64, isThread func(int) bool) *LockHolder {
	b, ok := r.read(addr, rwlockRead)
	if !ok {
		return nil
	}
	le := binary.LittleEndian
	h := &LockHolder{Lock: "rwlock", Readers: int(le.Uint32(b[rwlockReaders:]) >> rwlockReaderShift)}
	if w := int(int32(le.Uint32(b[rwlockCurWriter:]))); isThread(w) {
		h.TID = w
	}
	return h
}

// condition reads the waiter count of a glibc condition variable at addr.
func (r *MemReader) condition(addr uint64) *LockHolder {
	b, ok := r.read(addr+condWRefs, 4)
	if !ok {
		return nil
	}
	return &LockHolder{Lock: "condition variable", Waiters: int(binary.LittleEndian.Uint32(b) >> condWRefsShift)}
}

// ReadStack reads len(b) bytes of the process's memory at addr through
// /proc/<pid>/mem; false when they cannot be read (an unmapped address, a
// process gone, no permission). MemReader is a StackMemory.
func (r *MemReader) ReadStack(addr uint64, b []byte) bool {
	if r == nil || !r.open() || addr > 1<<63 {
		return false
	}
	got, err := unix.Pread(int(r.file.Fd()), b, int64(addr))
	if err != nil || got != len(b) {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			r.denied = true
			r.Close()
		}
		return false
	}
	return true
}

// open opens /proc/<pid>/mem on first use; false when it cannot be.
func (r *MemReader) open() bool {
	if r.file != nil {
		return true
	}
	if r.denied || r.failed {
		return false
	}
	f, err := os.Open(r.fs.pidPath(r.pid, "mem"))
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			r.denied = true
		} else {
			r.failed = true
		}
		return false
	}
	r.file = f
	return true
}
