// Package procfs reads what ctprof needs from a Linux /proc tree: per-thread
// scheduling state and counters, futex waits named by ELF symbols, a
// process's TCP connections and the clients on its Unix sockets, and
// host-wide context.
//
// Every reader is a method on an FS rooted at a mount point, so tests can
// point it at a fixture tree, and the per-tick thread sweep is written to
// allocate nothing per thread (see ThreadReader). A thread or process that
// vanishes while it is read is normal: it is left out, never an error.
package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Errors callers act on.
var (
	// ErrProcessGone means the process does not exist (any more).
	ErrProcessGone = errors.New("process not found")
	// ErrPermission means ctprof may not read the file; run as the target's
	// user or root.
	ErrPermission = fs.ErrPermission
)

// FS is a /proc tree.
type FS struct {
	root string
}

// NewFS returns the /proc tree mounted at root ("/proc" on a live system).
func NewFS(root string) FS {
	if root == "" {
		root = "/proc"
	}
	return FS{root: root}
}

// Root is the mount point the FS reads.
func (f FS) Root() string { return f.root }

// Path joins elements below the root, e.g. Path("1234", "status").
func (f FS) Path(elem ...string) string {
	return filepath.Join(append([]string{f.root}, elem...)...)
}

func (f FS) pidPath(pid int, elem ...string) string {
	return filepath.Join(append([]string{f.root, strconv.Itoa(pid)}, elem...)...)
}

// Exists reports whether process pid exists.
func (f FS) Exists(pid int) bool {
	_, err := os.Stat(f.pidPath(pid))
	return err == nil
}

// readFile reads a small /proc file, mapping "no such process" to
// ErrProcessGone and permission errors to ErrPermission.
func (f FS) readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, classify(path, err)
	}
	return b, nil
}

// classify turns the errors /proc gives for a vanished process (ENOENT,
// ESRCH) into ErrProcessGone, keeping the path as context.
func classify(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("read %s: %w", path, ErrProcessGone)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("read %s: %w", path, ErrPermission)
	}
	return fmt.Errorf("read %s: %w", path, err)
}
