package jvm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// dialAs connects to the JVM's attach socket with the JVM's effective user
// and group when ctprof runs as root. HotSpot compares the peer credentials
// of the connection with its own (JDK 8 rejects root; newer JDKs accept
// it), and the credentials are taken at connect time. Only the one OS
// thread that connects changes its credentials: Go's syscall.Setuid would
// change every thread of the process.
func dialAs(ctx context.Context, path string, uid, gid int) (net.Conn, error) {
	if os.Geteuid() != 0 || uid == 0 {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		conn, err, restored := connectWithCredentials(ctx, path, uid, gid)
		if restored {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine ends locked and the runtime retires the
		// thread with its changed credentials.
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// connectWithCredentials runs on a locked OS thread.
func connectWithCredentials(ctx context.Context, path string, uid, gid int) (conn net.Conn, err error, restored bool) {
	oldGID := unix.Getegid()
	// Raw setres[ug]id affect the calling thread only (the C library and Go
	// broadcast them to every thread; the kernel does not). The saved ids
	// stay root, so the change can be undone.
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
		return nil, fmt.Errorf("switch to group %d: %w", gid, e), true
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
		_, _, e2 := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(oldGID), ^uintptr(0))
		return nil, fmt.Errorf("switch to user %d: %w", uid, e), e2 == 0
	}
	conn, err = connectUnix(ctx, path)
	_, _, e1 := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0))
	_, _, e2 := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(oldGID), ^uintptr(0))
	return conn, err, e1 == 0 && e2 == 0
}

// connectUnix connects a non-blocking UNIX socket on the calling thread,
// retrying while the listener's backlog is full, until ctx ends.
func connectUnix(ctx context.Context, path string) (net.Conn, error) {
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
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", path, err)
	}
	return conn, nil
}
