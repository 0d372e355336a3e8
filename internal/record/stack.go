package record

import (
	"slices"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// A thread's native stack (format version 6 on). A blocked thread keeps
// its stack from sample to sample, so a thread known from the previous
// frame whose stack did not change writes one byte; otherwise the frames,
// innermost first, their names through the string table.
const (
	stackNone    = 0
	stackSame    = 1
	stackWritten = 2
)

// encodeStack writes st; prev is the same thread's stack in the previous
// frame, when known.
func encodeStack(e *encoder, st, prev []symbolize.StackFrame, known bool) {
	switch {
	case len(st) == 0:
		e.byte(stackNone)
	case known && slices.Equal(st, prev):
		e.byte(stackSame)
	default:
		e.byte(stackWritten)
		e.uvarint(uint64(len(st)))
		for _, f := range st {
			e.uvarint(f.PC)
			e.str(f.Module)
			e.str(f.Function)
			e.uvarint(f.Offset)
			if e.version >= 10 {
				e.str(f.File)
				e.int(f.Line)
			}
		}
	}
}

// decodeStack reads what encodeStack wrote.
func decodeStack(d *decoder, prev []symbolize.StackFrame, known bool) []symbolize.StackFrame {
	switch d.byte() {
	case stackNone:
		return nil
	case stackSame:
		if !known || len(prev) == 0 {
			d.fail()
		}
		return prev
	case stackWritten:
		n := d.count(4)
		if n == 0 || n > symbolize.MaxStackFrames {
			d.fail()
			return nil
		}
		st := make([]symbolize.StackFrame, n)
		for i := range st {
			st[i] = symbolize.StackFrame{PC: d.uvarint(), Module: d.str(), Function: d.str(), Offset: d.uvarint()}
			if d.version >= 10 {
				st[i].File, st[i].Line = d.str(), d.int()
			}
		}
		return st
	}
	d.fail()
	return nil
}
