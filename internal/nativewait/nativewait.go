// Package nativewait is the wait model for native threads: from what a
// blocked thread's system call and unwound stack say, what kind of thing
// it waits for, where its own code waits (the wait site, the unit a user
// reasons about), and whether the wait is idle, contention, a sleep or
// I/O. It is the native counterpart of pkg/threaddump's wait rule for Java
// and states the same rule for a native stack:
//
// A wait is idle when no frame of work lies between the thread's run loop
// and the wait: below the waiting machinery, the program's frames are at
// most its start routine and one loop it calls, or functions of one C++
// class. Any deeper wait is called from inside work and is contention. A
// thread queued on a mutex, an rwlock or a file lock (flock, fcntl's
// F_SETLKW) waits for the thread or process that holds it and is
// contention wherever it is (unless its holder holds the mutex or file
// lock across its own idle wait for input: a gate, which the aggregator
// tells from the holder's stack and the mutex's memory or /proc/locks,
// analysis.openGates).
//
// The rule reads three things of a stack, each defined by the data below
// and nothing else: which frames are the waiting machinery (the top), which
// are thread-start plumbing (the bottom), and which C++ class a frame's
// function belongs to.
package nativewait

import (
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"golang.org/x/sys/unix"
)

// Verdicts, the same words as the Java side's (analysis.Verdict*).
const (
	Contention = "contention"
	Idle       = "idle"
	Sleep      = "sleep"
	IO         = "io"
)

// Kind is the kind of primitive a thread waits on.
type Kind string

// Primitive kinds.
const (
	Mutex     Kind = "mutex"
	RWLock    Kind = "rwlock"
	Condition Kind = "condition"
	Semaphore Kind = "semaphore"
	// Futex is a raw futex: the program's own protocol on a futex word,
	// reached through no primitive ctprof can name.
	Futex Kind = "futex"
	// FileLock is a lock on a file (flock, fcntl's F_SETLKW, lockf): its
	// waiters queue behind whoever holds it, another process or another
	// open file description.
	FileLock Kind = "filelock"
)

// Queues reports a kind whose waiters queue behind a holder: contention
// wherever they wait.
func (k Kind) Queues() bool { return k == Mutex || k == RWLock || k == FileLock }

// Thread is what the rule reads of one blocked thread.
type Thread struct {
	// State is the kernel's state letter ('S', 'D', ...).
	State byte
	// Syscall is the system call it blocks in (procfs.Thread.Syscall:
	// negative when unknown or not in one), Args its arguments.
	Syscall int
	Args    [5]uint64
	// WChan is the kernel function it sleeps in, "" when unknown.
	WChan string
	// FutexKind is the sweep's class of its futex wait by the operation,
	// the expected value and the word's symbol (procfs), "" when the
	// thread is not in futex(2).
	FutexKind procfs.FutexKind
	// Stack is its unwound user stack, innermost first; nil when not
	// unwound (no permission, or it woke while being read).
	Stack []symbolize.StackFrame
	// FromJava says the stack is a JVM thread's native part, cut where it
	// returns into Java code: the native code runs inside the Java
	// thread's work, not as a loop of its own.
	FromJava bool
	// Events says what the epoll set of a thread blocked in epoll_wait
	// watches (procfs.EpollSet): a set of only the program's own
	// wake-ups is ruled like a condition.
	Events procfs.EventSet
	// LockedPath is the file a thread blocked in a file-lock call waits
	// to lock (procfs.LockedFile.Path), "" when unknown.
	LockedPath string
	// Trampolines are the program's own thread-start frames, by name:
	// frames at the bottom of threads that go on into different start
	// routines (Trampolines.Note learns them from a process's stacks).
	Trampolines *Trampolines
}

// Wait is the rule's verdict on one thread, with what it rests on.
type Wait struct {
	Verdict string
	// Kind is the primitive of a futex or semaphore wait; "" otherwise.
	Kind Kind
	// Site is where the thread's own code waits: the first frames of the
	// program above the waiting machinery ("lock_wait ← lock_rec_lock"),
	// "" without a stack. Module is the module of its first frame.
	Site, Module string
	// SiteLine is the source position of the site's first frame
	// ("lock.c:42") where its binary has a line table, "" otherwise.
	SiteLine string
	// SitePCs are the program counters of the site's frames: the site in
	// one process whatever its frames are named (a binary's names can
	// arrive mid-run, from debuginfod).
	SitePCs [siteFrames]uint64
	// Entry is the thread's start routine (its outermost frame of the
	// program's code), "" without a stack.
	Entry string
	// Reason says in a sentence why the wait was classed so.
	Reason string
}

// siteFrames is how many of the program's frames a wait site names: the
// function that waits and its caller, enough to tell one call path from
// another.
const siteFrames = 2

// Classify applies the rule to one blocked thread. A thread that is
// running, or whose state says it is not blocked, has no wait: Verdict
// is "".
func Classify(t Thread) Wait {
	if t.State != 'S' && t.State != 'D' {
		return Wait{}
	}
	call := callOf(t.Syscall)
	var w Wait
	var sh shape
	if len(t.Stack) > 0 {
		sh = readShape(t.Stack, t.Trampolines)
		w.Site, w.Module, w.Entry, w.SiteLine, w.SitePCs = sh.site, sh.module, sh.entry, sh.siteLine, sh.sitePCs
	}
	if _, ok := procfs.FileLockWait(t.Syscall, t.Args); ok {
		call = callFileLock
	}
	switch call {
	case callFutex, callSemop:
		w.Kind = kindOf(sh, t, call)
		w.Verdict, w.Reason = futexVerdict(w.Kind, sh, t)
	case callFileLock:
		// Whatever the functions around it are named for (a wrapper
		// named lock_file reads as a mutex's), the kernel queues it on a
		// file's lock.
		w.Kind = FileLock
		w.Verdict, w.Reason = fileLockVerdict(sh, t)
	case callSleep:
		w.Verdict, w.Reason = Sleep, "in "+syscallName(t.Syscall)
	case callEvent:
		if procfs.EpollWait(t.Syscall) && t.Events == procfs.EventsOwn {
			w.Kind = sh.kind
			if w.Kind == "" || w.Kind == Futex {
				w.Kind = Condition
			}
			w.Verdict, w.Reason = ownEventsVerdict(w.Kind, sh, t)
			break
		}
		w.Verdict, w.Reason = eventVerdict(sh, t)
	case callPoll:
		if t.Args[1] != 1 {
			w.Verdict, w.Reason = eventVerdict(sh, t)
			break
		}
		w.Verdict, w.Reason = ioVerdict(sh, t) // one descriptor: as a read of it
	case callNone:
		w.Verdict, w.Reason = IO, "blocked outside a system call (a page fault or the kernel's own wait"+wchanClause(t.WChan)+")"
	case callUnknown:
		w.Verdict, w.Reason = unknownVerdict(t)
	default:
		w.Verdict, w.Reason = ioVerdict(sh, t)
	}
	return w
}

// ioVerdict is the rule for a wait on one descriptor or device: I/O,
// unless the run loop itself waits (its next input).
func ioVerdict(sh shape, t Thread) (string, string) {
	if sh.idle && t.State == 'S' {
		return Idle, "in " + syscallName(t.Syscall) + " at the top of its run loop " + sh.loopName() + ": waits for its next input"
	}
	return IO, "in " + syscallName(t.Syscall) + ": waits for I/O"
}

// fileLockVerdict is the rule for a wait on a file lock: queued behind
// its holder, contention wherever it is, as a mutex's waiter.
func fileLockVerdict(sh shape, t Thread) (string, string) {
	r := "queued on a file lock (" + syscallName(t.Syscall) + ") another process or descriptor holds"
	if t.LockedPath != "" {
		r += ", on " + t.LockedPath
	}
	if sh.site != "" {
		r += ", at " + sh.site
	}
	return Contention, r
}

// futexVerdict is the rule for a wait on a futex or semaphore.
func futexVerdict(k Kind, sh shape, t Thread) (string, string) {
	what := kindWords(k)
	if k.Queues() {
		r := "queued on " + what + " another thread holds"
		if sh.site != "" {
			r += ", at " + sh.site
		}
		return Contention, r
	}
	if t.FromJava && sh.site != "" {
		return Contention, "waits on " + what + " at " + sh.site + ", in native code a Java method called: inside the thread's work"
	}
	if !sh.ok {
		if t.FutexKind == procfs.FutexLock {
			return Contention, "queued on a locked futex word (the kernel's view: no stack)"
		}
		return Idle, "waits on " + what + "; without its stack ctprof cannot tell a wait for work from one inside work (the kernel's view: " + futexOpWords(t) + ")"
	}
	if sh.idle {
		if sh.site == "" {
			return Idle, "waits on " + what + " in the runtime's own thread, with no frame of the program"
		}
		return Idle, "waits on " + what + " at the top of its run loop " + sh.loopName() + ": no frame of work between the loop and the wait"
	}
	return Contention, "waits on " + what + " inside work: " + sh.work + " runs between its loop " + sh.loopName() + " and the wait at " + sh.site
}

// eventVerdict is the rule for a wait for any of many events (epoll,
// select, a poll of several descriptors, accept, a signal): an event
// loop's, or a listener's, wait for its next event, however deep its
// dispatch layers are. A wait on one descriptor is I/O (the default case
// of Classify).
func eventVerdict(sh shape, t Thread) (string, string) {
	name := syscallName(t.Syscall)
	if sh.site != "" {
		return Idle, "in " + name + " at " + sh.site + ": an event loop waiting for its next event"
	}
	return Idle, "in " + name + ": waits for its next event"
}

// ownEventsVerdict is the rule for a wait on an epoll set of the
// program's own wake-ups only (pipes, eventfds, signalfds, timers): no
// client or device can end it, only another thread or process of the
// program, or the clock. With a timeout it is a pause until the next
// period or an earlier wake-up (sleep: PostgreSQL's background writer
// between rounds); without one it waits for another part of the program,
// as a condition does: contention inside work (a backend waiting for a
// row lock in ProcSleep), idle at the top of its loop.
func ownEventsVerdict(k Kind, sh shape, t Thread) (string, string) {
	name := syscallName(t.Syscall)
	if epollTimed(t) {
		r := "in " + name + " with a timeout, on the program's own wake-ups only (no socket or file in its set): a pause until its next period or an earlier wake-up"
		if sh.site != "" {
			r += ", at " + sh.site
		}
		return Sleep, r
	}
	v, r := futexVerdict(k, sh, t)
	return v, "in " + name + " on the program's own wake-ups only (no socket or file in its set, no timeout): " + r
}

// epollTimed says an epoll wait has a timeout: a non-negative one in
// milliseconds (epoll_wait, epoll_pwait: the fourth argument, an int), or
// a timespec (epoll_pwait2: a pointer, NULL for none).
func epollTimed(t Thread) bool {
	if t.Syscall == unix.SYS_EPOLL_PWAIT2 {
		return t.Args[3] != 0
	}
	return int32(t.Args[3]) >= 0
}

// unknownVerdict classes a blocked thread whose system call could not be
// read, by its wait channel.
func unknownVerdict(t Thread) (string, string) {
	switch {
	case strings.Contains(t.WChan, "futex"):
		return Idle, "waits in the kernel's " + t.WChan + "; its system call and stack could not be read (no permission), so it is not counted as contention"
	case t.State == 'D':
		return IO, "in uninterruptible sleep" + wchanClause(t.WChan)
	}
	return Idle, "its system call could not be read (no permission)" + wchanClause(t.WChan)
}

func wchanClause(w string) string {
	if w == "" || w == "0" {
		return ""
	}
	return " in the kernel's " + w
}

// kindWords names a kind in a sentence.
func kindWords(k Kind) string {
	switch k {
	case Mutex:
		return "a mutex"
	case RWLock:
		return "an rwlock"
	case Condition:
		return "a condition"
	case Semaphore:
		return "a semaphore"
	case FileLock:
		return "a file lock"
	}
	return "a futex"
}

func futexOpWords(t Thread) string {
	if t.Syscall != unix.SYS_FUTEX {
		return syscallName(t.Syscall)
	}
	return procfs.FutexOpName(t.Args[1])
}

// kindOf names the primitive: from the machinery's function names where the
// stack has them (pthread_mutex_lock, pthread_cond_wait, sem_wait,
// std::condition_variable::wait, a program's own wrapper named for its
// primitive), else from the futex operation and the word's symbol as the
// sweep classed it.
func kindOf(sh shape, t Thread, call callClass) Kind {
	if sh.kind != "" {
		return sh.kind
	}
	if call == callSemop {
		return Semaphore
	}
	switch t.FutexKind {
	case procfs.FutexLock:
		return Mutex
	case procfs.FutexCondition:
		return Condition
	}
	return Futex
}

// callClass sorts system calls by what a thread blocked in one waits for.
type callClass int

const (
	callOther    callClass = iota
	callFutex              // another thread's futex wake
	callSemop              // a System V semaphore
	callFileLock           // a file's lock (flock, fcntl F_SETLKW)
	callSleep              // time
	callEvent              // any of many events: epoll, select, accept, signals
	callPoll               // poll: many descriptors (events) or one (I/O)
	callNone               // blocked outside a system call
	callUnknown            // not read
)

func callOf(nr int) callClass {
	switch nr {
	case procfs.SyscallNone:
		return callNone
	case procfs.SyscallUnknown, procfs.SyscallRunning:
		return callUnknown
	case unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV:
		return callFutex
	case unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP:
		return callSemop
	case unix.SYS_NANOSLEEP, unix.SYS_CLOCK_NANOSLEEP:
		return callSleep
	case unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2, unix.SYS_SELECT, unix.SYS_PSELECT6,
		unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGSUSPEND, unix.SYS_PAUSE, unix.SYS_MSGRCV:
		return callEvent
	case unix.SYS_POLL, unix.SYS_PPOLL:
		return callPoll
	}
	return callOther
}

// SyscallName names a system call for a reason (the common waits by
// name, others by number).
func SyscallName(nr int) string { return syscallName(nr) }

// syscallName names a system call for a reason.
func syscallName(nr int) string {
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return "system call " + strconv.Itoa(nr)
}

var syscallNames = map[int]string{
	unix.SYS_READ: "read", unix.SYS_WRITE: "write", unix.SYS_PREAD64: "pread64", unix.SYS_PWRITE64: "pwrite64",
	unix.SYS_READV: "readv", unix.SYS_WRITEV: "writev", unix.SYS_FUTEX: "futex", unix.SYS_FUTEX_WAITV: "futex_waitv",
	unix.SYS_NANOSLEEP: "nanosleep", unix.SYS_CLOCK_NANOSLEEP: "clock_nanosleep", unix.SYS_EPOLL_WAIT: "epoll_wait",
	unix.SYS_EPOLL_PWAIT: "epoll_pwait", unix.SYS_EPOLL_PWAIT2: "epoll_pwait2", unix.SYS_POLL: "poll", unix.SYS_PPOLL: "ppoll",
	unix.SYS_SELECT: "select", unix.SYS_PSELECT6: "pselect6", unix.SYS_ACCEPT: "accept", unix.SYS_ACCEPT4: "accept4",
	unix.SYS_RECVFROM: "recvfrom", unix.SYS_SENDTO: "sendto", unix.SYS_RECVMSG: "recvmsg", unix.SYS_SENDMSG: "sendmsg",
	unix.SYS_CONNECT: "connect", unix.SYS_FSYNC: "fsync", unix.SYS_FDATASYNC: "fdatasync", unix.SYS_WAIT4: "wait4",
	unix.SYS_WAITID: "waitid", unix.SYS_IO_GETEVENTS: "io_getevents", unix.SYS_IO_PGETEVENTS: "io_pgetevents",
	unix.SYS_IO_URING_ENTER: "io_uring_enter", unix.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait", unix.SYS_RT_SIGSUSPEND: "rt_sigsuspend",
	unix.SYS_PAUSE: "pause", unix.SYS_SEMOP: "semop", unix.SYS_SEMTIMEDOP: "semtimedop", unix.SYS_MSGRCV: "msgrcv",
	unix.SYS_OPENAT: "openat", unix.SYS_FLOCK: "flock", unix.SYS_FCNTL: "fcntl", unix.SYS_SCHED_YIELD: "sched_yield",
	unix.SYS_MMAP: "mmap", unix.SYS_MUNMAP: "munmap", unix.SYS_FTRUNCATE: "ftruncate", unix.SYS_FSTAT: "fstat",
	unix.SYS_LSEEK: "lseek", unix.SYS_CLOSE: "close", unix.SYS_UNLINK: "unlink", unix.SYS_RENAME: "rename",
}
