package sample

import (
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Locked files. A native thread blocked in flock or fcntl(F_SETLKW) queues
// for a lock on a file; which file (its path and identity) makes the
// waits of many processes one resource. It is read once per wait, as an
// epoll set is (perWait).

// maxLockReadsPerTick bounds the descriptors read afresh in one sample;
// the rest are read in the next samples.
const maxLockReadsPerTick = 2048

// readLockedFiles fills Locked for the threads blocked in a file-lock
// call.
func (s *Sampler) readLockedFiles(threads []snapshot.OSThread) {
	if s.target.Kind != snapshot.KindNative {
		return
	}
	defer s.locked.turn()
	fresh, waiting := 0, false
	for i := range threads {
		t := &threads[i]
		t.Locked = procfs.LockedFile{}
		if !t.Sleeping() {
			continue
		}
		fd, ok := procfs.FileLockWait(t.Syscall, t.SyscallArgs)
		if !ok {
			continue
		}
		if f, ok := s.locked.get(t, uint64(fd)); ok {
			t.Locked = f
		} else if fresh < maxLockReadsPerTick {
			fresh++
			t.Locked, _ = s.fs.LockedFileOf(s.opts.PID, fd)
		}
		if t.Locked != (procfs.LockedFile{}) {
			s.locked.keep(t, uint64(fd), t.Locked) // the holder is read every sample
			waiting = true
		}
	}
	if waiting {
		s.readLockHolders(threads)
	}
}

// readLockHolders names the process holding each waited-for file's lock,
// from /proc/locks, read afresh every sample: a lock changes hands between
// two samples many times. Then, as for a mutex (procfs.ConfirmHolders),
// the system call each holder is blocked in, and /proc/locks once more: a
// holder it names again held the lock across that call (a prefork
// server's child polling its listeners with the accept lock held:
// analysis.openGates).
func (s *Sampler) readLockHolders(threads []snapshot.OSThread) {
	holders, err := s.fs.FileLockHolders()
	if err != nil {
		return // the holders stay unknown; the waits are what counts
	}
	var across map[int]*procfs.HeldAcross
	for i := range threads {
		t := &threads[i]
		if t.Locked.ID == 0 {
			continue
		}
		t.Locked.Holder, t.Locked.Across = holders[t.Locked.Inode()], nil
		if h := t.Locked.Holder; h > 0 {
			if _, ok := across[h]; !ok && len(across) < maxLockReadsPerTick {
				if across == nil {
					across = map[int]*procfs.HeldAcross{}
				}
				across[h] = s.fs.HolderAcross(h)
			}
		}
	}
	if len(across) == 0 {
		return
	}
	again, err := s.fs.FileLockHolders()
	if err != nil {
		return
	}
	for i := range threads {
		l := &threads[i].Locked
		if l.Holder > 0 && again[l.Inode()] == l.Holder {
			l.Across = across[l.Holder]
		}
	}
}
