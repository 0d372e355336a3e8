package jfr

import (
	"math"
	"time"
)

// Event is one event of a recording. Start, Duration, Thread and Stack are
// filled for every event type that has them (startTime, duration,
// eventThread, stackTrace); other fields are read with the accessors, which
// resolve constant pool references on demand. An Event keeps its chunk's
// bytes (and the events allocated together with it, a few KB) alive until
// it is dropped; it stays valid after later calls to Next.
type Event struct {
	Type     string // e.g. "jdk.JavaMonitorEnter"
	Start    time.Time
	Duration time.Duration
	Thread   *Thread     // nil when the event has no thread
	Stack    *StackTrace // nil when the event has no stack trace

	typ  *typeDesc
	vals []value
	c    *chunk
}

// End is Start + Duration.
func (e *Event) End() time.Time { return e.Start.Add(e.Duration) }

// Fields lists the event's field names in recording order.
func (e *Event) Fields() []string {
	out := make([]string, len(e.typ.fields))
	for i := range e.typ.fields {
		out[i] = e.typ.fields[i].name
	}
	return out
}

func (e *Event) field(name string) (*fieldDesc, value, bool) {
	i := e.typ.field(name)
	if i < 0 || i >= len(e.vals) {
		return nil, value{}, false
	}
	return &e.typ.fields[i], e.vals[i], true
}

// Value returns a field as plain Go data: int64 (uint64 for unsigned
// fields), float64, bool, string, *Thread, *Class, *Method, *StackTrace,
// []any for arrays and map[string]any for other structures. Time fields come
// back as raw numbers here; use Time and Duration for them.
func (e *Event) Value(name string) (any, bool) {
	f, v, ok := e.field(name)
	if !ok {
		return nil, false
	}
	budget := genericBudget
	return e.c.generic(f, v, 0, &budget), true
}

// Int returns an integer (or boolean, as 0/1) field.
func (e *Event) Int(name string) (int64, bool) {
	_, v, ok := e.field(name)
	if !ok || v.kind != vInt {
		return 0, false
	}
	return v.i, true
}

// Float returns a float or double field.
func (e *Event) Float(name string) (float64, bool) {
	_, v, ok := e.field(name)
	if !ok || v.kind != vFloat {
		return 0, false
	}
	return math.Float64frombits(uint64(v.i)), true
}

// Bool returns a boolean field.
func (e *Event) Bool(name string) (bool, bool) {
	i, ok := e.Int(name)
	return i != 0, ok
}

// String returns a string field, or the text of a constant that wraps one
// string (e.g. a GC name or cause, a thread state).
func (e *Event) String(name string) (string, bool) {
	f, v, ok := e.field(name)
	if !ok || v.kind == vInt || v.kind == vFloat || v.kind == vArray {
		return "", false
	}
	return e.c.str(f, v, 0), true
}

// ThreadField returns a java.lang.Thread field such as previousOwner; nil
// when the field is missing or null.
func (e *Event) ThreadField(name string) *Thread {
	f, v, ok := e.field(name)
	if !ok || f.typ.name != "java.lang.Thread" {
		return nil
	}
	return e.c.thread(f.typ, v)
}

// ClassField returns a java.lang.Class field such as monitorClass.
func (e *Event) ClassField(name string) *Class {
	f, v, ok := e.field(name)
	if !ok || f.typ.name != "java.lang.Class" {
		return nil
	}
	return e.c.class(f.typ, v)
}

// Duration returns a field annotated as a time span, converted to a
// time.Duration whatever its unit. Sentinels such as Long.MIN_VALUE stay at
// the extremes of time.Duration.
func (e *Event) DurationField(name string) (time.Duration, bool) {
	f, v, ok := e.field(name)
	if !ok || v.kind != vInt {
		return 0, false
	}
	switch f.unit {
	case spanTicks:
		if v.i == math.MinInt64 || v.i == math.MaxInt64 {
			return time.Duration(v.i), true
		}
		return time.Duration(e.c.ticksToNanos(v.i)), true
	case spanNanos:
		return time.Duration(v.i), true
	case spanMicros:
		return time.Duration(clampMul(v.i, 1e3)), true
	case spanMillis:
		return time.Duration(clampMul(v.i, 1e6)), true
	case spanSeconds:
		return time.Duration(clampMul(v.i, 1e9)), true
	}
	return 0, false
}

// Time returns a field annotated as a timestamp. ok is false for missing
// fields and for the JDK's "no time" sentinels (values <= 0 in milliseconds
// since the epoch).
func (e *Event) Time(name string) (time.Time, bool) {
	f, v, ok := e.field(name)
	if !ok || v.kind != vInt {
		return time.Time{}, false
	}
	switch f.unit {
	case stampTicks:
		return e.c.ticksToTime(v.i), true
	case stampMillis:
		if v.i <= 0 || v.i == math.MaxInt64 {
			return time.Time{}, false
		}
		return time.UnixMilli(v.i).UTC(), true
	}
	return time.Time{}, false
}

func (e *Event) uaddr(name string) uint64 {
	i, _ := e.Int(name)
	return uint64(i)
}

// MonitorEnter is a jdk.JavaMonitorEnter event: a thread waited Duration to
// enter a synchronized block or method.
type MonitorEnter struct {
	MonitorClass  *Class
	PreviousOwner *Thread // the thread that held the monitor last, if known
	Address       uint64  // of the monitor object; identity of the lock
}

// MonitorEnter returns the lock fields of a jdk.JavaMonitorEnter event.
func (e *Event) MonitorEnter() (MonitorEnter, bool) {
	if e.Type != "jdk.JavaMonitorEnter" {
		return MonitorEnter{}, false
	}
	return MonitorEnter{
		MonitorClass:  e.ClassField("monitorClass"),
		PreviousOwner: e.ThreadField("previousOwner"),
		Address:       e.uaddr("address"),
	}, true
}

// MonitorWait is a jdk.JavaMonitorWait event: Object.wait() lasting Duration.
type MonitorWait struct {
	MonitorClass *Class
	Notifier     *Thread       // nil when the wait timed out or was interrupted
	Timeout      time.Duration // 0: wait() without a timeout
	TimedOut     bool
	Address      uint64
}

// MonitorWait returns the fields of a jdk.JavaMonitorWait event.
func (e *Event) MonitorWait() (MonitorWait, bool) {
	if e.Type != "jdk.JavaMonitorWait" {
		return MonitorWait{}, false
	}
	w := MonitorWait{
		MonitorClass: e.ClassField("monitorClass"),
		Notifier:     e.ThreadField("notifier"),
		Address:      e.uaddr("address"),
	}
	w.Timeout, _ = e.DurationField("timeout")
	w.TimedOut, _ = e.Bool("timedOut")
	return w, true
}

// ThreadPark is a jdk.ThreadPark event: LockSupport.park lasting Duration
// (j.u.c. locks, conditions, futures ...).
type ThreadPark struct {
	ParkedClass *Class        // class of the blocker object, nil without one
	Timeout     time.Duration // <= 0: no timeout
	Until       time.Time     // zero unless parkUntil was used
	Address     uint64        // of the blocker object
}

// ThreadPark returns the fields of a jdk.ThreadPark event.
func (e *Event) ThreadPark() (ThreadPark, bool) {
	if e.Type != "jdk.ThreadPark" {
		return ThreadPark{}, false
	}
	p := ThreadPark{ParkedClass: e.ClassField("parkedClass"), Address: e.uaddr("address")}
	p.Timeout, _ = e.DurationField("timeout")
	p.Until, _ = e.Time("until")
	return p, true
}

// ThreadDumpText returns the text of a jdk.ThreadDump event, a thread dump
// in the format of jcmd Thread.print.
func (e *Event) ThreadDumpText() (string, bool) {
	if e.Type != "jdk.ThreadDump" {
		return "", false
	}
	return e.String("result")
}

// GarbageCollection is a jdk.GarbageCollection event; Duration is the
// whole collection.
type GarbageCollection struct {
	GCID         int64
	Name         string // e.g. "G1New", "SerialOld"
	Cause        string // e.g. "Allocation Failure"
	SumOfPauses  time.Duration
	LongestPause time.Duration
}

// GarbageCollection returns the fields of a jdk.GarbageCollection event.
func (e *Event) GarbageCollection() (GarbageCollection, bool) {
	if e.Type != "jdk.GarbageCollection" {
		return GarbageCollection{}, false
	}
	g := GarbageCollection{}
	g.GCID, _ = e.Int("gcId")
	g.Name, _ = e.String("name")
	g.Cause, _ = e.String("cause")
	g.SumOfPauses, _ = e.DurationField("sumOfPauses")
	g.LongestPause, _ = e.DurationField("longestPause")
	return g, true
}

// CPULoad is a jdk.CPULoad event; the loads are fractions of all CPUs
// (0..1).
type CPULoad struct {
	JVMUser, JVMSystem, MachineTotal float64
}

// CPULoad returns the fields of a jdk.CPULoad event.
func (e *Event) CPULoad() (CPULoad, bool) {
	if e.Type != "jdk.CPULoad" {
		return CPULoad{}, false
	}
	l := CPULoad{}
	l.JVMUser, _ = e.Float("jvmUser")
	l.JVMSystem, _ = e.Float("jvmSystem")
	l.MachineTotal, _ = e.Float("machineTotal")
	return l, true
}

// ExecutionSample is a jdk.ExecutionSample (or jdk.NativeMethodSample)
// event: a periodic sample of a thread's stack, in Event.Stack.
type ExecutionSample struct {
	Thread *Thread
	State  string // e.g. "STATE_RUNNABLE"
}

// ExecutionSample returns the fields of a jdk.ExecutionSample or
// jdk.NativeMethodSample event.
func (e *Event) ExecutionSample() (ExecutionSample, bool) {
	if e.Type != "jdk.ExecutionSample" && e.Type != "jdk.NativeMethodSample" {
		return ExecutionSample{}, false
	}
	s := ExecutionSample{Thread: e.ThreadField("sampledThread")}
	s.State, _ = e.String("state")
	return s, true
}
