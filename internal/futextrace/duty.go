package futextrace

import (
	"time"

	"golang.org/x/sys/unix"
)

// tailPoll is how often a thread whose traced call outlived its window is
// looked at: once its exit is read, its exit event goes off again.
const tailPoll = 10 * time.Millisecond

// startPeriod reads the counters, sets the share of the period the
// sampling events are on for, and opens the period's window.
func (s *state) startPeriod(now time.Time) {
	var calls uint64
	for _, th := range s.threads {
		if v, ok := readCount(th.countFD); ok {
			calls += v - th.last
			th.last = v
		}
	}
	if !s.periodStart.IsZero() {
		if el := now.Sub(s.periodStart).Seconds(); el > 0 {
			rate := float64(calls) / el
			s.share = 1
			if rate > s.opts.MaxTracedRate {
				s.share = s.opts.MaxTracedRate / rate
			}
		}
	}
	s.periodStart = now
	for _, th := range s.threads {
		s.enable(th)
	}
	clear(s.tails)
	s.windowOpen = s.share < 1
	if s.windowOpen {
		s.windowEnd = now.Add(max(time.Duration(s.share*float64(s.opts.Period)), time.Millisecond))
	}
}

// closeWindow turns the enter events off, and the exit events of the
// threads not inside a traced call.
func (s *state) closeWindow() {
	s.windowOpen = false
	for _, th := range s.threads {
		if th.enterOn && ioctl(th.enterFD, unix.PERF_EVENT_IOC_DISABLE, 0) == nil {
			th.enterOn = false
		}
	}
	for tid, th := range s.threads {
		s.drain(th)
		s.settle(tid, th)
	}
}

// settle turns a thread's exit event off once no traced call waits for it.
// The order keeps the pairing honest: the entry was traced while the exit
// event was on, and the exit event stays on until that call's exit is read.
func (s *state) settle(tid int, th *thread) {
	if th.pending && !th.hup {
		s.tails[tid] = true
		return
	}
	if th.exitOn && ioctl(th.exit, unix.PERF_EVENT_IOC_DISABLE, 0) == nil {
		th.exitOn = false
		th.pending = false
	}
	delete(s.tails, tid)
}

func (s *state) pollTails() {
	for tid := range s.tails {
		th := s.threads[tid]
		if th == nil {
			delete(s.tails, tid)
			continue
		}
		s.drain(th)
		s.settle(tid, th)
	}
}

// tick runs what is due.
func (s *state) tick(now time.Time) {
	if s.windowOpen && !now.Before(s.windowEnd) {
		s.closeWindow()
	}
	if len(s.tails) > 0 {
		s.pollTails()
	}
	if !now.Before(s.periodStart.Add(s.opts.Period)) {
		s.startPeriod(now)
	}
}

// nextTimeout is how long the loop may sleep in epoll.
func (s *state) nextTimeout(now time.Time) time.Duration {
	d := s.periodStart.Add(s.opts.Period).Sub(now)
	if s.windowOpen {
		d = min(d, s.windowEnd.Sub(now))
	}
	if len(s.tails) > 0 {
		d = min(d, tailPoll)
	}
	return max(d, 0)
}

// read takes the batch since the previous read.
func (s *state) read(now time.Time) Batch {
	b := Batch{Elapsed: now.Sub(s.batchStart), Share: s.share, KernelFilter: s.kernelFilter, Lost: s.lost, Bad: s.bad, Throttled: s.throttled}
	calls := map[int]uint64{}
	traced := map[int]uint64{}
	for tid, v := range s.goneCounts {
		calls[tid] += v
	}
	for tid, v := range s.goneTraced {
		traced[tid] += v
	}
	var mono unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	for _, tid := range sortedKeys(s.threads) {
		th := s.threads[tid]
		s.drain(th)
		if v, ok := readCount(th.countFD); ok {
			calls[tid] += v - th.count0
			th.count0 = v
		}
		traced[tid] += th.traced
		th.traced = 0
		if th.pending && len(b.InProgress) < 64 {
			b.InProgress = append(b.InProgress, InProgress{TID: tid, Addr: th.call.uaddr, Op: int(th.call.op), Since: time.Duration(uint64(mono.Nano()) - th.call.time)})
		}
	}
	for tid, c := range calls {
		b.Calls += c
		b.Traced += traced[tid]
	}
	b.Futexes = s.agg.take(func(tid int) float64 {
		if traced[tid] == 0 || calls[tid] < traced[tid] {
			return 1
		}
		return float64(calls[tid]) / float64(traced[tid])
	})
	b.TracedShare = 1
	if b.Calls > 0 {
		b.TracedShare = min(1, float64(b.Traced)/float64(b.Calls))
	}
	b.Threads = len(s.threads)
	cpu := threadCPU()
	b.Cost = cpu - s.cpu0
	s.cpu0 = cpu
	s.batchStart = now
	s.lost, s.bad, s.throttled = 0, 0, 0
	clear(s.goneCounts)
	clear(s.goneTraced)
	return b
}
