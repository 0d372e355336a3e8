//go:build !amd64

package procfs

// The legacy calls do not exist here; -100 never matches a system call.
const (
	sysEpollWait = -100
	sysPoll      = -101
	sysSelect    = -102
)
