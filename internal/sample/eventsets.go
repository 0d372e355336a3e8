package sample

import (
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Event sets. A native thread blocked in epoll_wait waits for whatever its
// set watches: an event loop's sockets (its clients: idle), or only the
// program's own pipes, eventfds and signalfds (another thread or process
// of the program must wake it, as a condition's waiter). The wait rule
// needs to know which (nativewait's ownEventsVerdict); the set is read
// from /proc/<pid>/fdinfo, once per wait (perWait).

// maxEventReadsPerTick bounds the sets read afresh in one sample (each is
// two or three system calls); the rest are read in the next samples.
const maxEventReadsPerTick = 2048

// readEventSets fills Events for the threads of pid blocked in an epoll
// wait.
func (s *Sampler) readEventSets(threads []snapshot.OSThread) {
	if s.target.Kind != snapshot.KindNative {
		return
	}
	defer s.events.turn()
	var bySet map[uint64]procfs.EventSet // this sample's sets, by epfd
	fresh := 0
	for i := range threads {
		t := &threads[i]
		t.Events = procfs.EventsUnread
		if !t.Sleeping() || !procfs.EpollWait(t.Syscall) {
			continue
		}
		epfd := t.SyscallArgs[0]
		if e, ok := s.events.get(t, epfd); ok {
			t.Events = e
		} else if e, ok := bySet[epfd]; ok {
			t.Events = e
		} else if fresh < maxEventReadsPerTick {
			fresh++
			t.Events = s.fs.EpollSet(s.opts.PID, int(int32(epfd)))
			if bySet == nil {
				bySet = map[uint64]procfs.EventSet{}
			}
			bySet[epfd] = t.Events
		}
		if t.Events != procfs.EventsUnread {
			s.events.keep(t, epfd, t.Events)
		}
	}
}
