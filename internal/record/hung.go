package record

import (
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// encodeHung writes what a tick said of a target that did not answer
// (format version 7 on): a stopped process (its tracer), a JVM that left a
// request unanswered (what it ran meanwhile), and whether the tick's dump
// was the early one asked for while ctprof started. A replay of a hung
// run gives the findings the live run gave.
func encodeHung(e *encoder, s *snapshot.Snapshot) {
	e.bool(s.Stopped != nil)
	if st := s.Stopped; st != nil {
		e.int(st.Tracer)
		e.str(st.TracerName)
	}
	e.bool(s.NoAnswer != nil)
	if na := s.NoAnswer; na != nil {
		e.str(na.Request)
		e.varint(na.Since.UnixNano())
		e.duration(na.For)
		e.duration(na.Waited)
		e.uvarint(uint64(len(na.Running)))
		for _, r := range na.Running {
			e.int(r.TID)
			e.str(r.Name)
			e.float(r.CPU)
			e.float(r.Queued)
			e.duration(r.Window)
			e.bool(r.Internal)
			e.bool(r.GC)
		}
		e.int(na.JavaThreads)
		e.duration(na.GCRunning)
		e.bool(na.GCKnown)
		e.float(na.VMThreadWakeups)
	}
	e.bool(s.DumpCost != nil && s.DumpCost.Early)
}

// decodeHung reads what encodeHung wrote.
func decodeHung(d *decoder, s *snapshot.Snapshot) {
	if d.bool() {
		s.Stopped = &snapshot.Stopped{Tracer: d.int(), TracerName: d.str()}
	}
	if d.bool() {
		na := &snapshot.NoAnswer{Request: d.str(), Since: time.Unix(0, d.varint()), For: d.duration(), Waited: d.duration()}
		if n := d.count(8); n > 0 {
			na.Running = make([]snapshot.RunningThread, 0, n)
			for i := 0; i < n && d.err == nil; i++ {
				na.Running = append(na.Running, snapshot.RunningThread{
					TID: d.int(), Name: d.str(), CPU: d.float(), Queued: d.float(), Window: d.duration(),
					Internal: d.bool(), GC: d.bool(),
				})
			}
		}
		na.JavaThreads = d.int()
		na.GCRunning = d.duration()
		na.GCKnown = d.bool()
		na.VMThreadWakeups = d.float()
		s.NoAnswer = na
	}
	if d.bool() && s.DumpCost != nil {
		s.DumpCost.Early = true
	}
}
