package futextrace

import "encoding/binary"

// Record types and sample fields ctprof asks for (linux/perf_event.h).
const (
	recordLost     = 2
	recordThrottle = 5
	recordSample   = 9

	// Every sampling event writes PERF_SAMPLE_IDENTIFIER first, so a
	// record of a ring several events share says which event wrote it
	// before the rest of its layout is known.
	baseSampleType = 1<<16 /* IDENTIFIER */ | 1<<1 /* TID */ | 1<<2 /* TIME */ | 1<<10 /* RAW */
	// The stack event adds the user registers and a copy of the stack.
	stackSampleType = baseSampleType | 1<<12 /* REGS_USER */ | 1<<13 /* STACK_USER */
)

// record is one parsed ring record. Raw, Stack alias the input.
type record struct {
	typ  uint32
	id   uint64
	pid  uint32
	tid  uint32
	time uint64
	raw  []byte
	// regs are the user registers in the order of their mask's bits
	// (nil when the sample has none: a kernel thread).
	regs  []uint64
	stack []byte // the copied stack's valid bytes, from the sampled SP
	lost  uint64 // PERF_RECORD_LOST: records the kernel dropped
}

// parseRecord reads one ring record, header included. stackID is the id
// of the event whose samples carry registers (nregs of them) and a stack
// copy; other samples have IDENTIFIER, TID, TIME and RAW. It never reads
// outside b and returns false for anything malformed: the ring is the
// kernel's, but a bug or a torn read must not crash ctprof.
func parseRecord(b []byte, stackID uint64, nregs int) (record, bool) {
	var r record
	if len(b) < 8 {
		return r, false
	}
	r.typ = binary.LittleEndian.Uint32(b)
	size := int(binary.LittleEndian.Uint16(b[6:]))
	if size < 8 || size > len(b) {
		return r, false
	}
	p := b[8:size]
	switch r.typ {
	case recordLost:
		if len(p) < 16 {
			return r, false
		}
		r.id = binary.LittleEndian.Uint64(p)
		r.lost = binary.LittleEndian.Uint64(p[8:])
		return r, true
	case recordSample:
	default:
		return r, true
	}
	u64 := func() (uint64, bool) {
		if len(p) < 8 {
			return 0, false
		}
		v := binary.LittleEndian.Uint64(p)
		p = p[8:]
		return v, true
	}
	var ok bool
	if r.id, ok = u64(); !ok {
		return r, false
	}
	pt, ok := u64()
	if !ok {
		return r, false
	}
	r.pid, r.tid = uint32(pt), uint32(pt>>32)
	if r.time, ok = u64(); !ok {
		return r, false
	}
	if len(p) < 4 {
		return r, false
	}
	n := int(binary.LittleEndian.Uint32(p))
	if n > len(p)-4 {
		return r, false
	}
	r.raw = p[4 : 4+n]
	p = p[4+n:]
	if r.id != stackID || stackID == 0 {
		return r, true
	}
	abi, ok := u64()
	if !ok {
		return r, false
	}
	if abi != 0 {
		if nregs < 0 || len(p) < 8*nregs {
			return r, false
		}
		r.regs = make([]uint64, nregs)
		for i := range r.regs {
			r.regs[i], _ = u64()
		}
	}
	ssize, ok := u64()
	if !ok {
		return r, false
	}
	if ssize == 0 {
		return r, true
	}
	if ssize > uint64(len(p)) || len(p)-int(ssize) < 8 {
		return r, false
	}
	data := p[:ssize]
	p = p[ssize:]
	dyn, _ := u64()
	if dyn > ssize {
		return r, false
	}
	r.stack = data[:dyn]
	return r, true
}
