package procfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrNoOpenat2 means the kernel lacks openat2 (Linux 5.6+). ctprof will
// not open files in a target's directories without it rather than follow
// links its owner may have planted.
var ErrNoOpenat2 = errors.New("the kernel lacks openat2 (Linux 5.6+), which ctprof needs to open files inside a target safely")

// Openat2 wraps unix.Openat2 for lookups in a target's directories: it
// retries EINTR and EAGAIN (the kernel's answer when a rename raced a
// RESOLVE_IN_ROOT lookup) and names ENOSYS as ErrNoOpenat2.
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, path, how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS):
			return -1, ErrNoOpenat2
		case (errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN)) && tries < 10:
			continue
		}
		return -1, err
	}
}
