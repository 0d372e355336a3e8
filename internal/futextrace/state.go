package futextrace

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"golang.org/x/sys/unix"
)

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
	uaddr, op uint64
	timed     bool
	time      uint64
}

// thread is one traced thread's events and pairing state.
type thread struct {
	tid                    int
	countFD, enterFD, exit int
	countID, enterID, exID uint64
	ring                   *ring
	hup                    bool // the thread exited: the ring is out of epoll
	enterOn, exitOn        bool

	pending bool
	call    pendingCall

	count0 uint64 // the counter at the previous Read
	last   uint64 // the counter at the previous period
	traced uint64 // entries traced since the previous Read
}

// state is everything the loop goroutine owns.
type state struct {
	pid     int
	f       formats
	opts    Options
	filter  string // "" when the kernel refused it
	epfd    int
	wake    int
	threads map[int]*thread
	agg     *aggregate

	// duty cycle
	share       float64 // the windows' share of each period
	periodStart time.Time
	windowOpen  bool
	windowEnd   time.Time
	tails       map[int]bool // threads whose exit stays on for a traced call

	// batch
	batchStart                  time.Time
	goneCounts                  map[int]uint64 // exact calls of threads closed since the previous Read
	goneTraced                  map[int]uint64
	lost, bad, throttled        uint64
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
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, fmt.Errorf("futextrace: epoll: %w", err)
	}
	if userRegs.mask == 0 {
		opts.StackEvery = 0
	}
	return &state{
		pid: pid, f: f, opts: opts, filter: kernelFilter(), epfd: epfd, wake: wake,
		threads: map[int]*thread{}, agg: newAggregate(opts.MaxDurations, opts.MaxStacks),
		share: 1, tails: map[int]bool{}, batchStart: time.Now(),
		goneCounts: map[int]uint64{}, goneTraced: map[int]uint64{},
	}, nil
}

// sync opens the new threads' events and closes the gone ones'.
func (s *state) sync(tids []int) error {
	want := make(map[int]bool, len(tids))
	var firstErr error
	for _, tid := range tids {
		want[tid] = true
		if s.threads[tid] != nil {
			continue
		}
		th, err := s.open(tid)
		if err != nil {
			if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
				continue // the thread exited in between
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		s.threads[tid] = th
	}
	for tid, th := range s.threads {
		if !want[tid] {
			s.close(th)
		}
	}
	return firstErr
}

// open opens a thread's three events and its ring.
func (s *state) open(tid int) (th *thread, err error) {
	th = &thread{tid: tid, countFD: -1, enterFD: -1, exit: -1}
	defer func() {
		if err != nil {
			s.release(th)
		}
	}()
	ringBytes := uint32(s.opts.RingPages * unix.Getpagesize())
	if th.exit, err = openEvent(s.f.exit.id, tid, -1, baseSampleType, 1, 0, 0, ringBytes/2); err != nil {
		return th, s.perfError(err)
	}
	if th.ring, err = mapRing(th.exit, s.opts.RingPages); err != nil {
		return th, err
	}
	if th.enterFD, err = openEvent(s.f.enter.id, tid, th.exit, baseSampleType, 1, 0, 0, 0); err != nil {
		return th, s.perfError(err)
	}
	countType, period := uint64(0), uint64(0)
	if s.opts.StackEvery > 0 {
		countType, period = stackSampleType, s.opts.StackEvery
	}
	if th.countFD, err = openEvent(s.f.enter.id, tid, -1, countType, period, userRegs.mask, s.opts.StackSize, 0); err != nil {
		return th, s.perfError(err)
	}
	if err = s.applyFilter(th); err != nil {
		return th, err
	}
	for _, fd := range []int{th.enterFD, th.countFD} {
		if fd == th.countFD && period == 0 {
			continue
		}
		if err = ioctl(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, uintptr(th.exit)); err != nil {
			return th, fmt.Errorf("futextrace: PERF_EVENT_IOC_SET_OUTPUT: %w", err)
		}
	}
	if th.exID, err = eventID(th.exit); err == nil {
		if th.enterID, err = eventID(th.enterFD); err == nil {
			th.countID, err = eventID(th.countFD)
		}
	}
	if err != nil {
		return th, fmt.Errorf("futextrace: PERF_EVENT_IOC_ID: %w", err)
	}
	if err = ioctl(th.countFD, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		return th, fmt.Errorf("futextrace: enable: %w", err)
	}
	if err = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, th.exit, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(tid)}); err != nil {
		return th, fmt.Errorf("futextrace: epoll: %w", err)
	}
	if s.share >= 1 || s.windowOpen {
		s.enable(th)
	}
	return th, nil
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

func (s *state) enable(th *thread) {
	if !th.exitOn {
		// The group flag turns the exit and the enter events on at once.
		if ioctl(th.exit, unix.PERF_EVENT_IOC_ENABLE, unix.PERF_IOC_FLAG_GROUP) == nil {
			th.exitOn, th.enterOn = true, true
		}
		return
	}
	if !th.enterOn && ioctl(th.enterFD, unix.PERF_EVENT_IOC_ENABLE, 0) == nil {
		th.enterOn = true
	}
}

// close stops tracing a thread, keeping its last count for the next Read.
func (s *state) close(th *thread) {
	if th.ring != nil {
		s.drain(th)
	}
	if v, ok := readCount(th.countFD); ok {
		s.goneCounts[th.tid] += v - th.count0
	}
	s.goneTraced[th.tid] += th.traced
	s.release(th)
	delete(s.threads, th.tid)
	delete(s.tails, th.tid)
}

// release closes a thread's fds and unmaps its ring.
func (s *state) release(th *thread) {
	if th.exit >= 0 && !th.hup {
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, th.exit, nil)
	}
	th.ring.unmap()
	th.ring = nil
	for _, fd := range []*int{&th.countFD, &th.enterFD, &th.exit} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (s *state) closeAll() {
	for _, th := range s.threads {
		s.release(th)
	}
	clear(s.threads)
	unix.Close(s.epfd)
	unix.Close(s.wake)
}

// ready handles an epoll event of a thread's ring.
func (s *state) ready(tid int, events uint32) {
	th := s.threads[tid]
	if th == nil {
		return
	}
	s.drain(th)
	if events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 && !th.hup {
		// The thread exited: its ring says so forever; leave epoll.
		th.hup = true
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, th.exit, nil)
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
	case th.exID:
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
	if !ok1 || !ok2 || !ok3 {
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
	th.call = pendingCall{uaddr: uaddr, op: op, timed: utime != 0, time: r.time}
}

func (s *state) stack(th *thread, r record) {
	uaddr, ok := s.f.uaddr.get(r.raw)
	if !ok || len(r.regs) != userRegs.n {
		return
	}
	if op, ok := s.f.op.get(r.raw); ok && !s.kernelFilter && !blocking(op) {
		return
	}
	regs := procfs.Regs{PC: r.regs[userRegs.pc], SP: r.regs[userRegs.sp], BP: r.regs[userRegs.bp], HaveBP: true}
	s.agg.stack(uaddr, th.tid, regs, r.stack)
}
