package procfs

import "golang.org/x/sys/unix"

// System calls that exist only on some architectures (arm64 has just the
// p- and e- variants).
const (
	sysEpollWait = unix.SYS_EPOLL_WAIT
	sysPoll      = unix.SYS_POLL
	sysSelect    = unix.SYS_SELECT
)
