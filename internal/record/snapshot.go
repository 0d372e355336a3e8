package record

import (
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// threadState is what delta frames encode a thread against: the same
// thread (tid and start time) in the previous frame.
type threadState map[int]procfs.Thread

// encodeSnapshot writes s. In a delta frame a thread seen in the previous
// frame has its counters written as differences, which are small.
func encodeSnapshot(e *encoder, s *snapshot.Snapshot, prev threadState, key bool) threadState {
	if s.Time.IsZero() {
		e.bool(false)
	} else {
		e.bool(true)
		e.varint(s.Time.UnixNano())
	}
	e.int(s.Target.PID)
	e.str(s.Target.Name)
	e.str(string(s.Target.Kind))
	e.int(s.Target.CPUs)
	e.str(s.Source)
	e.duration(s.Interval)
	e.duration(s.Cost)
	e.strs(s.Missing)
	e.strs(s.Errors)

	next := threadState{}
	e.bool(s.Threads != nil)
	e.uvarint(uint64(len(s.Threads)))
	lastTID := 0
	for i := range s.Threads {
		t := &s.Threads[i]
		p, known := prev[t.TID]
		known = known && !key && p.StartTime == t.StartTime
		e.bool(known)
		e.varint(int64(t.TID - lastTID))
		lastTID = t.TID
		if !known {
			p = procfs.Thread{}
			e.uvarint(t.StartTime)
		}
		encodeThread(e, t, &p, known)
		next[t.TID] = *t
	}

	e.uvarint(uint64(len(s.Futexes)))
	for _, f := range s.Futexes {
		e.uvarint(f.Address)
		encodeLocation(e, f.Location)
		e.str(string(f.Kind))
		e.str(f.Op)
		if e.version >= 2 {
			e.uvarint(f.Value)
			e.bool(f.Timed)
		}
		if e.version >= 5 {
			encodeHolder(e, f.Holder)
		}
		e.uvarint(uint64(len(f.TIDs)))
		for _, tid := range f.TIDs {
			e.int(tid)
		}
	}

	e.bool(s.Connections != nil)
	if c := s.Connections; c != nil {
		e.int(c.Established)
		e.int(c.Inbound)
		e.int(c.Peers)
		ports := make([]int, 0, len(c.ByLocalPort))
		for p := range c.ByLocalPort {
			ports = append(ports, p)
		}
		sort.Ints(ports)
		e.uvarint(uint64(len(ports)))
		for _, p := range ports {
			e.int(p)
			e.int(c.ByLocalPort[p])
		}
		e.uvarint(uint64(len(c.Listening)))
		for _, p := range c.Listening {
			e.int(p)
		}
	}

	e.bool(s.Host != nil)
	if h := s.Host; h != nil {
		e.uvarint(h.ContextSwitches)
		e.int(h.ProcsRunning)
		e.int(h.ProcsBlocked)
		e.float(h.Load1)
		e.float(h.Load5)
		e.float(h.Load15)
		e.int(h.CPUs)
	}

	e.bool(s.JVM != nil)
	if j := s.JVM; j != nil {
		for _, v := range []int64{j.LiveThreads, j.DaemonThreads, j.PeakThreads, j.StartedThreads, j.Safepoints} {
			e.varint(v)
		}
		e.duration(j.SafepointTime)
		e.duration(j.GCTime)
		keys := make([]string, 0, len(j.Sync))
		for k := range j.Sync {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.bool(j.Sync != nil)
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			e.str(k)
			e.varint(j.Sync[k])
		}
	}

	e.bool(s.DumpCost != nil)
	if c := s.DumpCost; c != nil {
		e.str(c.Method)
		e.duration(c.Wall)
		e.duration(c.Pause)
	}
	e.bool(s.DumpText != nil)
	if s.DumpText != nil {
		e.bytes(s.DumpText)
	}
	encodeLater(e, s)
	return next
}

// encodeLater writes what later format versions added, in the order they
// added it.
func encodeLater(e *encoder, s *snapshot.Snapshot) {
	if e.version >= 3 {
		encodeWaits(e, s)
	}
	if e.version >= 4 && s.Host != nil {
		encodeHostCPU(e, s.Host)
	}
	if e.version >= 6 {
		encodeFutexTrace(e, s.FutexTrace)
		encodeFastReads(e, s.FastReads)
	}
	if e.version >= 7 {
		encodeHung(e, s)
	}
	if e.version >= 8 && s.Connections != nil {
		encodeUnixClients(e, s.Connections)
	}
}

// encodeWaits writes the waits and GC pauses a JVM recorded (JFR), so a
// replay of an attach --jfr run feeds the Aggregator what the run did.
func encodeWaits(e *encoder, s *snapshot.Snapshot) {
	e.uvarint(uint64(len(s.Waits)))
	for i := range s.Waits {
		w := &s.Waits[i]
		e.str(w.Kind)
		e.str(w.Event)
		e.varint(w.Start.UnixNano())
		e.duration(w.Duration)
		e.str(w.Thread)
		e.varint(w.JavaThreadID)
		e.varint(w.OSThreadID)
		e.str(w.Class)
		e.uvarint(w.Address)
		e.str(w.Other)
		e.duration(w.Timeout)
		e.bool(w.TimedOut)
		e.uvarint(uint64(len(w.Stack)))
		for _, f := range w.Stack {
			e.str(f.Class)
			e.str(f.Method)
			e.str(f.Module)
			e.str(f.File)
			e.int(f.Line)
			e.bool(f.Native)
		}
	}
	e.duration(s.JFRPause)
	e.uvarint(uint64(len(s.GCPauses)))
	for _, g := range s.GCPauses {
		e.varint(g.Start.UnixNano())
		e.str(g.Name)
		e.str(g.Cause)
		e.duration(g.SumOfPauses)
		e.duration(g.LongestPause)
	}
}

// decodeWaits reads what encodeWaits wrote.
func decodeWaits(d *decoder, s *snapshot.Snapshot) {
	if n := d.count(13); n > 0 {
		s.Waits = make([]snapshot.WaitEvent, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			var w snapshot.WaitEvent
			w.Kind = d.str()
			w.Event = d.str()
			w.Start = time.Unix(0, d.varint())
			w.Duration = d.duration()
			w.Thread = d.str()
			w.JavaThreadID = d.varint()
			w.OSThreadID = d.varint()
			w.Class = d.str()
			w.Address = d.uvarint()
			w.Other = d.str()
			w.Timeout = d.duration()
			w.TimedOut = d.bool()
			if nf := d.count(6); nf > 0 {
				w.Stack = make([]threaddump.Frame, 0, min(nf, snapshot.MaxWaitEventFrames))
				for k := 0; k < nf && d.err == nil; k++ {
					f := threaddump.Frame{Class: d.str(), Method: d.str(), Module: d.str(), File: d.str(), Line: d.int(), Native: d.bool()}
					if len(w.Stack) < snapshot.MaxWaitEventFrames {
						w.Stack = append(w.Stack, f)
					}
				}
			}
			s.Waits = append(s.Waits, w)
		}
	}
	s.JFRPause = d.duration()
	if n := d.count(5); n > 0 {
		s.GCPauses = make([]snapshot.GCPause, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			s.GCPauses = append(s.GCPauses, snapshot.GCPause{
				Start: time.Unix(0, d.varint()), Name: d.str(), Cause: d.str(),
				SumOfPauses: d.duration(), LongestPause: d.duration(),
			})
		}
	}
}

func encodeLocation(e *encoder, l symbolize.Location) {
	e.uvarint(l.Address)
	e.str(l.Module)
	e.str(l.ModulePath)
	e.uvarint(l.Offset)
	e.str(l.Symbol)
	e.uvarint(l.SymbolOffset)
	e.uvarint(l.SymbolSize)
}

// decodeSnapshot reads what encodeSnapshot wrote, part by part in the
// order it wrote them; each part has a reader of its own. A failed read
// sets d.err and the later reads return zero values.
func decodeSnapshot(d *decoder, prev threadState, key bool) (*snapshot.Snapshot, threadState) {
	s := &snapshot.Snapshot{}
	if d.bool() {
		s.Time = time.Unix(0, d.varint())
	}
	s.Target.PID = d.int()
	s.Target.Name = d.str()
	s.Target.Kind = snapshot.TargetKind(d.str())
	s.Target.CPUs = d.int()
	s.Source = d.str()
	s.Interval = d.duration()
	s.Cost = d.duration()
	s.Missing = d.strs()
	s.Errors = d.strs()
	next := decodeThreads(d, s, prev, key)
	decodeFutexes(d, s)
	if d.bool() {
		s.Connections = decodeConnections(d)
	}
	if d.bool() {
		s.Host = decodeHost(d)
	}
	if d.bool() {
		s.JVM = decodeJVM(d)
	}
	if d.bool() {
		s.DumpCost = &snapshot.DumpCost{Method: d.str(), Wall: d.duration(), Pause: d.duration()}
	}
	if d.bool() {
		decodeDump(d, s)
	}
	decodeLater(d, s)
	return s, next
}

// decodeLater reads what encodeLater wrote.
func decodeLater(d *decoder, s *snapshot.Snapshot) {
	if d.version >= 3 {
		decodeWaits(d, s)
	}
	if d.version >= 4 && s.Host != nil {
		decodeHostCPU(d, s.Host)
	}
	if d.version >= 6 {
		s.FutexTrace = decodeFutexTrace(d)
		s.FastReads = decodeFastReads(d)
	}
	if d.version >= 7 {
		decodeHung(d, s)
	}
	if d.version >= 8 && s.Connections != nil {
		decodeUnixClients(d, s.Connections)
	}
}

// decodeThreads reads the /proc sample's threads into s.Threads and
// returns them by tid, for the next delta frame. A thread the frame marks
// as known must be in prev, and a key frame has none: either failing is
// damage, and ends the list.
func decodeThreads(d *decoder, s *snapshot.Snapshot, prev threadState, key bool) threadState {
	next := threadState{}
	hasThreads := d.bool()
	n := d.count(20)
	if hasThreads {
		s.Threads = make([]procfs.Thread, 0, n)
	}
	lastTID := 0
	for i := 0; i < n && d.err == nil; i++ {
		known := d.bool()
		var t procfs.Thread
		t.TID = lastTID + int(d.varint())
		lastTID = t.TID
		var p procfs.Thread
		if known {
			var ok bool
			if p, ok = prev[t.TID]; !ok || key {
				d.fail()
				break
			}
			t.StartTime = p.StartTime
		} else {
			t.StartTime = d.uvarint()
		}
		t.Name = d.str()
		t.State = d.byte()
		t.UserCPU = p.UserCPU + d.duration()
		t.SystemCPU = p.SystemCPU + d.duration()
		t.Voluntary = p.Voluntary + uint64(d.varint())
		t.Involuntary = p.Involuntary + uint64(d.varint())
		t.RunTime = p.RunTime + d.duration()
		t.RunQueueWait = p.RunQueueWait + d.duration()
		t.Timeslices = p.Timeslices + uint64(d.varint())
		t.Processor = d.int()
		t.Policy = d.int()
		t.RTPriority = d.int()
		t.Nice = d.int()
		t.CPUsAllowed = d.str()
		t.WChan = d.str()
		t.Syscall = d.int()
		for k := range t.SyscallArgs {
			t.SyscallArgs[k] = d.uvarint()
		}
		if d.version >= 9 {
			t.SyscallSP, t.SyscallPC = d.uvarint(), d.uvarint()
		}
		if d.version >= 10 {
			t.PID = d.int()
			t.Events = procfs.EventSet(d.byte())
		}
		if d.version >= 12 {
			t.Locked.Path = d.str()
			t.Locked.ID = d.uvarint()
			t.Locked.Holder = d.int()
			if d.byte() == 1 {
				t.Locked.Across = &procfs.HeldAcross{Syscall: d.int(), SP: d.uvarint(), PC: d.uvarint()}
			}
		}
		if d.version >= 6 {
			t.Stack = decodeStack(d, p.Stack, known)
		}
		s.Threads = append(s.Threads, t)
		next[t.TID] = t
	}
	return next
}

// decodeFutexes reads the futexes the threads wait on into s.Futexes
// (value and timeout only from format version 2 on).
func decodeFutexes(d *decoder, s *snapshot.Snapshot) {
	nf := d.count(4)
	if nf <= 0 {
		return
	}
	s.Futexes = make([]procfs.FutexWait, 0, nf)
	for i := 0; i < nf && d.err == nil; i++ {
		var f procfs.FutexWait
		f.Address = d.uvarint()
		f.Location = decodeLocation(d)
		f.Kind = procfs.FutexKind(d.str())
		f.Op = d.str()
		if d.version >= 2 {
			f.Value = d.uvarint()
			f.Timed = d.bool()
		}
		if d.version >= 5 {
			f.Holder = decodeHolder(d)
		}
		nt := d.count(1)
		if nt > 0 {
			f.TIDs = make([]int, nt)
			for k := range f.TIDs {
				f.TIDs[k] = d.int()
			}
		}
		s.Futexes = append(s.Futexes, f)
	}
}

// decodeConnections reads the process's TCP connections (from version 8
// on, the counts include the Unix clients decodeUnixClients reads).
func decodeConnections(d *decoder) *procfs.Connections {
	c := &procfs.Connections{ByLocalPort: map[int]int{}}
	c.Established = d.int()
	c.Inbound = d.int()
	c.Peers = d.int()
	np := d.count(2)
	for i := 0; i < np; i++ {
		p := d.int()
		c.ByLocalPort[p] = d.int()
	}
	if nl := d.count(1); nl > 0 {
		c.Listening = make([]int, nl)
		for i := range c.Listening {
			c.Listening[i] = d.int()
		}
	}
	return c
}

// decodeHost reads the host-wide counters.
func decodeHost(d *decoder) *procfs.Host {
	h := &procfs.Host{}
	h.ContextSwitches = d.uvarint()
	h.ProcsRunning = d.int()
	h.ProcsBlocked = d.int()
	h.Load1 = d.float()
	h.Load5 = d.float()
	h.Load15 = d.float()
	h.CPUs = d.int()
	return h
}

// decodeJVM reads the JVM's own counters. hasSync keeps apart a JVM
// that gave no synchronization counters (nil) from one that gave an empty
// set.
func decodeJVM(d *decoder) *snapshot.JVMCounters {
	j := &snapshot.JVMCounters{}
	j.LiveThreads, j.DaemonThreads, j.PeakThreads, j.StartedThreads, j.Safepoints = d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	j.SafepointTime = d.duration()
	j.GCTime = d.duration()
	hasSync := d.bool()
	ns := d.count(2)
	if hasSync {
		j.Sync = make(map[string]int64, ns)
	}
	for i := 0; i < ns; i++ {
		k := d.str()
		v := d.varint()
		if j.Sync != nil {
			j.Sync[k] = v
		}
	}
	return j
}

// decodeDump reads the thread dump's text into s.DumpText and parses it
// into s.Dump: the recording keeps the text, not the parsed dump. A dump
// that does not parse leaves s.Dump nil; the text is kept all the same.
func decodeDump(d *decoder, s *snapshot.Snapshot) {
	text := d.bytes()
	if d.err != nil {
		return
	}
	s.DumpText = append([]byte{}, text...)
	if dumps, err := threaddump.ParseOwnedBytes(s.DumpText); err == nil && len(dumps) > 0 {
		s.Dump = dumps[len(dumps)-1]
	}
}

func decodeLocation(d *decoder) symbolize.Location {
	var l symbolize.Location
	l.Address = d.uvarint()
	l.Module = d.str()
	l.ModulePath = d.str()
	l.Offset = d.uvarint()
	l.Symbol = d.str()
	l.SymbolOffset = d.uvarint()
	l.SymbolSize = d.uvarint()
	return l
}

// encodeThread writes one thread of a snapshot: its counters as deltas
// from p, the same thread in the previous frame (zero when not known).
func encodeThread(e *encoder, t, p *procfs.Thread, known bool) {
	e.str(t.Name)
	e.byte(t.State)
	e.duration(t.UserCPU - p.UserCPU)
	e.duration(t.SystemCPU - p.SystemCPU)
	e.varint(int64(t.Voluntary - p.Voluntary))
	e.varint(int64(t.Involuntary - p.Involuntary))
	e.duration(t.RunTime - p.RunTime)
	e.duration(t.RunQueueWait - p.RunQueueWait)
	e.varint(int64(t.Timeslices - p.Timeslices))
	e.int(t.Processor)
	e.int(t.Policy)
	e.int(t.RTPriority)
	e.int(t.Nice)
	e.str(t.CPUsAllowed)
	e.str(t.WChan)
	e.int(t.Syscall)
	for _, a := range t.SyscallArgs {
		e.uvarint(a)
	}
	if e.version >= 9 {
		// Where the thread blocked: the native wait rule tells two
		// waits on one word apart by them (a worker's own condition
		// waited on in its loop and inside a task).
		e.uvarint(t.SyscallSP)
		e.uvarint(t.SyscallPC)
	}
	if e.version >= 10 {
		// The process of a tree's thread, and what its epoll set
		// watches: the wait rule reads both.
		e.int(t.PID)
		e.byte(byte(t.Events))
	}
	if e.version >= 12 {
		// The file a file-lock waiter waits for (the wait rule's
		// resource across the processes that lock it) and who holds it.
		e.str(t.Locked.Path)
		e.uvarint(t.Locked.ID)
		e.int(t.Locked.Holder)
		if a := t.Locked.Across; a != nil {
			e.byte(1)
			e.int(a.Syscall)
			e.uvarint(a.SP)
			e.uvarint(a.PC)
		} else {
			e.byte(0)
		}
	}
	if e.version >= 6 {
		encodeStack(e, t.Stack, p.Stack, known)
	}
}
