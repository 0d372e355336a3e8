package jvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Files inside a target (its cwd, its /tmp seen through /proc/<pid>/root)
// sit in directories the target's owner controls, and ctprof often runs as
// root. So no path there is ever handed to open(2) whole: a directory is
// opened once as an O_PATH descriptor, with the target's root as the root
// of the lookup (openat2 RESOLVE_IN_ROOT: an absolute link inside the
// container resolves inside it, not on the host), and names are looked up
// below that descriptor without following any link. A file is checked
// (type, owner, size) on an O_PATH descriptor before it is opened for
// reading, so a FIFO or a device is never opened at all.

// ErrNoOpenat2 means the kernel lacks openat2 (see procfs.ErrNoOpenat2).
var ErrNoOpenat2 = procfs.ErrNoOpenat2

// errUnsafeFile marks a file that exists but that ctprof refuses: not of
// the expected type, another user's, or too large.
var errUnsafeFile = errors.New("refused")

// targetDir is a directory of a target process, held by an O_PATH
// descriptor so that every later lookup is relative to the same inode.
type targetDir struct {
	fd int
	// shown names it in messages (/proc/<pid>/root/tmp).
	shown string
}

// openTargetRootDir opens dir (such as "tmp") inside the root directory of
// process pid. Links on the way are followed but stay inside that root.
func openTargetRootDir(fs procfs.FS, pid int, dir string) (*targetDir, error) {
	rootPath := fs.Path(strconv.Itoa(pid), "root")
	root, err := unix.Open(rootPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(fs, pid, rootPath, err)
	}
	defer unix.Close(root)
	shown := rootPath + "/" + dir
	fd, err := procfs.Openat2(root, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, openError(fs, pid, shown, err)
	}
	return &targetDir{fd: fd, shown: shown}, nil
}

// openTargetCwd opens the working directory of process pid.
func openTargetCwd(fs procfs.FS, pid int) (*targetDir, error) {
	path := fs.Path(strconv.Itoa(pid), "cwd")
	// The magic link itself is what names the directory: following it is
	// the point, and the kernel checks ctprof may read it.
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(fs, pid, path, err)
	}
	return &targetDir{fd: fd, shown: path}, nil
}

func (d *targetDir) Close() { unix.Close(d.fd) }

func openError(fs procfs.FS, pid int, path string, err error) error {
	if errors.Is(err, ErrNoOpenat2) {
		return err
	}
	if !fs.Exists(pid) {
		return fmt.Errorf("pid %d: %w", pid, procfs.ErrProcessGone)
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("open %s: %w", path, procfs.ErrPermission)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

// validName accepts a path below a targetDir: relative, non-empty, no
// empty, "." or ".." components. The kernel enforces the same with
// RESOLVE_BENEATH; checking first gives a clear error.
func validName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.IndexByte(name, 0) >= 0 {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// lookup opens name below d as an O_PATH descriptor without following any
// link (a link is returned as the link itself) and fstats it.
func (d *targetDir) lookup(name string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	if !validName(name) {
		return -1, st, fmt.Errorf("%s/%q: %w: not a plain relative name", d.shown, name, errUnsafeFile)
	}
	fd, err := procfs.Openat2(d.fd, name, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return -1, st, fmt.Errorf("%s/%s: %w: a symbolic link on the way", d.shown, name, errUnsafeFile)
		}
		return -1, st, fmt.Errorf("open %s/%s: %w", d.shown, name, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, fmt.Errorf("stat %s/%s: %w", d.shown, name, err)
	}
	return fd, st, nil
}

// checkOwned accepts st when it has type typ and belongs to uid.
func checkOwned(st *unix.Stat_t, shown string, typ uint32, what string, uid int) error {
	if st.Mode&unix.S_IFMT != typ {
		return fmt.Errorf("%s: %w: not a %s (%s)", shown, errUnsafeFile, what, fileType(st.Mode))
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("%s: %w: it belongs to uid %d, not the JVM's uid %d", shown, errUnsafeFile, st.Uid, uid)
	}
	return nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "unknown type"
}

// readFile reads name below d: a regular file of uid, at most limit bytes.
func (d *targetDir) readFile(name string, uid int, limit int64) ([]byte, unix.Stat_t, error) {
	pfd, st, err := d.lookup(name)
	if err != nil {
		return nil, st, err
	}
	defer unix.Close(pfd)
	shown := d.shown + "/" + name
	if err := checkOwned(&st, shown, unix.S_IFREG, "regular file", uid); err != nil {
		return nil, st, err
	}
	if st.Size > limit {
		return nil, st, fmt.Errorf("%s: %w: %d bytes, more than %d", shown, errUnsafeFile, st.Size, limit)
	}
	// Reopen the very inode checked above for reading. O_NONBLOCK is
	// belt and braces: the type was checked, and it cannot change.
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, st, fmt.Errorf("open %s: %w", shown, err)
	}
	f := os.NewFile(uintptr(fd), shown)
	defer f.Close()
	buf := bytes.NewBuffer(make([]byte, 0, st.Size+bytes.MinRead))
	n, err := buf.ReadFrom(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st, fmt.Errorf("read %s: %w", shown, err)
	}
	if n > limit {
		return nil, st, fmt.Errorf("%s: %w: it grew past %d bytes", shown, errUnsafeFile, limit)
	}
	return buf.Bytes(), st, nil
}

// readDirNames lists the names in d that start with prefix. Only those
// are kept: a long-lived /tmp holds thousands of entries, and a target's
// owner decides what is in its /tmp.
func (d *targetDir) readDirNames(prefix string) ([]string, error) {
	// O_PATH descriptors cannot be listed: reopen the same directory.
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(d.fd), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", d.shown, err)
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.shown, err)
		}
		if n <= 0 {
			return names, nil
		}
		names = appendDirents(names, buf[:n], prefix)
	}
}

// appendDirents appends the names in b, a getdents64 result (struct
// linux_dirent64: inode, offset, record length, type, then the name and
// its NUL), that start with prefix.
func appendDirents(names []string, b []byte, prefix string) []string {
	const nameAt = 8 + 8 + 2 + 1
	for len(b) >= nameAt {
		reclen := int(b[16]) | int(b[17])<<8
		if reclen < nameAt || reclen > len(b) {
			break // not what the kernel writes
		}
		name := b[nameAt:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if bytes.HasPrefix(name, []byte(prefix)) {
			names = append(names, string(name))
		}
		b = b[reclen:]
	}
	return names
}

// createExclusive creates the empty file name in d as uid:gid (see
// asUser): never through a link, never over an existing file. It returns
// the new file's identity, for removeIfSame.
func (d *targetDir) createExclusive(name string, uid, gid int) (unix.Stat_t, error) {
	var st unix.Stat_t
	if !validName(name) || strings.Contains(name, "/") {
		return st, fmt.Errorf("%s/%q: %w: not a plain name", d.shown, name, errUnsafeFile)
	}
	err := asUser(uid, gid, func() error {
		fd, err := unix.Openat(d.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fstat(fd, &st)
	})
	if err != nil {
		return st, fmt.Errorf("create %s/%s: %w", d.shown, name, err)
	}
	return st, nil
}

// removeIfSame removes name from d if it is still the file described by
// st, as uid:gid: a file swapped in meanwhile is left alone, and in a
// sticky /tmp the user could not remove another's file anyway.
func (d *targetDir) removeIfSame(name string, st unix.Stat_t, uid, gid int) error {
	var now unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s/%s: %w", d.shown, name, err)
	}
	// Inode numbers are reused at once on some filesystems: the change
	// time, to the nanosecond, tells a new file from ctprof's.
	if now.Dev != st.Dev || now.Ino != st.Ino || now.Ctim != st.Ctim {
		return fmt.Errorf("%s/%s: %w: replaced since ctprof created it", d.shown, name, errUnsafeFile)
	}
	return asUser(uid, gid, func() error { return unix.Unlinkat(d.fd, name, 0) })
}
