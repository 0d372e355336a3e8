package procfs

import (
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// Thread is one kernel thread of a process at one instant. Counters are
// cumulative since the thread started.
type Thread struct {
	TID int
	// StartTime (clock ticks since boot) tells a reused TID from the thread
	// that had it before: a thread's identity is TID plus StartTime.
	StartTime uint64
	Name      string
	// State is the kernel's one-letter state: R running, S sleeping,
	// D uninterruptible, T stopped, Z zombie, I idle.
	State     byte
	UserCPU   time.Duration
	SystemCPU time.Duration
	// Voluntary switches: the thread blocked; involuntary: it was preempted
	// while it could have run.
	Voluntary   uint64
	Involuntary uint64
	// RunTime is time on CPU and RunQueueWait time runnable but waiting for
	// a CPU (schedstat); Timeslices counts the times it was scheduled in.
	RunTime      time.Duration
	RunQueueWait time.Duration
	Timeslices   uint64
	// Processor is the CPU the thread last ran on.
	Processor int
	// Policy is the scheduling policy (SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3,
	// IDLE 5, DEADLINE 6); RTPriority its real-time priority; Nice its nice
	// value.
	Policy     int
	RTPriority int
	Nice       int
	// CPUsAllowed is the affinity as the kernel lists it ("0-3,8").
	CPUsAllowed string
	// WChan is the kernel function a sleeping thread waits in ("" when
	// running or unreadable).
	WChan string
	// Syscall is the system call number a blocked thread is in,
	// SyscallRunning when it runs, SyscallNone when it is blocked outside a
	// system call, SyscallUnknown when not read or unreadable. SyscallArgs
	// are its first five arguments (for futex: address, operation, value,
	// timeout).
	Syscall     int
	SyscallArgs [5]uint64
	// SyscallSP and SyscallPC are the user stack pointer and program
	// counter of a thread blocked in a system call (the last two fields
	// of /proc/<tid>/syscall); zero otherwise. The stack pointer tells
	// which thread's stack a futex lies on.
	SyscallSP, SyscallPC uint64
	// Stack is the thread's user stack, innermost frame first, unwound
	// from SyscallPC and SyscallSP while it is blocked in a system call
	// (Unwinder); nil when not unwound.
	Stack []symbolize.StackFrame
	// PID is the process the thread belongs to, when a sample covers a
	// tree of processes; 0 in a sample of one process (its target's).
	PID int
	// Events says what the epoll set a thread blocked in epoll_wait
	// waits on watches (EpollSet); EventsUnread otherwise.
	Events EventSet
	// Locked is the file a thread blocked in a file-lock call waits to
	// lock (FileLockWait, LockedFileOf); zero otherwise.
	Locked LockedFile
}

// Markers of Thread.Syscall.
const (
	SyscallRunning = -1
	SyscallUnknown = -2
	SyscallNone    = -3
)

// CPU is user plus system CPU time.
func (t *Thread) CPU() time.Duration { return t.UserCPU + t.SystemCPU }

// Sleeping reports whether the thread is blocked (interruptibly or not).
func (t *Thread) Sleeping() bool { return t.State == 'S' || t.State == 'D' }

// UnwindBlocked sets the Stack of each thread blocked in a system call
// whose stack pointer and program counter are known, and clears the
// others'. It reads the target's maps once for the sweep.
func UnwindBlocked(u *symbolize.Unwinder, threads []Thread, mem symbolize.StackMemory) {
	u.ReadMaps()
	for i := range threads {
		t := &threads[i]
		t.Stack = nil
		if t.Syscall >= 0 && t.SyscallPC != 0 && t.SyscallSP != 0 {
			t.Stack = u.Unwind(symbolize.Regs{PC: t.SyscallPC, SP: t.SyscallSP}, mem, symbolize.MaxStackFrames)
		}
	}
}
