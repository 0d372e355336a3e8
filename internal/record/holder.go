package record

import "github.com/ctprof/ctprof/internal/procfs"

// encodeHolder writes what a futex's lock said of its holder (format
// version 5 on): a flag, then the lock's kind, the holder's tid, and an
// rwlock's readers and a condition's waiters; from version 11 on, the
// system call the holder held it across (a flag, then its number, sp and
// pc).
func encodeHolder(e *encoder, h *procfs.LockHolder) {
	e.bool(h != nil)
	if h == nil {
		return
	}
	e.str(h.Lock)
	e.int(h.TID)
	e.int(h.Readers)
	e.int(h.Waiters)
	if e.version >= 11 {
		e.bool(h.Across != nil)
		if a := h.Across; a != nil {
			e.int(a.Syscall)
			e.uvarint(a.SP)
			e.uvarint(a.PC)
		}
	}
}

// decodeHolder reads what encodeHolder wrote.
func decodeHolder(d *decoder) *procfs.LockHolder {
	if !d.bool() {
		return nil
	}
	h := &procfs.LockHolder{Lock: d.str(), TID: d.int(), Readers: d.int(), Waiters: d.int()}
	if d.version >= 11 && d.bool() {
		h.Across = &procfs.HeldAcross{Syscall: d.int(), SP: d.uvarint(), PC: d.uvarint()}
	}
	return h
}
