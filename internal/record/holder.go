package record

import "github.com/ctprof/ctprof/internal/procfs"

// encodeHolder writes what a futex's lock said of its holder (format
// version 5 on): a flag, then the lock's kind, the holder's tid, and an
// rwlock's readers and a condition's waiters.
func encodeHolder(e *encoder, h *procfs.LockHolder) {
	e.bool(h != nil)
	if h == nil {
		return
	}
	e.str(h.Lock)
	e.int(h.TID)
	e.int(h.Readers)
	e.int(h.Waiters)
}

// decodeHolder reads what encodeHolder wrote.
func decodeHolder(d *decoder) *procfs.LockHolder {
	if !d.bool() {
		return nil
	}
	return &procfs.LockHolder{Lock: d.str(), TID: d.int(), Readers: d.int(), Waiters: d.int()}
}
