package procfs

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestProcessRole(t *testing.T) {
	for in, want := range map[string]string{
		"postgres: app shop 10.0.0.7(54104) UPDATE waiting": "postgres: app shop",
		"postgres: checkpointer                          ":  "postgres: checkpointer",
		"postgres: autovacuum launcher\x00\x00\x00":         "postgres: autovacuum launcher",
		"nginx: worker process":                             "nginx: worker process",
		"nginx: master process /usr/sbin/nginx -c /etc/x":   "nginx: master process",
		"php-fpm: pool www":                                 "php-fpm: pool www",
		"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/d":   "",
		"java\x00-Dx=a: b\x00Main":                          "",
		"redis-server *:6379":                               "",
		"x: \x1bred \x7fbold":                               "x: ?red ?bold",
		"":                                                  "",
	} {
		assert.Equal(t, want, ProcessRole([]byte(in)), "%q", in)
	}
	long := ProcessRole([]byte("srv: " + string(make([]byte, 0)) + "aaaaaaaaaa bbbbbbbbbb cccccccccc dddddddddd eeeeeeeeee ffffffffff gggggggggg"))
	assert.LessOrEqual(t, len(long), maxRoleBytes)
}

func TestParentOfStat(t *testing.T) {
	pp, ok := parentOfStat([]byte("42 (a) b) c) S 7 42 42 0 -1"))
	assert.True(t, ok)
	assert.Equal(t, 7, pp)
	_, ok = parentOfStat([]byte("42 (trunc"))
	assert.False(t, ok)
}

func TestEventSetOf(t *testing.T) {
	links := map[int]string{3: "anon_inode:[signalfd]", 4: "pipe:[77]", 5: "socket:[99]", 6: "anon_inode:[eventfd]", 7: "anon_inode:[eventpoll]", 8: "/dev/pts/1"}
	link := func(fd int) string { return links[fd] }
	info := func(fds ...string) []byte {
		b := "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1057\n"
		for _, fd := range fds {
			b += "tfd:        " + fd + " events:       19 data:                0  pos:0 ino:2a0e sdev:d\n"
		}
		return []byte(b)
	}
	assert.Equal(t, EventsOwn, eventSetOf(info("3", "4"), link), "a latch: signalfd and pipe")
	assert.Equal(t, EventsOwn, eventSetOf(info("6"), link))
	assert.Equal(t, EventsOwn, eventSetOf(info(), link), "an empty set waits for its timeout alone")
	assert.Equal(t, EventsOwn, eventSetOf(info("3", "9"), link), "a descriptor closed meanwhile watches nothing")
	assert.Equal(t, EventsOutside, eventSetOf(info("3", "5"), link), "a socket")
	assert.Equal(t, EventsOutside, eventSetOf(info("7"), link), "a nested set may hold sockets")
	assert.Equal(t, EventsOutside, eventSetOf(info("8"), link), "a terminal")
	assert.Equal(t, EventsOutside, eventSetOf([]byte("tfd: x events: 1\n"), link), "not what the kernel prints")
}

// EpollSet reads a live epoll set of this process: one of an eventfd is
// the program's own, one with a socket is the outside world's.
func TestEpollSetLive(t *testing.T) {
	fs := NewFS("/proc")
	own, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(own)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(efd)
	require.NoError(t, unix.EpollCtl(own, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}))
	assert.Equal(t, EventsOwn, fs.EpollSet(os.Getpid(), own))

	out, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(out)
	sock, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(sock)
	require.NoError(t, unix.EpollCtl(out, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}))
	require.NoError(t, unix.EpollCtl(out, unix.EPOLL_CTL_ADD, sock, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(sock)}))
	assert.Equal(t, EventsOutside, fs.EpollSet(os.Getpid(), out))

	assert.Equal(t, EventsUnread, fs.EpollSet(os.Getpid(), efd), "not an epoll set")
	assert.Equal(t, EventsUnread, fs.EpollSet(os.Getpid(), 1<<20), "no such descriptor")
}

// Descendants finds a shell's children and grandchildren, by the
// children files and by the parent pids alike.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & (sleep 30 & wait) & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group we made: the shell and its children
		_ = cmd.Wait()
	}()
	fs := NewFS("/proc")
	var kids []int
	require.Eventually(t, func() bool {
		kids, _, _ = fs.Descendants(cmd.Process.Pid, 0)
		return len(kids) >= 3
	}, 10*time.Second, 10*time.Millisecond, "sh's children: a sleep, a subshell and its sleep")
	byParent, truncated, err := fs.descendantsByParent(cmd.Process.Pid, 100)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.ElementsMatch(t, kids, byParent)
	some, truncated, err := fs.Descendants(cmd.Process.Pid, 1)
	require.NoError(t, err)
	assert.True(t, truncated)
	assert.Len(t, some, 1)
	assert.Equal(t, "/usr/bin/sleep", fs.Executable(kids[len(kids)-1]))
	_, _, err = fs.Descendants(1<<30, 0)
	assert.ErrorIs(t, err, ErrProcessGone)
}

func FuzzProcessRole(f *testing.F) {
	f.Add([]byte("postgres: app shop 10.0.0.7(54104) UPDATE"))
	f.Add([]byte("nginx: worker process\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := ProcessRole(b)
		if len(r) > maxRoleBytes {
			t.Fatalf("role of %d bytes", len(r))
		}
		for i := 0; i < len(r); i++ {
			if r[i] < 0x20 || r[i] > 0x7e {
				t.Fatalf("unprintable byte in %q", r)
			}
		}
	})
}

func FuzzEventSetOf(f *testing.F) {
	f.Add([]byte("pos:\t0\ntfd:        3 events:       19 data: 0\ntfd: 5 events: 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		links := 0
		e := eventSetOf(b, func(int) string { links++; return "pipe:[1]" })
		if e != EventsOwn && e != EventsOutside {
			t.Fatalf("eventSetOf = %v", e)
		}
		if links > maxEpollWatched {
			t.Fatalf("%d links read", links)
		}
	})
}
