package procfs

import (
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
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
	Location Location
	Kind     FutexKind
	// Op names the futex operation, e.g. "FUTEX_WAIT_PRIVATE".
	Op   string
	TIDs []int
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
func classifyFutex(op, val uint64, loc Location) FutexKind {
	switch loc.SymbolSize {
	case sizeofPthreadCond:
		return FutexCondition
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
	var name string
	switch op & futexCmdMask {
	case futexWait:
		name = "FUTEX_WAIT"
	case futexLockPI:
		name = "FUTEX_LOCK_PI"
	case futexWaitBitset:
		name = "FUTEX_WAIT_BITSET"
	case futexWaitRequeuePI:
		name = "FUTEX_WAIT_REQUEUE_PI"
	case futexLockPI2:
		name = "FUTEX_LOCK_PI2"
	default:
		return "FUTEX_OP_" + strconv.FormatUint(op&futexCmdMask, 10)
	}
	if op&futexPrivateFlag != 0 {
		name += "_PRIVATE"
	}
	return name
}

// sysFutex is futex(2)'s number on this architecture, as /proc/*/syscall
// reports it.
const sysFutex = unix.SYS_FUTEX

// GroupFutexWaits groups the threads blocked in futex(2) by address and
// names each address with sym (nil: unnamed). Groups come out with the most
// waiters first.
func GroupFutexWaits(threads []Thread, sym *Symbolizer) []FutexWait {
	by := map[uint64]*FutexWait{}
	// The first waiter's operation and expected value classify the address.
	type opVal struct{ op, val uint64 }
	first := map[uint64]opVal{}
	for i := range threads {
		t := &threads[i]
		if t.Syscall != sysFutex || !t.Sleeping() {
			continue
		}
		addr, op := t.SyscallArgs[0], t.SyscallArgs[1]
		cmd := op & futexCmdMask
		if cmd != futexWait && cmd != futexWaitBitset && cmd != futexLockPI && cmd != futexLockPI2 && cmd != futexWaitRequeuePI {
			continue // wakes and requeues do not block
		}
		fw := by[addr]
		if fw == nil {
			fw = &FutexWait{Address: addr, Op: futexOpName(op), Location: Location{Address: addr}}
			by[addr] = fw
			first[addr] = opVal{op, t.SyscallArgs[2]}
		}
		fw.TIDs = append(fw.TIDs, t.TID)
	}
	if len(by) == 0 {
		return nil
	}
	out := make([]FutexWait, 0, len(by))
	for addr, fw := range by {
		if sym != nil {
			if loc, err := sym.Resolve(addr); err == nil {
				fw.Location = loc
			}
		}
		ov := first[addr]
		fw.Kind = classifyFutex(ov.op, ov.val, fw.Location)
		sort.Ints(fw.TIDs)
		out = append(out, *fw)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].TIDs) != len(out[j].TIDs) {
			return len(out[i].TIDs) > len(out[j].TIDs)
		}
		return out[i].Address < out[j].Address
	})
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
		return (cmd == futexWait || cmd == futexWaitBitset) && a[3] != 0 && classifyFutex(a[1], a[2], Location{}) != FutexLock
	case sysEpollWait, unix.SYS_EPOLL_PWAIT:
		return int32(a[3]) >= 0 // timeout in ms; -1 waits forever
	case sysPoll:
		return int32(a[2]) >= 0
	case unix.SYS_PPOLL:
		return a[2] != 0 // a pointer to the timeout: NULL waits forever
	case unix.SYS_PSELECT6, sysSelect:
		return a[4] != 0
	}
	return false
}
