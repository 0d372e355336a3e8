// Package jfrsnap turns Java Flight Recorder data into Snapshots: the
// waits a JVM measured itself (monitor enters, waits, parks, pinned virtual
// threads), its GC pauses, CPU load and thread dumps, in bounded batches.
// Both a .jfr file (internal/source) and a live run's recording
// (internal/sample) go through it.
package jfrsnap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/jfr"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// EventTypes are the event types a JFR recording is read for; the
// others are skipped by size without being decoded.
var EventTypes = []string{
	"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark",
	"jdk.VirtualThreadPinned", "jdk.ThreadDump", "jdk.GarbageCollection", "jdk.CPULoad",
	"jdk.JVMInformation",
}

// ProgramOf is the organization of the program's own code from the JVM's
// command (its main class, the first word of sun.rt.javaCommand or of
// jdk.JVMInformation's javaArguments); ok is false for a jar, whose main
// class the command does not name.
func ProgramOf(command string) (string, bool) {
	f := strings.Fields(command)
	if len(f) == 0 || strings.HasSuffix(f[0], ".jar") || strings.HasPrefix(f[0], "-") {
		return "", false
	}
	return threaddump.Organization(f[0]), true
}

// Magic starts every JFR chunk; inputs are told apart by content.
var Magic = []byte("FLR\x00")

// IsJFR reports whether head (the first bytes of an input) starts a JFR
// recording.
func IsJFR(head []byte) bool { return bytes.HasPrefix(head, Magic) }

// Options bound the batches a Reader returns.
type Options struct {
	// MaxEvents is the most waits and GC pauses per Snapshot (default
	// 4096).
	MaxEvents int
	// MaxSpan is the most recording time one Snapshot covers (default 1 s),
	// so the timeline keeps the recording's shape.
	MaxSpan time.Duration
	// MaxChunkSize bounds one chunk in memory (see jfr.Options).
	MaxChunkSize int64
	// Program is the organization of the program's own code
	// (threaddump.Dump.ProgramOrganization, "" for the default package)
	// when ProgramKnown, as a dump of the JVM told it. The reader also
	// learns it from the recording's own thread dumps and from the stacks
	// of its "main" thread.
	Program      string
	ProgramKnown bool
}

// Reader turns a JFR recording into Snapshots, streaming: it holds one
// chunk of the recording and one batch of waits at a time. Waits of the
// same batch are on Snapshot.Waits and GC pauses on Snapshot.GCPauses;
// each jdk.ThreadDump event becomes a Snapshot of its own with the parsed
// dump, in recording order with the batches around it.
type Reader struct {
	r      *jfr.Reader
	opts   Options
	source string

	batch     *snapshot.Snapshot
	batchFrom time.Time
	events    int
	last      time.Time // latest end of an event returned, so time never goes back
	pending   []*snapshot.Snapshot
	err       error

	// stacks caches converted stacks per chunk: the reader returns one
	// *jfr.StackTrace per constant within a chunk.
	chunk  int
	stacks map[*jfr.StackTrace][]threaddump.Frame

	// Observer counts the waits on the flight recorder's own locks,
	// dropped: the recorder takes them when a recording is dumped.
	Observer int
	// Idle counts the Object.wait and park events dropped because their
	// stack is a worker idle between tasks (the dumps' idle rule).
	Idle int
	// Dumps counts the jdk.ThreadDump events turned into dumps.
	Dumps int

	// program is the program's organization for the wait rule, "?" until
	// known.
	program string
}

// NewReader reads the recording in r; source names it in messages.
func NewReader(r io.Reader, source string, opts Options) *Reader {
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 4096
	}
	if opts.MaxSpan <= 0 {
		opts.MaxSpan = time.Second
	}
	program := opts.Program
	if !opts.ProgramKnown {
		program = "?"
	}
	return &Reader{
		r:       jfr.NewReader(r, jfr.Options{EventTypes: EventTypes, MaxChunkSize: opts.MaxChunkSize}),
		opts:    opts,
		source:  source,
		chunk:   -1,
		program: program,
	}
}

// Next returns the next Snapshot, io.EOF after the last. A damaged
// recording ends with its error after every Snapshot read before the damage.
func (j *Reader) Next() (*snapshot.Snapshot, error) {
	for len(j.pending) == 0 {
		if j.err != nil {
			return nil, j.err
		}
		j.step()
	}
	s := j.pending[0]
	j.pending = j.pending[1:]
	return s, nil
}

// step reads one event, queueing the Snapshots it completes.
func (j *Reader) step() {
	ev, err := j.r.Next()
	if err != nil {
		j.flush()
		if !errors.Is(err, io.EOF) {
			err = fmt.Errorf("%s: %w", j.source, err)
		}
		j.err = err
		return
	}
	if c := j.r.Chunk(); c.Index != j.chunk {
		j.chunk, j.stacks = c.Index, map[*jfr.StackTrace][]threaddump.Frame{}
	}
	if ev.Type == "jdk.ThreadDump" {
		j.flush()
		if s := j.dump(ev); s != nil {
			j.pending = append(j.pending, s)
		}
		return
	}
	if !j.batchFrom.IsZero() && ev.Start.Sub(j.batchFrom) > j.opts.MaxSpan {
		j.flush()
	}
	switch ev.Type {
	case "jdk.JVMInformation":
		if args, ok := ev.String("javaArguments"); ok && j.program == "?" {
			if p, ok := ProgramOf(args); ok {
				j.program = p
			}
		}
		return
	case "jdk.GarbageCollection":
		g, _ := ev.GarbageCollection()
		b := j.add(ev)
		b.GCPauses = append(b.GCPauses, snapshot.GCPause{
			Start: ev.Start, Name: g.Name, Cause: g.Cause, SumOfPauses: g.SumOfPauses, LongestPause: g.LongestPause,
		})
	case "jdk.CPULoad":
		l, _ := ev.CPULoad()
		b := j.add(ev)
		b.CPULoads = append(b.CPULoads, snapshot.CPULoad{Time: ev.Start, JVMUser: l.JVMUser, JVMSystem: l.JVMSystem, MachineTotal: l.MachineTotal})
	default:
		if w, ok := j.wait(ev); ok {
			b := j.add(ev)
			b.Waits = append(b.Waits, w)
		}
	}
	if j.events >= j.opts.MaxEvents {
		j.flush()
	}
}

// add counts ev into the current batch, starting one when needed.
func (j *Reader) add(ev *jfr.Event) *snapshot.Snapshot {
	if j.batch == nil {
		j.batch = &snapshot.Snapshot{Source: j.source}
		j.batchFrom = ev.Start
	}
	j.events++
	if e := ev.End(); e.After(j.last) {
		j.last = e
	}
	return j.batch
}

func (j *Reader) flush() {
	if j.batch == nil {
		return
	}
	j.batch.Time = j.last
	j.pending = append(j.pending, j.batch)
	j.batch, j.batchFrom, j.events = nil, time.Time{}, 0
}

// dump parses a jdk.ThreadDump event's text; nil when it holds no dump.
func (j *Reader) dump(ev *jfr.Event) *snapshot.Snapshot {
	text, ok := ev.ThreadDumpText()
	if !ok || text == "" {
		return nil
	}
	dumps, err := threaddump.ParseString(text)
	if err != nil || len(dumps) == 0 {
		return &snapshot.Snapshot{Time: ev.Start, Source: j.source, Errors: []string{fmt.Sprintf("%s: thread dump at %s: %v", j.source, ev.Start.Format(time.RFC3339), err)}}
	}
	d := dumps[0]
	if d.Time.IsZero() {
		d.Time = ev.Start
	}
	if p := d.ProgramOrganization(); p != "?" {
		j.program = p
	}
	j.Dumps++
	// The dump keeps its own time; the snapshot's never goes back, for
	// the Aggregator's clock.
	if ev.Start.After(j.last) {
		j.last = ev.Start
	}
	return &snapshot.Snapshot{Time: j.last, Source: j.source, Dump: d}
}

// wait converts a lock event; ok is false for events that are not
// contention (an idle worker's wait, a park without a blocker).
func (j *Reader) wait(ev *jfr.Event) (snapshot.WaitEvent, bool) {
	w := snapshot.WaitEvent{Event: ev.Type, Start: ev.Start, Duration: ev.Duration}
	if t := ev.Thread; t != nil {
		w.Thread, w.JavaThreadID, w.OSThreadID = t.Name(), t.JavaThreadID, t.OSThreadID
	}
	w.Stack = j.frames(ev.Stack)
	if j.program == "?" && w.Thread == "main" {
		// The main thread's outermost program frame is the main class.
		for i := len(w.Stack) - 1; i >= 0; i-- {
			if f := w.Stack[i]; f.Method == "main" && !threaddump.IsJDKClass(f.Class) {
				j.program = threaddump.Organization(f.Class)
				break
			}
		}
	}
	switch ev.Type {
	case "jdk.JavaMonitorEnter":
		m, _ := ev.MonitorEnter()
		w.Kind, w.Class, w.Address = string(threaddump.WaitMonitor), className(m.MonitorClass), m.Address
		w.Other = m.PreviousOwner.Name()
	case "jdk.JavaMonitorWait":
		m, _ := ev.MonitorWait()
		if j.idle(w.Stack, className(m.MonitorClass), false) {
			return w, false
		}
		w.Kind = string(threaddump.ObjectWaitKind(w.Stack))
		w.Class, w.Address = className(m.MonitorClass), m.Address
		w.Other, w.TimedOut = m.Notifier.Name(), m.TimedOut
		w.Timeout = max(m.Timeout, 0)
	case "jdk.ThreadPark":
		p, _ := ev.ThreadPark()
		if p.ParkedClass == nil {
			// A dump shows no lock for a park without a blocker
			// (parkNanos as a sleep); neither do we.
			return w, false
		}
		w.Class, w.Address = p.ParkedClass.Name, p.Address
		w.Kind = string(threaddump.ParkKind(w.Class, w.Stack))
		if w.Kind != string(threaddump.WaitSynchronizer) && j.idle(w.Stack, w.Class, true) {
			return w, false
		}
		if p.Timeout > 0 && p.Timeout < time.Duration(1<<62) {
			w.Timeout = p.Timeout
		}
	case "jdk.VirtualThreadPinned":
		w.Kind = "pinned"
	default:
		return w, false
	}
	if strings.HasPrefix(w.Class, "jdk.jfr.") {
		// The recorder's own locks: taken when a JFR.dump or JFR.check
		// (ctprof's, reading its recording) runs in the target, not by
		// the program. An observer effect, like a dump's safepoint.
		j.Observer++
		return w, false
	}
	return w, true
}

// idle applies the dumps' wait rule where the stack is there to apply it:
// to a park on a blocker of class, or a wait() on a monitor of class.
func (j *Reader) idle(stack []threaddump.Frame, class string, park bool) bool {
	if len(stack) == 0 {
		return false
	}
	r := threaddump.ApplyMonitorWaitRule(stack, 0, j.program, class)
	if park {
		r = threaddump.ApplyParkRule(stack, 0, j.program, class)
	}
	if !r.Idle {
		return false
	}
	j.Idle++
	return true
}

func className(c *jfr.Class) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// frames converts a stack (top first, at most snapshot.MaxWaitEventFrames), once
// per stack constant and chunk; events share the result, read-only.
func (j *Reader) frames(st *jfr.StackTrace) []threaddump.Frame {
	if st == nil {
		return nil
	}
	if fr, ok := j.stacks[st]; ok {
		return fr
	}
	n := min(len(st.Frames), snapshot.MaxWaitEventFrames)
	fr := make([]threaddump.Frame, 0, n)
	for _, f := range st.Frames[:n] {
		tf := threaddump.Frame{Line: f.Line, Native: f.Type == "Native"}
		if m := f.Method; m != nil {
			tf.Method = m.Name
			if m.Class != nil {
				tf.Class = m.Class.Name
			}
		}
		if tf.Line < 0 {
			tf.Line = 0
		}
		fr = append(fr, tf)
	}
	if len(j.stacks) < 1<<16 {
		j.stacks[st] = fr
	}
	return fr
}
