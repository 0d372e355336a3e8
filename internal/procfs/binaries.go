package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/symbolize"
	"golang.org/x/sys/unix"
)

// Target is a live process as the symbolizer and the unwinder see it:
// its maps, the files behind them and the files under its root, read
// through /proc without following a link the target's owner could point
// (symbolize.Process).
type Target struct {
	fs  FS
	pid int
}

// Target returns pid as a symbolize.Process.
func (f FS) Target(pid int) Target { return Target{fs: f, pid: pid} }

// PID is the process's id.
func (t Target) PID() int { return t.pid }

// Maps reads /proc/<pid>/maps.
func (t Target) Maps() ([]symbolize.Mapping, error) { return t.fs.Maps(t.pid) }

// QueryMaps opens the process's maps for PROCMAP_QUERY (Linux 6.11+);
// symbolize.ErrNoMapsQuery when the kernel has none.
func (t Target) QueryMaps() (symbolize.MapsQuery, error) {
	q, err := t.fs.openMapsQuery(t.pid)
	if err != nil {
		return nil, err
	}
	if _, _, err := q.Find(0, true, false); errors.Is(err, errNoProcmapQuery) {
		q.Close()
		return nil, symbolize.ErrNoMapsQuery
	}
	return q, nil
}

// OpenMapped opens the binary behind mapping m (openMapped).
func (t Target) OpenMapped(m symbolize.Mapping) (*os.File, error) { return openMapped(t.fs, t.pid, m) }

// OpenInRoot opens a regular file under the process's root (openInRoot).
func (t Target) OpenInRoot(path string) *os.File { return openInRoot(t.fs, t.pid, path) }

// errNotMapped refuses a file that is not the one the target mapped.
var errNotMapped = errors.New("not the file the process mapped")

// openMapped opens the binary behind mapping m of process pid, as the
// target sees it, for reading its symbols. The path comes from the
// target's maps and names a place its owner may control (a library in
// its own directory, since replaced by a link), and ctprof often runs as
// root: the path is looked up under the target's root with openat2
// (RESOLVE_IN_ROOT: a link resolves inside that root, never on the host),
// as an O_PATH descriptor first, and the file is opened for reading only
// once it is a regular file with the device and inode the mapping names.
// A deleted file is reached through map_files, the kernel's own link to
// the mapped file (root only), checked the same way.
func openMapped(fs FS, pid int, m symbolize.Mapping) (*os.File, error) {
	var fd int
	var err error
	if m.Deleted() {
		fd, err = unix.Open(fs.pidPath(pid, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)), unix.O_PATH|unix.O_CLOEXEC, 0)
	} else {
		var root int
		root, err = unix.Open(fs.pidPath(pid, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		fd, err = Openat2(root, strings.TrimPrefix(m.Path, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		unix.Close(root)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != m.Inode ||
		unix.Major(st.Dev) != m.DevMajor || unix.Minor(st.Dev) != m.DevMinor {
		return nil, fmt.Errorf("%s: %w", m.Path, errNotMapped)
	}
	// Reopening the O_PATH descriptor opens the inode just checked.
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(rfd), m.Path), nil
}

// openInRoot opens the regular file at path (relative to the target's
// root) for reading, resolved inside that root without following magic
// links; nil when there is none.
func openInRoot(fs FS, pid int, path string) *os.File {
	root, err := unix.Open(fs.pidPath(pid, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	fd, err := Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(rfd), path)
}
