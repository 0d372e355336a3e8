package procfs

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// EventSet says what an epoll set a blocked thread waits on watches: the
// outside world, or only the program's own wake-ups. An event loop that
// watches sockets waits for its clients; a set of only a signalfd and a
// pipe (PostgreSQL's latch) is how a process sleeps until another thread
// or process of its program wakes it, the way a condition variable is.
type EventSet uint8

// Event sets.
const (
	// EventsUnread: not an epoll wait, or its set could not be read.
	EventsUnread EventSet = iota
	// EventsOutside: the set watches at least one socket, terminal,
	// device, file or descriptor ctprof cannot place (a nested epoll set,
	// inotify): a wait for the outside world.
	EventsOutside
	// EventsOwn: the set watches nothing, or only pipes, eventfds,
	// signalfds and timerfds: the program's own wake-ups and timers.
	EventsOwn
)

func (e EventSet) String() string {
	switch e {
	case EventsOutside:
		return "outside"
	case EventsOwn:
		return "own"
	}
	return ""
}

// EpollWait reports the system calls that wait on an epoll set, whose
// set EpollSet reads (its first argument).
func EpollWait(nr int) bool {
	return nr == unix.SYS_EPOLL_WAIT || nr == unix.SYS_EPOLL_PWAIT || nr == unix.SYS_EPOLL_PWAIT2
}

// maxEpollWatched bounds the descriptors of one set ctprof looks at: a set
// of more is an event loop's, and is outside once one socket is found.
const maxEpollWatched = 4096

// EpollSet reads what process pid's epoll descriptor epfd watches, from
// /proc/<pid>/fdinfo/<epfd> ("tfd:" lines) and the links of the watched
// descriptors in fd/ (read as links, never followed). It stops at the
// first descriptor of the outside world. EventsUnread when epfd is not an
// epoll set any more, or the files cannot be read.
func (f FS) EpollSet(pid, epfd int) EventSet {
	if epfd < 0 || epfd > 1<<30 {
		return EventsUnread
	}
	fd := strconv.Itoa(epfd)
	if l, err := os.Readlink(f.pidPath(pid, "fd", fd)); err != nil || l != "anon_inode:[eventpoll]" {
		return EventsUnread
	}
	b, err := f.readFile(f.pidPath(pid, "fdinfo", fd))
	if err != nil {
		return EventsUnread
	}
	return eventSetOf(b, func(tfd int) string {
		l, err := os.Readlink(f.pidPath(pid, "fd", strconv.Itoa(tfd)))
		if err != nil {
			return "" // closed meanwhile: it watches nothing now
		}
		return l
	})
}

// eventSetOf classes an epoll fdinfo text by the links of its watched
// descriptors (link returns "" for one that is gone).
func eventSetOf(fdinfo []byte, link func(int) string) EventSet {
	n := 0
	for len(fdinfo) > 0 {
		var line []byte
		line, fdinfo, _ = bytes.Cut(fdinfo, []byte{'\n'})
		rest, ok := bytes.CutPrefix(line, []byte("tfd:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			continue
		}
		tfd, err := strconv.Atoi(string(f[0]))
		if err != nil || tfd < 0 {
			return EventsOutside // not what the kernel prints: do not claim own
		}
		if n++; n > maxEpollWatched {
			return EventsOutside
		}
		if l := link(tfd); l != "" && !ownDescriptor(l) {
			return EventsOutside
		}
	}
	return EventsOwn
}

// ownDescriptor reports a descriptor link that only the program itself
// (or the kernel's clock and signals) makes ready.
func ownDescriptor(link string) bool {
	switch link {
	case "anon_inode:[eventfd]", "anon_inode:[signalfd]", "anon_inode:[timerfd]":
		return true
	}
	return len(link) > len("pipe:[") && link[:len("pipe:[")] == "pipe:["
}
