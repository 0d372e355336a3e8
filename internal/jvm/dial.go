package jvm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asUser runs fn with the effective user, group and groups of the target
// (uid, gid) when ctprof runs as root, so that what fn creates belongs to
// the target's user and what fn may touch is what that user may touch.
// HotSpot also compares the peer credentials of an attach connection with
// its own (JDK 8 rejects root), taken at connect time. Only the one OS
// thread that runs fn changes its credentials: Go's syscall.Setuid would
// change every thread of the process. fn must not start goroutines that
// rely on those credentials.
func asUser(uid, gid int, fn func() error) error {
	if os.Geteuid() != 0 || uid == 0 {
		return fn()
	}
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err, restored := runWithCredentials(uid, gid, fn)
		if restored {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine ends locked and the runtime retires the
		// thread with its changed credentials.
		ch <- err
	}()
	return <-ch
}

// runWithCredentials runs on a locked OS thread. Raw setres[ug]id and
// setgroups affect the calling thread only (the C library and Go broadcast
// them to every thread; the kernel does not). The saved ids stay root, so
// the change can be undone; while the effective uid is not 0 the thread
// has no effective capabilities.
func runWithCredentials(uid, gid int, fn func() error) (err error, restored bool) {
	oldGID := unix.Getegid()
	oldGroups, err := unix.Getgroups()
	if err != nil {
		return fmt.Errorf("read the supplementary groups: %w", err), true
	}
	restore := func() bool {
		_, _, e1 := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0))
		_, _, e2 := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(oldGID), ^uintptr(0))
		e3 := setThreadGroups(oldGroups)
		return e1 == 0 && e2 == 0 && e3 == 0
	}
	if e := setThreadGroups([]int{gid}); e != 0 {
		return fmt.Errorf("switch to groups [%d]: %w", gid, e), restore()
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
		return fmt.Errorf("switch to group %d: %w", gid, e), restore()
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		return fmt.Errorf("switch to user %d: %w", uid, e), restore()
	}
	err = fn()
	return err, restore()
}

func setThreadGroups(groups []int) unix.Errno {
	gs := make([]uint32, len(groups))
	for k, g := range groups {
		gs[k] = uint32(g)
	}
	var p unsafe.Pointer
	if len(gs) > 0 {
		p = unsafe.Pointer(&gs[0])
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0)
	runtime.KeepAlive(gs)
	return e
}

// dialAs connects to the UNIX socket at path as uid:gid (see asUser).
func dialAs(ctx context.Context, path string, uid, gid int) (*os.File, error) {
	var conn *os.File
	err := asUser(uid, gid, func() error {
		var err error
		conn, err = connectUnix(ctx, path)
		return err
	})
	return conn, err
}

// connectUnix connects a non-blocking UNIX socket on the calling thread,
// retrying while the listener's backlog is full, until ctx ends. The
// socket is an *os.File, not a net.Conn: the runtime's poller serves it
// the same way (deadlines included), and package net, kept out of
// package jvm's imports, would hold the early dump's initializer back
// (net waits for vendored packages that Go initializes last).
func connectUnix(ctx context.Context, path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if !errors.Is(err, unix.EAGAIN) {
			break
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	// A non-blocking descriptor: NewFile registers it with the poller.
	return os.NewFile(uintptr(fd), path), nil
}
