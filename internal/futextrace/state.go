package futextrace

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
	"golang.org/x/sys/unix"
)

var pageSize = unix.Getpagesize()

// regsLayout is the user registers a stack sample asks for: the mask of
// PERF_SAMPLE_REGS_USER and the registers' places in the sample (the
// kernel writes them in the mask's bit order).
type regsLayout struct {
	mask       uint64
	n          int
	pc, sp, bp int
}

// userRegs is the layout for this architecture; mask 0 where stacks are
// not supported.
var userRegs = func() regsLayout {
	switch runtime.GOARCH {
	case "amd64": // PERF_REG_X86_BP 6, SP 7, IP 8
		return regsLayout{mask: 1<<6 | 1<<7 | 1<<8, n: 3, bp: 0, sp: 1, pc: 2}
	case "arm64": // PERF_REG_ARM64_X29 29 (frame pointer), SP 31, PC 32
		return regsLayout{mask: 1<<29 | 1<<31 | 1<<32, n: 3, bp: 0, sp: 1, pc: 2}
	}
	return regsLayout{}
}()

// pendingCall is a traced call's entry waiting for its exit.
type pendingCall struct {
	uaddr, op, val uint64
	timed          bool
	time           uint64
	pid            int // the caller's process (its thread group)
}

// thread is one traced thread: its pairing state, its counts, and while
// it is attached its events and ring.
type thread struct {
	tid int
	// The events: countFD counts (and samples stacks), enterFD and exit
	// (the group leader and the ring's owner) sample every call, tail is
	// a second sys_exit_futex event on only while a call traced before
	// the others went away has not returned: it wakes the reader at its
	// first record, that call's exit.
	countFD, enterFD, exit, tail   int
	countID, enterID, exID, tailID uint64
	ring                           *ring
	polled                         int  // the fd in epoll, -1 for none
	hup                            bool // the thread exited
	attached                       bool // every event is open
	tailOnly                       bool // only tail and the ring are left

	pending bool
	call    pendingCall

	// Since the previous Read: calls counted, entries traced, time
	// attached (the counts are exact for a thread attached all along).
	counted, traced uint64
	attachedFor     time.Duration
	attachedAt      time.Time
	count0          uint64 // the counter when last read
	// since is when Sync added the thread, until when it removed it: the
	// time its counts are scaled to.
	since, until time.Time
}

// state is everything the loop goroutine owns.
type state struct {
	pid    int
	f      formats
	opts   Options
	filter string // "" when the kernel refused it
	epfd   int
	wake   int
	timer  int // a timerfd for the duty cycle's deadlines
	// realtime: the reader's thread runs at SCHED_FIFO 1.
	realtime bool
	threads  map[int]*thread
	agg      *aggregate

	// duty cycle (duty.go)
	high        bool    // the events are attached in windows only
	share       float64 // the windows' share of the time
	period      time.Duration
	periodStart time.Time
	windowOpen  bool
	windowStart time.Time
	windowEnd   time.Time
	windowCalls float64   // calls counted in windows, decayed
	lowRate     float64   // the calls a second at low rates, averaged
	opened      []*thread // threads whose events are open, to be turned on at enableAt
	enableAt    time.Time
	windowTime  time.Duration // and the windows' time

	// batch
	batchStart                  time.Time
	gone                        []thread // threads closed since the previous Read: their counts
	lost, bad, throttled        uint64
	tailDropped                 uint64
	cpu0                        time.Duration
	kernelFilter, filterChecked bool
}

func newState(pid int, f formats, opts Options) (*state, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("futextrace: epoll: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("futextrace: eventfd: %w", err)
	}
	timer, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1})
	}
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, timer, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -2})
	}
	if err != nil {
		for _, fd := range []int{epfd, wake, timer} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, fmt.Errorf("futextrace: epoll: %w", err)
	}
	if userRegs.mask == 0 {
		opts.StackEvery = 0
	}
	return &state{
		pid: pid, f: f, opts: opts, filter: kernelFilter(), epfd: epfd, wake: wake, timer: timer,
		threads: map[int]*thread{}, agg: newAggregate(opts.MaxDurations, opts.MaxStacks),
		share: 1, batchStart: time.Now(),
	}, nil
}

// sync starts tracing the new threads and stops tracing the gone ones.
func (s *state) sync(tids []int) error {
	want := make(map[int]bool, len(tids))
	var firstErr error
	for _, tid := range tids {
		want[tid] = true
		if s.threads[tid] != nil {
			continue
		}
		th := &thread{tid: tid, countFD: -1, enterFD: -1, exit: -1, tail: -1, polled: -1, since: time.Now()}
		if !s.high || s.windowOpen {
			if err := s.attach(th); err != nil {
				if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
					continue // the thread exited in between
				}
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
		}
		s.threads[tid] = th
	}
	for tid, th := range s.threads {
		if !want[tid] {
			s.detach(th, true)
			th.until = time.Now()
			s.gone = append(s.gone, *th)
			delete(s.threads, tid)
		}
	}
	return firstErr
}

// attach opens a thread's events and ring, and turns them on.
func (s *state) attach(th *thread) error {
	err := s.openEvents(th)
	if err == nil {
		err = s.enableEvents(th)
	}
	if err != nil {
		s.release(th)
	}
	return err
}

// openEvents opens a thread's events, off, and maps its ring.
func (s *state) openEvents(th *thread) (err error) {
	tid := th.tid
	ringBytes := uint32(s.opts.RingPages * pageSize)
	if th.exit, err = openEvent(s.f.exit.id, tid, -1, baseSampleType, 1, 0, 0, ringBytes/2, false); err != nil {
		return s.perfError(err)
	}
	if th.ring, err = mapRing(th.exit, s.opts.RingPages); err != nil {
		return err
	}
	if th.enterFD, err = openEvent(s.f.enter.id, tid, th.exit, baseSampleType, 1, 0, 0, 0, false); err != nil {
		return s.perfError(err)
	}
	if th.tail, err = openEvent(s.f.exit.id, tid, -1, baseSampleType, 1, 0, 0, 0, true); err != nil {
		return s.perfError(err)
	}
	countType, period := uint64(0), uint64(0)
	if s.opts.StackEvery > 0 {
		countType, period = stackSampleType, s.opts.StackEvery
	}
	if th.countFD, err = openEvent(s.f.enter.id, tid, -1, countType, period, userRegs.mask, s.opts.StackSize, 0, false); err != nil {
		return s.perfError(err)
	}
	if err = s.applyFilter(th); err != nil {
		return err
	}
	for _, fd := range []int{th.enterFD, th.tail, th.countFD} {
		if fd == th.countFD && period == 0 {
			continue
		}
		if err = ioctl(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, uintptr(th.exit)); err != nil {
			return fmt.Errorf("futextrace: PERF_EVENT_IOC_SET_OUTPUT: %w", err)
		}
	}
	if th.exID, err = eventID(th.exit); err == nil {
		if th.enterID, err = eventID(th.enterFD); err == nil {
			if th.tailID, err = eventID(th.tail); err == nil {
				th.countID, err = eventID(th.countFD)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("futextrace: PERF_EVENT_IOC_ID: %w", err)
	}
	return s.poll(th, th.exit)
}

// enableEvents turns an opened thread's events on: the exit event with
// the enter one (the group), then the counter, so a call counted has its
// entry traced. The time counted from is taken once the counter is on.
func (s *state) enableEvents(th *thread) error {
	err := ioctl(th.exit, unix.PERF_EVENT_IOC_ENABLE, unix.PERF_IOC_FLAG_GROUP)
	if err == nil {
		err = ioctl(th.countFD, unix.PERF_EVENT_IOC_ENABLE, 0)
	}
	if err != nil {
		return fmt.Errorf("futextrace: enable: %w", err)
	}
	th.attached, th.attachedAt, th.count0, th.pending = true, time.Now(), 0, false
	return nil
}

// poll makes fd the one epoll watches for the thread's ring.
func (s *state) poll(th *thread, fd int) error {
	if th.polled >= 0 {
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, th.polled, nil)
		th.polled = -1
	}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(th.tid)}); err != nil {
		return fmt.Errorf("futextrace: epoll: %w", err)
	}
	th.polled = fd
	return nil
}

// detach closes a thread's events, keeping its counts. Any open syscall
// tracepoint event, even a disabled one, sends every system call of every
// thread through the kernel's slow path, and any perf event of a thread
// costs it at each context switch, so between windows nothing stays open
// but, for a thread inside a traced call (unless all), the tail event
// and the ring it writes to.
func (s *state) detach(th *thread, all bool) {
	s.disableEvents(th, all)
	s.closeEvents(th, all)
}

// disableEvents turns a thread's events off: the counter (its count and
// time are kept), the enter event, and once a call still inside the
// kernel has the tail event on for its exit, the exit event. A call's
// exit may so be read twice; the second finds nothing pending.
func (s *state) disableEvents(th *thread, all bool) {
	if !th.attached {
		return
	}
	_ = ioctl(th.countFD, unix.PERF_EVENT_IOC_DISABLE, 0)
	off := time.Now()
	if v, ok := readCount(th.countFD); ok {
		th.counted += v - th.count0
	}
	th.attachedFor += off.Sub(th.attachedAt)
	_ = ioctl(th.enterFD, unix.PERF_EVENT_IOC_DISABLE, 0)
	s.drain(th)
	if th.pending && !th.hup && !all && ioctl(th.tail, unix.PERF_EVENT_IOC_ENABLE, 0) == nil && s.poll(th, th.tail) == nil {
		th.tailOnly = true
	}
	_ = ioctl(th.exit, unix.PERF_EVENT_IOC_DISABLE, unix.PERF_IOC_FLAG_GROUP)
	th.attached = false
}

// closeEvents closes a disabled thread's events but a tail still needed.
// (Epoll forgets a fd only when its file goes, which the ring's mapping
// holds: release takes it out of epoll before closing.)
func (s *state) closeEvents(th *thread, all bool) {
	s.drain(th)
	if th.tailOnly && !all && th.pending {
		for _, fd := range []*int{&th.countFD, &th.enterFD, &th.exit} {
			if *fd >= 0 {
				unix.Close(*fd)
				*fd = -1
			}
		}
		// An exit the exit event wrote before it went off.
		s.drain(th)
		if th.pending {
			return
		}
	}
	th.pending = false
	s.release(th)
}

// release closes a thread's fds and unmaps its ring.
func (s *state) release(th *thread) {
	if th.polled >= 0 {
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, th.polled, nil)
		th.polled = -1
	}
	th.ring.unmap()
	th.ring = nil
	for _, fd := range []*int{&th.countFD, &th.enterFD, &th.tail, &th.exit} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	th.attached, th.tailOnly = false, false
}

func (s *state) closeAll() {
	for _, th := range s.threads {
		s.release(th)
	}
	clear(s.threads)
	unix.Close(s.epfd)
	unix.Close(s.wake)
	unix.Close(s.timer)
}

// applyFilter sets the blocking-ops filter on the thread's enter events;
// the first refusal turns to filtering in user space for good.
func (s *state) applyFilter(th *thread) error {
	if s.filter == "" {
		return nil
	}
	for _, fd := range []int{th.enterFD, th.countFD} {
		if err := setFilter(fd, s.filter); err != nil {
			if s.filterChecked {
				return fmt.Errorf("futextrace: PERF_EVENT_IOC_SET_FILTER: %w", err)
			}
			s.filter = ""
			s.filterChecked = true
			s.kernelFilter = false
			return nil
		}
	}
	s.filterChecked, s.kernelFilter = true, true
	return nil
}

// perfError turns perf_event_open's refusals into sentences.
func (s *state) perfError(err error) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return errNoPrivilege()
	case errors.Is(err, unix.ESRCH), errors.Is(err, unix.ENOENT):
		return err
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return fmt.Errorf("futextrace: out of file descriptors (3 per traced thread; raise ulimit -n): %w", err)
	}
	return &Error{Reason: ReasonPerf, Msg: fmt.Sprintf("perf_event_open on the futex tracepoints failed: %v", err)}
}

// ready handles an epoll event of a thread's ring.
func (s *state) ready(tid int, events uint32) {
	th := s.threads[tid]
	if th == nil {
		return
	}
	s.drain(th)
	if th.tailOnly && !th.pending {
		s.detach(th, false)
	}
	if events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 && !th.hup {
		// The thread exited: its ring says so forever; leave epoll.
		th.hup = true
		if th.polled >= 0 {
			_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, th.polled, nil)
			th.polled = -1
		}
	}
}

// drain reads a thread's ring and pairs its records.
func (s *state) drain(th *thread) {
	if th.ring == nil {
		return
	}
	s.bad += uint64(th.ring.drain(func(rec []byte) { s.handle(th, rec) }))
}

func (s *state) handle(th *thread, b []byte) {
	r, ok := parseRecord(b, th.countID, userRegs.n)
	if !ok {
		s.bad++
		return
	}
	switch r.typ {
	case recordLost:
		if th.tailOnly && !th.pending {
			// The exits after the one the tail waited for, while the
			// reader had not yet closed it: nothing needed was lost.
			s.tailDropped += r.lost
			return
		}
		s.lost += r.lost
		th.pending = false // what was lost may be this call's exit
		return
	case recordThrottle:
		s.throttled++
		return
	case recordSample:
	default:
		return
	}
	if int(r.tid) != th.tid {
		return
	}
	switch r.id {
	case th.enterID:
		s.enter(th, r)
	case th.exID, th.tailID:
		ret, ok := s.f.ret.get(r.raw)
		if !ok {
			s.bad++
			return
		}
		if th.pending && r.time >= th.call.time {
			s.agg.complete(th.tid, th.call, int64(ret), time.Duration(r.time-th.call.time))
		}
		th.pending = false
	case th.countID:
		s.stack(th, r)
	}
}

func (s *state) enter(th *thread, r record) {
	uaddr, ok1 := s.f.uaddr.get(r.raw)
	op, ok2 := s.f.op.get(r.raw)
	utime, ok3 := s.f.utime.get(r.raw)
	val, ok4 := s.f.val.get(r.raw)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		s.bad++
		th.pending = false
		return
	}
	th.traced++
	if !s.kernelFilter && !blocking(op) {
		th.pending = false
		return
	}
	th.pending = true
	th.call = pendingCall{uaddr: uaddr, op: op, val: val, timed: utime != 0, time: r.time, pid: int(r.pid)}
}

func (s *state) stack(th *thread, r record) {
	uaddr, ok := s.f.uaddr.get(r.raw)
	if !ok || len(r.regs) != userRegs.n {
		return
	}
	op, ok := s.f.op.get(r.raw)
	if ok && !s.kernelFilter && !blocking(op) {
		return
	}
	regs := symbolize.Regs{PC: r.regs[userRegs.pc], SP: r.regs[userRegs.sp], BP: r.regs[userRegs.bp], HaveBP: true}
	s.agg.stack(wordOf(int(r.pid), uaddr, op), int(r.pid), th.tid, regs, r.stack)
}
