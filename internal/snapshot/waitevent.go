package snapshot

import (
	"time"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// WaitEvent is one wait the JVM measured itself (Java Flight Recorder:
// jdk.JavaMonitorEnter, jdk.JavaMonitorWait, jdk.ThreadPark,
// jdk.VirtualThreadPinned), with its exact duration. Where a dump shows a
// wait at an instant, a WaitEvent says how long it lasted and, for a
// monitor, who held it before. They arrive in batches on Snapshot.Waits
// (a live run's new recording data, or a slice of a .jfr file) and feed the
// same lock table as the dumps.
type WaitEvent struct {
	// Kind is the wait kind of the wait model (threaddump.WaitKind):
	// "monitor" for a monitor enter, "wait" for Object.wait, and for a park
	// "synchronizer" (a lock), "condition" or "future" by the blocker's
	// class; "pinned" for a virtual thread pinned to its carrier.
	Kind string
	// Event is the JFR event type, e.g. "jdk.JavaMonitorEnter".
	Event    string
	Start    time.Time
	Duration time.Duration
	// Thread is the waiting thread: its Java name, Java id and OS id (the
	// Linux tid, which joins with /proc); zero values when unknown.
	Thread       string
	JavaThreadID int64
	OSThreadID   int64
	// Class is the monitor's (or the park blocker's) class, dots as
	// separators; Address the object's address, the lock's identity
	// within the recording (0 when the event has none).
	Class   string
	Address uint64
	// Other is the other thread the event names: the previous owner of a
	// monitor enter, the notifier of a wait; empty when none.
	Other string
	// Timeout is the wait's or park's timeout (0: none) and TimedOut says
	// whether a wait ended by it.
	Timeout  time.Duration
	TimedOut bool
	// Stack is the waiting thread's stack, top first (at most
	// MaxWaitEventFrames frames).
	Stack []threaddump.Frame
}

// MaxWaitEventFrames bounds the frames kept per WaitEvent.
const MaxWaitEventFrames = 64

// CPULoad is one of a JVM's recorded CPU load samples (jdk.CPULoad), for
// the timeline of a .jfr file: fractions of the machine's CPUs.
type CPULoad struct {
	Time                             time.Time
	JVMUser, JVMSystem, MachineTotal float64
}

// GCPause is one garbage collection the JVM recorded, for the timeline.
type GCPause struct {
	Start        time.Time
	Name, Cause  string
	SumOfPauses  time.Duration
	LongestPause time.Duration
}
