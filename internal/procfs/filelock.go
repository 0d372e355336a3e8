package procfs

import (
	"bytes"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// File locks. A thread blocked in flock(fd, LOCK_EX) or in fcntl(fd,
// F_SETLKW) (lockf, F_OFD_SETLKW) queues behind whoever holds a lock on
// the file: another process, or another open file description of its own
// process. Such a wait is the file's, not the descriptor's: every process
// that locks the session file of one PHP session, or one SQLite journal,
// waits for the same thing, whatever its descriptor's number.

// fcntl's blocking lock commands (x86-64 and arm64 alike).
const (
	fSetLkW    = 7  // F_SETLKW (F_SETLKW64 on 64-bit)
	fOFDSetLkW = 38 // F_OFD_SETLKW
)

// FileLockWait reports a system call that blocks until a file lock is
// granted, and the descriptor it locks: flock without LOCK_NB, or fcntl's
// F_SETLKW or F_OFD_SETLKW.
func FileLockWait(nr int, args [5]uint64) (fd int, ok bool) {
	switch {
	case nr == unix.SYS_FLOCK:
		op := args[1]
		ok = op&unix.LOCK_NB == 0 && op&(unix.LOCK_SH|unix.LOCK_EX) != 0
	case nr == unix.SYS_FCNTL:
		cmd := int32(args[1])
		ok = cmd == fSetLkW || cmd == fOFDSetLkW
	}
	if !ok || int32(args[0]) < 0 {
		return 0, false
	}
	return int(int32(args[0])), true
}

// LockedFile is the file a blocked thread waits to lock.
type LockedFile struct {
	// Path is the descriptor's link text (read as a link, never
	// followed): the target's, so hostile.
	Path string
	// ID is the file's identity: its inode and mount, never a user-space
	// address (the top bit is set), so it can key a wait beside futex
	// words. 0 when unknown.
	ID uint64
	// Holder is the process that holds a lock on the file, as
	// /proc/locks names it (FileLockHolders); 0 when unknown, or when
	// the lock is an open file description's (no process owns it).
	Holder int
	// Across is the system call the holder's main thread was blocked in
	// between two reads of /proc/locks that both named it
	// (HolderAcross): it held the lock through that call. nil otherwise.
	Across *HeldAcross
}

// Inode is the file's inode as ID keeps it (its low 40 bits).
func (l LockedFile) Inode() uint64 { return l.ID & (1<<40 - 1) }

// FileIDBit marks a LockedFile.ID: no futex word's address has it.
const FileIDBit = 1 << 63

// LockedFileOf reads which file process pid's descriptor fd is, from the
// descriptor's link and /proc/<pid>/fdinfo/<fd> (its inode and mount).
// false when the descriptor is gone or cannot be read.
func (f FS) LockedFileOf(pid, fd int) (LockedFile, bool) {
	if fd < 0 || fd > 1<<30 {
		return LockedFile{}, false
	}
	n := strconv.Itoa(fd)
	link, err := os.Readlink(f.pidPath(pid, "fd", n))
	if err != nil {
		return LockedFile{}, false
	}
	b, err := f.readFile(f.pidPath(pid, "fdinfo", n))
	if err != nil {
		return LockedFile{}, false
	}
	return LockedFile{Path: link, ID: fileIDOf(b)}, true
}

// fileIDOf is the identity an fdinfo text gives its file ("mnt_id:" and
// "ino:"), 0 without an inode.
func fileIDOf(fdinfo []byte) uint64 {
	var mnt, ino uint64
	for len(fdinfo) > 0 {
		var line []byte
		line, fdinfo, _ = bytes.Cut(fdinfo, []byte{'\n'})
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			continue
		}
		switch string(k) {
		case "mnt_id":
			mnt = n
		case "ino":
			ino = n
		}
	}
	if ino == 0 {
		return 0
	}
	// 23 bits of mount and 40 of inode: inodes beyond 2^40 or mounts
	// beyond 2^23 share keys with others, which only merges two files'
	// counts of distinct instances.
	return FileIDBit | (mnt&(1<<23-1))<<40 | ino&(1<<40-1)
}

// maxLocksRead bounds what FileLockHolders reads of /proc/locks: a host
// with more locks than that names the holders of the first ones only.
const maxLocksRead = 4 << 20

// FileLockHolders reads the kernel's table of file locks, /proc/locks,
// and returns the process holding a lock on each inode (its low 40 bits,
// as LockedFile.Inode): the first holder listed, when several share it.
func (f FS) FileLockHolders() (map[uint64]int, error) {
	fh, err := os.Open(f.Path("locks"))
	if err != nil {
		return nil, classify(f.Path("locks"), err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxLocksRead))
	if err != nil {
		return nil, classify(f.Path("locks"), err)
	}
	return fileLockHoldersOf(b), nil
}

// fileLockHoldersOf parses /proc/locks: each lock a line
// "1: FLOCK  ADVISORY  WRITE 7772 fe:00:9978555 0 EOF", each process
// blocked on it a line after with "->" before its type. An open file
// description's lock (OFDLCK) has pid -1: no process holds it.
func fileLockHoldersOf(b []byte) map[uint64]int {
	out := map[uint64]int{}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) < 6 || string(f[1]) == "->" {
			continue
		}
		pid, err := strconv.Atoi(string(f[4]))
		if err != nil || pid <= 0 {
			continue
		}
		dev := f[5]
		i := bytes.LastIndexByte(dev, ':')
		if i < 0 {
			continue
		}
		ino, err := strconv.ParseUint(string(dev[i+1:]), 10, 64)
		if err != nil {
			continue
		}
		ino &= 1<<40 - 1
		if _, ok := out[ino]; !ok {
			out[ino] = pid
		}
	}
	return out
}

// HolderAcross reads the system call process pid's main thread is in, for
// the second read of /proc/locks to confirm it held its lock across
// (LockedFile.Across); nil when it is not blocked in one.
func (f FS) HolderAcross(pid int) *HeldAcross {
	b, err := f.readFile(f.pidPath(pid, "syscall"))
	if err != nil {
		return nil
	}
	var t Thread
	parseSyscall(b, &t)
	if t.Syscall < 0 {
		return nil
	}
	return &HeldAcross{Syscall: t.Syscall, SP: t.SyscallSP, PC: t.SyscallPC}
}
