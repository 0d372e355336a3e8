package record

import (
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// encodeFutexTrace writes the futex waits the kernel counted (format
// version 6 on; attach as root), so a replay reports the exact waits the
// run did.
func encodeFutexTrace(e *encoder, ft *snapshot.FutexTrace) {
	e.bool(ft != nil)
	if ft == nil {
		return
	}
	e.duration(ft.Elapsed)
	e.float(ft.Calls)
	e.bool(ft.Exact)
	e.uvarint(ft.Traced)
	e.float(ft.TracedShare)
	e.uvarint(ft.Lost)
	e.duration(ft.Cost)
	e.uvarint(uint64(len(ft.Futexes)))
	for i := range ft.Futexes {
		f := &ft.Futexes[i]
		e.uvarint(f.Address)
		encodeLocation(e, f.Location)
		e.str(string(f.Kind))
		e.str(f.Op)
		e.float(f.Waits)
		e.int(f.Traced)
		e.int(f.TimedOut)
		e.duration(f.Total)
		e.duration(f.Max)
		e.uvarint(uint64(len(f.Durations)))
		for _, d := range f.Durations {
			e.duration(d)
		}
		e.uvarint(uint64(len(f.TIDs)))
		for _, tid := range f.TIDs {
			e.int(tid)
		}
		e.uvarint(uint64(len(f.Stacks)))
		for _, st := range f.Stacks {
			encodeStack(e, st, nil, false)
		}
	}
}

// decodeFutexTrace reads what encodeFutexTrace wrote.
func decodeFutexTrace(d *decoder) *snapshot.FutexTrace {
	if !d.bool() {
		return nil
	}
	ft := &snapshot.FutexTrace{
		Elapsed: d.duration(), Calls: d.float(), Exact: d.bool(), Traced: d.uvarint(),
		TracedShare: d.float(), Lost: d.uvarint(), Cost: d.duration(),
	}
	n := d.count(12)
	for i := 0; i < n && d.err == nil; i++ {
		var f snapshot.TracedFutex
		f.Address = d.uvarint()
		f.Location = decodeLocation(d)
		f.Kind = procfs.FutexKind(d.str())
		f.Op = d.str()
		f.Waits = d.float()
		f.Traced = d.int()
		f.TimedOut = d.int()
		f.Total = d.duration()
		f.Max = d.duration()
		if nd := d.count(1); nd > 0 {
			f.Durations = make([]time.Duration, nd)
			for k := range f.Durations {
				f.Durations[k] = d.duration()
			}
		}
		if nt := d.count(1); nt > 0 {
			f.TIDs = make([]int, nt)
			for k := range f.TIDs {
				f.TIDs[k] = d.int()
			}
		}
		if ns := d.count(1); ns > 0 {
			f.Stacks = make([][]symbolize.StackFrame, 0, ns)
			for k := 0; k < ns && d.err == nil; k++ {
				f.Stacks = append(f.Stacks, decodeStack(d, nil, false))
			}
		}
		ft.Futexes = append(ft.Futexes, f)
	}
	return ft
}

// encodeFastReads writes what the fast reads of a sample caught (format
// version 6 on).
func encodeFastReads(e *encoder, fr *snapshot.FastReads) {
	e.bool(fr != nil)
	if fr == nil {
		return
	}
	e.int(fr.Rounds)
	e.duration(fr.Spacing)
	e.duration(fr.Took)
	e.uvarint(uint64(len(fr.Threads)))
	for i, tid := range fr.Threads {
		e.int(tid)
		e.float(fr.BlocksPerSecond[i])
	}
	e.uvarint(uint64(len(fr.Futexes)))
	for i := range fr.Futexes {
		f := &fr.Futexes[i]
		e.uvarint(f.Address)
		encodeLocation(e, f.Location)
		e.str(string(f.Kind))
		e.str(f.Op)
		e.int(f.Sightings)
		e.uvarint(uint64(len(f.TIDs)))
		for _, tid := range f.TIDs {
			e.int(tid)
		}
	}
}

// decodeFastReads reads what encodeFastReads wrote.
func decodeFastReads(d *decoder) *snapshot.FastReads {
	if !d.bool() {
		return nil
	}
	fr := &snapshot.FastReads{Rounds: d.int(), Spacing: d.duration(), Took: d.duration()}
	if n := d.count(2); n > 0 {
		fr.Threads = make([]int, n)
		fr.BlocksPerSecond = make([]float64, n)
		for i := range fr.Threads {
			fr.Threads[i] = d.int()
			fr.BlocksPerSecond[i] = d.float()
		}
	}
	n := d.count(6)
	for i := 0; i < n && d.err == nil; i++ {
		var f snapshot.FastFutex
		f.Address = d.uvarint()
		f.Location = decodeLocation(d)
		f.Kind = procfs.FutexKind(d.str())
		f.Op = d.str()
		f.Sightings = d.int()
		if nt := d.count(1); nt > 0 {
			f.TIDs = make([]int, nt)
			for k := range f.TIDs {
				f.TIDs[k] = d.int()
			}
		}
		fr.Futexes = append(fr.Futexes, f)
	}
	return fr
}
