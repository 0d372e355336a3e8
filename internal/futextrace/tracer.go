// Package futextrace counts and times the futex waits of a process's
// threads from the kernel's syscall tracepoints (syscalls:sys_enter_futex
// and sys_exit_futex) through perf_event_open(2): no eBPF, no kernel
// module, no perf binary. It needs root or CAP_PERFMON; Open says plainly
// why it cannot trace (an *Error wrapping ErrUnavailable) so the caller
// falls back to sampling /proc.
//
// Per thread (pid = tid, cpu = -1) it opens four events, sharing one small
// ring (Options.RingPages, PERF_EVENT_IOC_SET_OUTPUT):
//
//   - a counter on sys_enter_futex, filtered in the kernel to the blocking
//     ops (FUTEX_WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI with
//     any flags), read with read(2); with Options.StackEvery it also
//     samples every Nth call's user registers and stack;
//   - sys_exit_futex (the group leader, the ring's owner) and
//     sys_enter_futex (filtered) sampling every event, paired in user space
//     per thread: a call's time is its exit's time less its entry's, keyed
//     by the futex word's address;
//   - a second sys_exit_futex event, the tail, on only while a call traced
//     before the others closed has not returned.
//
// At low rates (Options.MaxTracedRate) every call is counted and traced
// and the counts are exact. Tracing costs the target at every futex call,
// and an open syscall tracepoint, enabled or not, at every system call of
// the machine; at tens of thousands of waits a second it would cost a
// target a third of its throughput (BenchmarkTracerCost/all). So above
// that rate the events are opened for sampling windows only, a share of
// each Options.Period that keeps the traced calls near MaxTracedRate, and
// closed in between; each thread's calls are its windows' counts scaled to
// its time, and each traced call stands for its thread's calls over its
// traced ones (duty.go). A call that starts in a window is followed to its
// exit by the tail event, so long waits are timed as surely as short ones.
//
// One goroutine, locked to its OS thread (at SCHED_FIFO 1 when allowed,
// so the windows close on time), owns every event and ring; it waits in
// epoll(7) on the rings' watermarks, a timerfd for the windows and an
// eventfd for the callers' requests (Sync, Read, Close). Its thread's CPU
// time is the tracer's Cost.
package futextrace

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Options tune the tracer; the zero value is the default.
type Options struct {
	// MaxTracedRate is the blocking calls a second traced at most (on
	// average over a Period): above it the events are attached in sampling
	// windows only. Default 2,000, at which short_waits' 100,000 calls a
	// second lose no measurable throughput (BenchmarkTracerCost).
	MaxTracedRate float64
	// Period is the duty cycle's period: one sampling window each at high
	// rates (a shorter one when the reader is not realtime, see plan).
	// Default 500 ms.
	Period time.Duration
	// StackEvery samples the user registers and stack of every Nth blocking
	// call; 0 takes none.
	StackEvery uint64
	// StackSize is the stack bytes copied per sample. Default 8 KiB.
	StackSize uint32
	// RingPages is the data pages of each thread's ring (a power of two).
	// Default 8 (a thousand threads map 36 MB), or 16 with stacks.
	RingPages int
	// MaxDurations bounds the durations kept per futex (a uniform sample).
	// Default 512.
	MaxDurations int
	// MaxStacks bounds the stacks kept per futex per batch. Default 4.
	MaxStacks int
	// NoRealtime keeps the reader at the usual priority (see loop).
	NoRealtime bool
}

func (o Options) withDefaults() Options {
	if o.MaxTracedRate <= 0 {
		o.MaxTracedRate = 2000
	}
	if o.Period <= 0 {
		o.Period = 500 * time.Millisecond
	}
	if o.StackSize == 0 {
		o.StackSize = 8192
	}
	o.StackSize = (o.StackSize + 7) &^ 7
	if o.RingPages <= 0 {
		o.RingPages = 8
		if o.StackEvery > 0 {
			o.RingPages = 16
		}
	}
	for o.RingPages&(o.RingPages-1) != 0 {
		o.RingPages++
	}
	if o.MaxDurations <= 0 {
		o.MaxDurations = 512
	}
	if o.MaxStacks <= 0 {
		o.MaxStacks = 4
	}
	return o
}

// Tracer traces one process's threads. Its methods are safe for
// concurrent use.
type Tracer struct {
	pid  int
	wake int // eventfd the loop waits on with the rings
	done chan struct{}
	st   *state

	mu     sync.Mutex
	queue  []request
	closed bool // the loop has ended: wake is closed
}

type request struct {
	kind  int // reqSync, reqRead, reqClose
	tids  []int
	reply chan reply
}

type reply struct {
	err   error
	batch Batch
}

const (
	reqSync = iota
	reqRead
	reqClose
)

// Open starts tracing process pid's threads (those /proc/<pid>/task lists
// now; Sync adds later ones). Errors that mean tracing cannot work here
// wrap ErrUnavailable.
func Open(pid int, opts Options) (*Tracer, error) {
	f, err := findTracefs()
	if err != nil {
		return nil, err
	}
	tids, err := listTasks(pid)
	if err != nil {
		return nil, err
	}
	st, err := newState(pid, f, opts.withDefaults())
	if err != nil {
		return nil, err
	}
	t := &Tracer{pid: pid, wake: st.wake, done: make(chan struct{}), st: st}
	started := make(chan error, 1)
	go t.loop(tids, started)
	if err := <-started; err != nil {
		<-t.done
		return nil, err
	}
	return t, nil
}

func listTasks(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, fmt.Errorf("futextrace: process %d: %w", pid, err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// loop is the one goroutine that touches the events and rings.
func (t *Tracer) loop(tids []int, started chan<- error) {
	defer close(t.done)
	runtime.LockOSThread()
	st := t.st
	// The windows' cost to the target is bounded only if they close on
	// time, and a tail event floods until the reader closes it: on a busy
	// machine a reader at the usual priority runs late by tens of
	// milliseconds. So the reader's thread asks for the lowest realtime
	// priority (SCHED_FIFO 1; root or CAP_SYS_NICE): it runs when its
	// timer fires, for the few microseconds its work takes. The thread
	// goes back to the usual policy before the Go scheduler gets it back.
	// (Ending the goroutine locked would end the thread instead, and a
	// child another goroutine started from that thread with Pdeathsig
	// would be killed with it.)
	if !st.opts.NoRealtime {
		st.realtime = unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0) == nil
	}
	defer func() {
		if st.realtime && unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0) != nil {
			return // still realtime: let the thread end with the goroutine
		}
		runtime.UnlockOSThread()
	}()
	defer func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		st.closeAll()
	}()
	st.cpu0 = threadCPU()
	if err := st.sync(tids); err != nil {
		started <- err
		return
	}
	if len(st.threads) == 0 {
		started <- fmt.Errorf("futextrace: process %d has no thread to trace (it exited)", t.pid)
		return
	}
	st.periodStart = time.Now()
	st.period = min(st.opts.Period, max(st.minPeriod(), 20*time.Millisecond))
	started <- nil
	events := make([]unix.EpollEvent, 64)
	for {
		st.arm(time.Now())
		n, err := unix.EpollWait(st.epfd, events, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			n = 0
			time.Sleep(time.Millisecond)
		}
		for _, ev := range events[:max(n, 0)] {
			switch ev.Fd {
			case -1:
				if t.serve() {
					return
				}
			case -2:
				var b [8]byte
				_, _ = unix.Read(st.timer, b[:])
			default:
				st.ready(int(ev.Fd), ev.Events)
			}
		}
		st.tick(time.Now())
	}
}

// serve answers the requests the eventfd announced; true on Close.
func (t *Tracer) serve() bool {
	var b [8]byte
	_, _ = unix.Read(t.wake, b[:])
	t.mu.Lock()
	q := t.queue
	t.queue = nil
	t.mu.Unlock()
	for _, r := range q {
		switch r.kind {
		case reqSync:
			r.reply <- reply{err: t.st.sync(r.tids)}
		case reqRead:
			r.reply <- reply{batch: t.st.read(time.Now())}
		case reqClose:
			r.reply <- reply{}
			return true
		}
	}
	return false
}

// call queues a request for the loop and waits for its answer; false when
// the tracer is closed.
func (t *Tracer) call(r request) (reply, bool) {
	r.reply = make(chan reply, 1)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return reply{}, false
	}
	t.queue = append(t.queue, r)
	one := [8]byte{1}
	_, _ = unix.Write(t.wake, one[:])
	t.mu.Unlock()
	select {
	case rep := <-r.reply:
		return rep, true
	case <-t.done:
		return reply{}, false
	}
}

// Sync traces the threads in tids it does not trace yet and stops tracing
// those it does that are not in tids (their last counts go to the next
// Read). A thread that exited in between is skipped. ctprof calls it with
// every sample's thread list; a thread born and gone between two Syncs is
// never traced.
func (t *Tracer) Sync(tids []int) error {
	rep, ok := t.call(request{kind: reqSync, tids: tids})
	if !ok {
		return errors.New("futextrace: tracer closed")
	}
	return rep.err
}

// Read returns what was traced since the previous Read (or Open); a zero
// Batch once the tracer is closed.
func (t *Tracer) Read() Batch {
	rep, _ := t.call(request{kind: reqRead})
	return rep.batch
}

// Close stops tracing, closes every event and unmaps every ring.
func (t *Tracer) Close() error {
	select {
	case <-t.done:
		return nil
	default:
	}
	t.call(request{kind: reqClose})
	<-t.done
	return nil
}

// threadCPU is the calling OS thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
