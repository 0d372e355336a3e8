package procfs

import (
	"cmp"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// FutexKind tells contention from idle waiting.
type FutexKind string

// Futex kinds.
const (
	// FutexLock: threads queue for a mutex or rwlock held by another.
	FutexLock FutexKind = "lock"
	// FutexCondition: threads wait for a signal (condition variable,
	// semaphore, join): waiting for work, not contention.
	FutexCondition FutexKind = "condition"
	// FutexUnknown: neither the operation nor the symbol tells.
	FutexUnknown FutexKind = "unknown"
)

// FutexWait is a set of threads blocked in futex(2) on one address.
type FutexWait struct {
	Address uint64
	// Location names the address; Location.Symbol is "" when it has none.
	Location symbolize.Location
	Kind     FutexKind
	// Op names the futex operation, e.g. "FUTEX_WAIT_PRIVATE".
	Op   string
	TIDs []int
	// Value is the value the first waiter expected at the address
	// (futex(2)'s val), and Timed says whether it waits with a timeout.
	// With Op they tell one futex protocol from another (a JVM's
	// safepoint barrier waits on an odd safepoint id, untimed).
	Value uint64
	Timed bool
	// Holder is what the lock's memory says of its holder (MemReader);
	// nil when not read or not known.
	Holder *LockHolder
}

// futex(2) operations and flags (linux/futex.h).
const (
	futexWait          = 0
	futexLockPI        = 6
	futexWaitBitset    = 9
	futexWaitRequeuePI = 11
	futexLockPI2       = 13
	futexPrivateFlag   = 128
	futexClockRealtime = 256
	futexCmdMask       = ^uint64(futexPrivateFlag | futexClockRealtime)
)

// Sizes of glibc's pthread types on 64-bit Linux; a symbol of that size
// tells what the futex word belongs to.
const (
	sizeofPthreadMutex = 40
	sizeofPthreadCond  = 48
)

// classifyFutex decides whether threads waiting at this address queue for
// a lock or wait for a signal.
//
// glibc (2.34 and later) waits on a contended mutex or rwlock with plain
// FUTEX_WAIT on the lock word after setting it to 2 ("locked, with
// waiters"), while condition variables, semaphores and joins wait with
// FUTEX_WAIT_BITSET; PI mutexes use FUTEX_LOCK_PI. FUTEX_WAIT with another
// value is some other protocol (the Go runtime parks idle threads that way):
// unknown, unless the symbol's size says what the word belongs to.
func classifyFutex(op, val uint64, loc symbolize.Location) FutexKind {
	switch loc.SymbolSize {
	case sizeofPthreadCond:
		return FutexCondition
	case sizeofPthreadRwlock:
		// An rwlock's waiters wait with FUTEX_WAIT_BITSET, as a
		// condition's do, on its phase or writers word.
		if loc.SymbolOffset == 8 || loc.SymbolOffset == 12 {
			return FutexLock
		}
	case sizeofPthreadMutex:
		if loc.SymbolOffset == 0 {
			return FutexLock
		}
	}
	switch op & futexCmdMask {
	case futexLockPI, futexLockPI2:
		return FutexLock
	case futexWaitBitset, futexWaitRequeuePI:
		return FutexCondition
	case futexWait:
		if val == 2 {
			return FutexLock
		}
	}
	return FutexUnknown
}

func futexOpName(op uint64) string {
	// Constant names, so naming a thousand waiters allocates nothing.
	private := op&futexPrivateFlag != 0
	pick := func(plain, priv string) string {
		if private {
			return priv
		}
		return plain
	}
	switch op & futexCmdMask {
	case futexWait:
		return pick("FUTEX_WAIT", "FUTEX_WAIT_PRIVATE")
	case futexLockPI:
		return pick("FUTEX_LOCK_PI", "FUTEX_LOCK_PI_PRIVATE")
	case futexWaitBitset:
		return pick("FUTEX_WAIT_BITSET", "FUTEX_WAIT_BITSET_PRIVATE")
	case futexWaitRequeuePI:
		return pick("FUTEX_WAIT_REQUEUE_PI", "FUTEX_WAIT_REQUEUE_PI_PRIVATE")
	case futexLockPI2:
		return pick("FUTEX_LOCK_PI2", "FUTEX_LOCK_PI2_PRIVATE")
	}
	return pick("FUTEX_OP_", "FUTEX_OP_") + strconv.FormatUint(op&futexCmdMask, 10) + pick("", "_PRIVATE")
}

// sysFutex is futex(2)'s number on this architecture, as /proc/*/syscall
// reports it.
const sysFutex = unix.SYS_FUTEX

// GroupFutexWaits groups the threads blocked in futex(2) by address and
// names each address with sym (nil: unnamed). Groups come out with the most
// waiters first.
func GroupFutexWaits(threads []Thread, sym *symbolize.Symbolizer) []FutexWait {
	// One slice of waiters, grouped by sorting: a JVM parks each idle
	// thread on its own address, so there are as many groups as threads,
	// and a map entry and a slice per group would be most of the cost.
	type waiter struct {
		addr    uint64
		tid     int
		op, val uint64
		timed   bool
	}
	n := 0
	for i := range threads {
		if threads[i].Syscall == sysFutex {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	ws := make([]waiter, 0, n)
	for i := range threads {
		t := &threads[i]
		if t.Syscall != sysFutex || !t.Sleeping() {
			continue
		}
		op := t.SyscallArgs[1]
		cmd := op & futexCmdMask
		if cmd != futexWait && cmd != futexWaitBitset && cmd != futexLockPI && cmd != futexLockPI2 && cmd != futexWaitRequeuePI {
			continue // wakes and requeues do not block
		}
		ws = append(ws, waiter{addr: t.SyscallArgs[0], tid: t.TID, op: op, val: t.SyscallArgs[2], timed: t.SyscallArgs[3] != 0})
	}
	if len(ws) == 0 {
		return nil
	}
	// Stable by address: the first waiter in thread order classifies it.
	slices.SortStableFunc(ws, func(a, b waiter) int { return cmp.Compare(a.addr, b.addr) })
	tids := make([]int, len(ws))
	groups := 1
	for i := 1; i < len(ws); i++ {
		if ws[i].addr != ws[i-1].addr {
			groups++
		}
	}
	out := make([]FutexWait, 0, groups)
	var stacks stackOwners
	for i := 0; i < len(ws); {
		j := i
		for ; j < len(ws) && ws[j].addr == ws[i].addr; j++ {
			tids[j] = ws[j].tid
		}
		fw := FutexWait{Address: ws[i].addr, Op: futexOpName(ws[i].op), Value: ws[i].val, Timed: ws[i].timed, Location: symbolize.Location{Address: ws[i].addr}, TIDs: tids[i:j:j]}
		if sym != nil {
			if r, err := sym.ResolveRegion(fw.Address); err == nil {
				fw.Location = r.Location
				if r.PrivateAnonymous() {
					fw.Location = stacks.name(threads, r, sym)
				}
			}
		}
		fw.Kind = classifyFutex(ws[i].op, ws[i].val, fw.Location)
		slices.Sort(fw.TIDs)
		out = append(out, fw)
		i = j
	}
	slices.SortStableFunc(out, func(a, b FutexWait) int { return cmp.Compare(len(b.TIDs), len(a.TIDs)) })
	return out
}

// TimedWait reports whether a sleeping thread waits in a call that ends by
// itself after a timeout: sleeps, futex waits with a timeout, and epoll,
// poll and select with one. Threads that wake from such waits often and do
// little are polling (a wake-up storm); a thread waiting for a lock or for
// an event without a timeout is not.
func TimedWait(t *Thread) bool {
	if !t.Sleeping() {
		return false
	}
	a := t.SyscallArgs
	switch t.Syscall {
	case unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP:
		return true
	case unix.SYS_FUTEX:
		cmd := a[1] & futexCmdMask
		return (cmd == futexWait || cmd == futexWaitBitset) && a[3] != 0 && classifyFutex(a[1], a[2], symbolize.Location{}) != FutexLock
	case sysEpollWait, unix.SYS_EPOLL_PWAIT:
		return shortTimeout(int32(a[3])) // timeout in ms; -1 waits forever
	case sysPoll:
		return shortTimeout(int32(a[2]))
	case unix.SYS_PPOLL:
		return a[2] != 0 // a pointer to the timeout: NULL waits forever
	case unix.SYS_PSELECT6, sysSelect:
		return a[4] != 0
	}
	return false
}

// shortTimeout reports a timeout in milliseconds that a poller would use:
// a wait bounded by minutes or hours (a server's idle-connection timeout,
// MariaDB's 8 hours) ends with the client's next request, not by itself.
func shortTimeout(ms int32) bool { return ms >= 0 && ms <= 1000 }

// stackOwners tells which thread's stack an anonymous mapping is: the
// thread whose stack pointer, as its blocked system call left it, lies in
// the mapping. A thread that runs has none to show; its stack stays
// "anonymous memory".
type stackOwners struct {
	sps []stackPointer // built on first use
}

type stackPointer struct {
	sp  uint64
	tid int
}

// name renames r's location "[stack:TID]" (with the offset from the
// mapping's start) when a thread's stack pointer lies in its mapping, or
// lay there at an earlier sweep (sym remembers it): the owner of a stack
// runs now and then, and its futex must not change names when it does.
func (so *stackOwners) name(threads []Thread, r symbolize.Region, sym *symbolize.Symbolizer) symbolize.Location {
	if so.sps == nil {
		// Sorted once, searched per futex: a JVM parks thousands of
		// threads, each on a futex of its own in anonymous memory.
		so.sps = make([]stackPointer, 0, 16)
		for i := range threads {
			if t := &threads[i]; t.Syscall >= 0 && t.SyscallSP != 0 {
				so.sps = append(so.sps, stackPointer{t.SyscallSP, t.TID})
			}
		}
		slices.SortFunc(so.sps, func(a, b stackPointer) int { return cmp.Compare(a.sp, b.sp) })
	}
	tid := 0
	i, _ := slices.BinarySearchFunc(so.sps, r.Start, func(p stackPointer, start uint64) int { return cmp.Compare(p.sp, start) })
	if i < len(so.sps) && so.sps[i].sp < r.End {
		tid = so.sps[i].tid
	}
	if tid != 0 {
		sym.NoteStack(r.Start, tid)
	} else if tid = sym.StackOwner(r.Start); tid == 0 {
		return r.Location
	}
	l := r.Location
	l.Module = "[stack:" + strconv.Itoa(tid) + "]"
	return l
}

// ClassifyFutex classes a futex wait by its futex(2) operation (flags
// included), the value the waiter expected and the address's location,
// as the sweep classes the waits it sees (a lock, a condition, unknown);
// the exact-wait tracer classes the calls it counted the same way. It
// returns "" for an operation that does not block.
func ClassifyFutex(op, val uint64, loc symbolize.Location) FutexKind {
	switch op & futexCmdMask {
	case futexWait, futexWaitBitset, futexLockPI, futexLockPI2, futexWaitRequeuePI:
		return classifyFutex(op, val, loc)
	}
	return ""
}

// FutexOpName names a futex(2) operation with its private flag
// ("FUTEX_WAIT_PRIVATE").
func FutexOpName(op uint64) string { return futexOpName(op) }

// FutexNamer names futex addresses as GroupFutexWaits names the sampled
// ones: by symbol or mapping, and "[stack:TID]" for a thread's stack (a
// thread of the sweep whose stack pointer lies there, or one that did at
// an earlier sweep), so the futexes the exact-wait tracer counted and
// those the sweep saw have one name.
type FutexNamer struct {
	threads []Thread
	sym     *symbolize.Symbolizer
	stacks  stackOwners
}

// NewFutexNamer names addresses of sym's process; threads are the sweep's.
func NewFutexNamer(threads []Thread, sym *symbolize.Symbolizer) *FutexNamer {
	return &FutexNamer{threads: threads, sym: sym}
}

// Name names addr.
func (n *FutexNamer) Name(addr uint64) symbolize.Location {
	r, err := n.sym.ResolveRegion(addr)
	if err != nil {
		return symbolize.Location{Address: addr}
	}
	if r.PrivateAnonymous() {
		return n.stacks.name(n.threads, r, n.sym)
	}
	return r.Location
}
