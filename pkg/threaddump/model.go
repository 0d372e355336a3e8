// Package threaddump parses Java thread dumps into a typed model.
//
// It reads what people actually have: HotSpot text as printed by jstack,
// `jcmd <pid> Thread.print` and `kill -3` (also embedded in logs, several per
// file), `jcmd <pid> Thread.dump_to_file` in text and JSON, and OpenJ9/IBM
// javacore files. It never panics on bad input: unknown lines are counted and
// kept for diagnostics, a truncated dump yields what was parsed plus a warning.
//
// The package has no other ctprof imports so it can be used as a library.
package threaddump

import (
	"strings"
	"time"
)

// Format names the textual form a dump was read from.
type Format string

// The formats the parser understands.
const (
	FormatHotSpot        Format = "hotspot"          // jstack, jcmd Thread.print, kill -3
	FormatThreadDumpText Format = "thread-dump-text" // jcmd Thread.dump_to_file (plain text, JDK 21+)
	FormatThreadDumpJSON Format = "thread-dump-json" // jcmd Thread.dump_to_file -format=json (JDK 21+)
	FormatJavacore       Format = "openj9-javacore"  // OpenJ9 / IBM javacore
)

// State is a java.lang.Thread.State. VM-internal threads have none.
type State string

// Java thread states.
const (
	StateNone         State = ""
	StateNew          State = "NEW"
	StateRunnable     State = "RUNNABLE"
	StateBlocked      State = "BLOCKED"
	StateWaiting      State = "WAITING"
	StateTimedWaiting State = "TIMED_WAITING"
	StateTerminated   State = "TERMINATED"
)

// Dump is one thread dump: one point in time of one JVM.
type Dump struct {
	Format Format
	// Time is when the dump was taken, from the timestamp line before the
	// header; zero when the dump does not say.
	Time time.Time
	// VM is the header's VM description, e.g.
	// "OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing)".
	VM string
	// PID is the process id when the dump names it (jcmd preamble, JSON).
	PID int

	Threads []Thread
	// Deadlocks are the ones the JVM itself reported in the dump.
	Deadlocks []Deadlock

	// JNIGlobalRefs and JNIWeakRefs come from the trailer; -1 when absent.
	JNIGlobalRefs int
	JNIWeakRefs   int

	// UnknownLines counts lines inside the dump that the parser did not
	// understand; UnknownSamples keeps the first few for diagnostics.
	UnknownLines   int
	UnknownSamples []SourceLine
	// Warnings says what looked wrong (truncation, odd structure).
	Warnings []string

	// StartLine is the 1-based line of the input where the dump starts.
	StartLine int
}

// SourceLine is a line of input with its 1-based line number.
type SourceLine struct {
	Line int
	Text string
}

// maxUnknownSamples bounds the diagnostics kept per dump.
const maxUnknownSamples = 20

// Thread is one thread of a dump.
type Thread struct {
	Name string
	// ID is the Java thread id ("#12"); 0 when the dump does not give one
	// (VM-internal threads, JDK 6-8 dumps).
	ID int64
	// OSThreadID is the Linux tid (or the platform's native id): nid, or
	// "[os tid]" on JDK 19+; 0 when unknown.
	OSThreadID int64
	Daemon     bool
	// Priority and OSPriority as printed; 0 when absent.
	Priority   int
	OSPriority int
	// CPU and Elapsed come from cpu= and elapsed= (JDK 11+); HasCPU says
	// whether the dump printed them.
	CPU     time.Duration
	Elapsed time.Duration
	HasCPU  bool
	// Allocated (bytes) and DefinedClasses come from JDK 25 headers; -1 absent.
	Allocated      int64
	DefinedClasses int64
	// NativeAddress is the JVM's thread pointer (tid=), as printed.
	NativeAddress string
	// Status is the header's status words: "runnable", "waiting for monitor
	// entry", "in Object.wait()", "waiting on condition", "sleeping".
	Status string
	State  State
	// StateDetail is what follows the state: "on object monitor", "parking",
	// "sleeping".
	StateDetail string

	// Virtual marks a virtual thread (Thread.dump_to_file lists them).
	Virtual bool
	// CarryingVirtual is the id of the virtual thread a carrier thread runs
	// ("Carrying virtual thread #N" / "Mounted virtual thread #N"); 0 if none.
	CarryingVirtual int64

	// Frames is the stack, top frame first. It is read-only: threads with
	// identical stacks in one parsed input may share one slice (the HotSpot
	// parser keeps each distinct stack once). Its cap equals its len, so an
	// append makes a copy.
	Frames []Frame
	// Locks are the lock lines of the stack in order, each tied to the frame
	// it was printed under.
	Locks []LockEvent
	// OwnableSynchronizers lists "Locked ownable synchronizers" (printed with
	// jstack -l / Thread.print -l); nil when the dump did not print the section.
	OwnableSynchronizers []Lock
	// HasSynchronizerSection says whether the section was printed at all, so
	// "holds none" can be told from "unknown".
	HasSynchronizerSection bool

	// CarrierID is the Java id of the platform thread a mounted virtual
	// thread runs on (Thread.dump_to_file JSON); 0 if none or unknown.
	CarrierID int64
	// Container is the thread container Thread.dump_to_file lists the
	// thread under ("<root>", "ForkJoinPool-1/…"); empty for other formats.
	Container string
	// ParkBlockerOwner is the Java id of the thread that owns the
	// synchronizer this thread parks on, when the dump says so
	// (Thread.dump_to_file JSON); 0 otherwise.
	ParkBlockerOwner int64

	// Mounted is the virtual thread a carrier runs, when the dump prints its
	// stack separately ("Mounted virtual thread #N", JDK 25); nil otherwise.
	Mounted *Thread

	// Line is the 1-based input line of the thread's header.
	Line int

	// Suspect marks a thread read inside the text of another thread's name
	// that may run on over it: HotSpot prints names raw, so a name can hold
	// whole forged entries, and where the text cannot tell where the name
	// ends the parser keeps the entries but marks them (Dump.Warnings says
	// which lines). Findings must not rest on suspect threads alone.
	Suspect bool
}

// VMInternal reports whether this is a JVM-internal thread (GC, compiler,
// VM thread) rather than a Java thread: it has neither a Java id nor a stack.
func (t *Thread) VMInternal() bool {
	return t.ID == 0 && len(t.Frames) == 0 && t.State == StateNone
}

// Frame is one stack frame.
type Frame struct {
	Class  string // fully qualified, dots as separators
	Method string
	// Module is "java.base@17.0.15" when printed; empty otherwise.
	Module string
	// File is the source file; empty for "Native Method" and "Unknown Source".
	File   string
	Line   int
	Native bool
}

// Function returns "Class.Method".
func (f Frame) Function() string { return f.Class + "." + f.Method }

// String renders the frame the way HotSpot prints it, without the module.
func (f Frame) String() string {
	var b strings.Builder
	b.Grow(len(f.Class) + len(f.Method) + len(f.File) + 16)
	b.WriteString(f.Class)
	b.WriteByte('.')
	b.WriteString(f.Method)
	b.WriteByte('(')
	switch {
	case f.Native:
		b.WriteString("Native Method")
	case f.File == "":
		b.WriteString("Unknown Source")
	default:
		b.WriteString(f.File)
		if f.Line > 0 {
			b.WriteByte(':')
			b.WriteString(itoa(f.Line))
		}
	}
	b.WriteByte(')')
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// LockAction is what a stack line says a thread does with a lock.
type LockAction uint8

// Lock actions, one per kind of lock line HotSpot prints.
const (
	// LockWaitingToLock: "- waiting to lock <a>": blocked entering a monitor.
	LockWaitingToLock LockAction = iota + 1
	// LockLocked: "- locked <a>": the frame entered the monitor.
	LockLocked
	// LockWaitingOn: "- waiting on <a>": inside Object.wait(), the monitor is released.
	LockWaitingOn
	// LockWaitingToRelock: "- waiting to re-lock in wait() <a>": notified,
	// blocked re-entering the monitor.
	LockWaitingToRelock
	// LockParking: "- parking to wait for <a>": LockSupport.park on a j.u.c.
	// synchronizer or condition.
	LockParking
	// LockEliminated: "- eliminated <a>": a lock the JIT removed; not held.
	LockEliminated
	// LockClassInit: "- waiting on the Class initialization monitor for C".
	LockClassInit
)

var lockActionNames = [...]string{
	LockWaitingToLock:   "waiting to lock",
	LockLocked:          "locked",
	LockWaitingOn:       "waiting on",
	LockWaitingToRelock: "waiting to re-lock",
	LockParking:         "parking to wait for",
	LockEliminated:      "eliminated",
	LockClassInit:       "waiting on class initialization",
}

func (a LockAction) String() string {
	if int(a) < len(lockActionNames) && lockActionNames[a] != "" {
		return lockActionNames[a]
	}
	return "unknown"
}

// Lock identifies a monitor or synchronizer object.
type Lock struct {
	// Address is the object's address normalised to lower-case hex with a
	// "0x" prefix ("0x00000007f48a7138"), or another identity the dump
	// gives (an identity hash in JSON dumps, "class-init:C" for class
	// initialization). Empty when the dump hides it ("owner is scalar replaced").
	Address string
	Class   string
}

// LockEvent is one lock line of a stack.
type LockEvent struct {
	Action LockAction
	Lock   Lock
	// Frame is the index into Thread.Frames of the frame the line follows.
	Frame int
	// Inferred marks a lock the line did not name: the object of "waiting
	// on <no object reference available>", taken from the monitor the
	// calling frame entered (see resolveHiddenWait).
	Inferred bool
}

// Deadlock is a cycle the JVM reported ("Found one Java-level deadlock").
type Deadlock struct {
	// Threads are the thread names in the order the JVM listed them.
	Threads []string
	// Edges say, per thread, which lock it waits for and who holds it.
	Edges []DeadlockEdge
	// Suspect marks a report read where a thread name may run on over it
	// (see Thread.Suspect): it may be forged, not the JVM's.
	Suspect bool
}

// HasSuspects reports whether the parser met thread names whose extent the
// text alone cannot fix (see Thread.Suspect). A caller that can see the
// live target can then parse again with ParseOptions to settle it.
func (d *Dump) HasSuspects() bool {
	for i := range d.Deadlocks {
		if d.Deadlocks[i].Suspect {
			return true
		}
	}
	for i := range d.Threads {
		if d.Threads[i].Suspect {
			return true
		}
	}
	return false
}

// DeadlockEdge is one "thread waits for lock held by thread" step.
type DeadlockEdge struct {
	Thread   string
	WaitsFor Lock
	// Synchronizer is true for an ownable synchronizer (j.u.c. lock),
	// false for a monitor.
	Synchronizer bool
	HeldBy       string
}
