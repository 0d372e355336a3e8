package futextrace

import (
	"time"

	"golang.org/x/sys/unix"
)

// bytesPerCall is what one traced blocking call writes to its thread's
// ring: its entry (96 bytes), its exit (56) and, for a lock, about one
// FUTEX_WAKE's exit (56; the exit event cannot tell a wake's exit from a
// wait's, so it records every futex exit).
const bytesPerCall = 208

// The duty cycle.
//
// At low rates (at most Options.MaxTracedRate blocking calls a second)
// every thread's events stay attached: every call is counted and traced.
// Above it, the events are attached for windows only and closed in
// between, since even counting costs the target at every futex call and
// an open syscall tracepoint, enabled or not, at every system call (see
// detach). The windows' share of the time is MaxTracedRate over the rate,
// one window a Period (see plan for a reader that is not realtime).
//
// Each thread's calls are then its calls counted in the windows scaled to
// the time it was not attached (Batch.Exact says which), and each traced
// call counts as that thread's calls over its traced ones. Which calls
// are traced depends on when they start, not on how long they last: a
// call traced in a window is followed to its exit by the tail event.

// minPeriod is the shortest period: 5 ms, or 0.4 ms per thread.
func (s *state) minPeriod() time.Duration {
	return max(5*time.Millisecond, time.Duration(len(s.threads))*400*time.Microsecond)
}

// startPeriod checks the rate at low rates, and opens a window at high.
func (s *state) startPeriod(now time.Time) {
	if !s.high {
		var calls, busiest uint64
		for _, th := range s.threads {
			if !th.attached {
				continue
			}
			if v, ok := readCount(th.countFD); ok {
				calls += v - th.count0
				busiest = max(busiest, v-th.count0)
				th.counted += v - th.count0
				th.count0 = v
			}
		}
		el := now.Sub(s.periodStart)
		s.periodStart = now
		// A burst must not run traced for long: the counters are read
		// every 20 ms, or less often for many threads. The rate is their
		// average over about 200 ms: a burst at ten times MaxTracedRate
		// goes to the windows at once, a few calls close together do not.
		s.period = min(s.opts.Period, max(s.minPeriod(), 20*time.Millisecond))
		if el > 0 {
			a := min(1, el.Seconds()/0.2)
			s.lowRate = a*float64(calls)/el.Seconds() + (1-a)*s.lowRate
		}
		if el <= 0 || s.lowRate <= s.opts.MaxTracedRate {
			for _, th := range s.threads {
				if !th.attached && !th.tailOnly {
					_ = s.attach(th)
				}
			}
			return
		}
		// The events are on: this is the first window.
		s.high = true
		s.plan(max(s.lowRate, float64(calls)/el.Seconds()), float64(busiest)/el.Seconds())
		s.windowOpen, s.windowStart = true, now
		s.windowEnd = now.Add(max(time.Duration(s.share*float64(s.period)), time.Millisecond))
		return
	}
	// Every thread's events are opened first, then all turned on a
	// millisecond later: the opens take a while, and the first one
	// registers the syscall tracepoints, which patches the kernel's code
	// on every CPU and holds up the target's threads for a moment; counted
	// then, the window's rate would be low. The window's time and counts
	// are then the same for every thread.
	s.periodStart = now
	s.opened = s.opened[:0]
	for _, th := range s.threads {
		if !th.attached && !th.tailOnly {
			if s.openEvents(th) != nil {
				s.release(th)
				continue
			}
			s.opened = append(s.opened, th)
		}
	}
	s.enableAt = time.Now().Add(settle)
}

// settle is the time between a window's opens and its start.
const settle = time.Millisecond

// openWindow turns the opened events on.
func (s *state) openWindow() {
	for _, th := range s.opened {
		if th.exit >= 0 && s.enableEvents(th) != nil {
			s.release(th)
		}
	}
	s.opened = s.opened[:0]
	s.enableAt = time.Time{}
	now := time.Now()
	s.windowOpen, s.windowStart = true, now
	s.windowEnd = now.Add(max(time.Duration(s.share*float64(s.period)), time.Millisecond))
}

// plan sets the share and the period from the rate of all threads and of
// the busiest one. Each window's open and close registers and unregisters
// the syscall tracepoints (the kernel patches its code for them), which
// disturbs every CPU, so windows are few: one a Period when the reader
// runs at a realtime priority and drains the rings as they fill. A reader
// at the usual priority may run late, so its windows are short enough for
// a ring to hold one (a quarter of it at the busiest thread's rate), and
// more of them make the share.
func (s *state) plan(rate, busiest float64) {
	s.share = min(1, s.opts.MaxTracedRate/max(rate, 1))
	s.period = s.opts.Period
	if s.realtime {
		return
	}
	ring := float64(s.opts.RingPages * pageSize)
	window := time.Duration(ring / 4 / (bytesPerCall * max(busiest, 1)) * float64(time.Second))
	s.period = min(s.opts.Period, max(s.minPeriod(), time.Duration(float64(window)/s.share)))
}

// closeWindow closes the window's events, reads the rate they counted,
// and goes back to low rates when it has fallen.
func (s *state) closeWindow(now time.Time) {
	s.windowOpen = false
	el := now.Sub(s.windowStart).Seconds()
	var calls, busiest uint64
	for _, th := range s.threads {
		if !th.attached {
			continue
		}
		before := th.counted
		s.disableEvents(th, false)
		calls += th.counted - before
		busiest = max(busiest, th.counted-before)
	}
	for _, th := range s.threads {
		if th.exit >= 0 {
			s.closeEvents(th, false)
		}
	}
	if el <= 0 {
		return
	}
	// The rate is the windows' average, halved in weight every 50 ms of
	// windows; the way back to low rates looks at 50 ms of them at least:
	// one short window's few calls say little.
	s.windowCalls += float64(calls)
	s.windowTime += now.Sub(s.windowStart)
	avg := s.windowCalls / s.windowTime.Seconds()
	if s.windowTime >= 50*time.Millisecond {
		s.windowCalls, s.windowTime = s.windowCalls/2, s.windowTime/2
		if avg < 0.8*s.opts.MaxTracedRate {
			s.windowCalls, s.windowTime = 0, 0
			s.high, s.share, s.lowRate = false, 1, avg
			s.period = min(s.opts.Period, max(s.minPeriod(), 20*time.Millisecond))
			for _, th := range s.threads {
				if !th.tailOnly {
					_ = s.attach(th)
				}
			}
			return
		}
	}
	s.plan(avg, float64(busiest)/el)
}

// tick runs what is due.
func (s *state) tick(now time.Time) {
	if !s.enableAt.IsZero() && !now.Before(s.enableAt) {
		s.openWindow()
		now = time.Now()
	}
	if s.windowOpen && !now.Before(s.windowEnd) {
		s.closeWindow(now)
	}
	if !s.windowOpen && s.enableAt.IsZero() && !now.Before(s.periodStart.Add(s.period)) {
		s.startPeriod(now)
	}
}

// arm sets the timer to the next deadline, to the nanosecond (epoll's
// own timeout counts milliseconds, as long as a window can be).
func (s *state) arm(now time.Time) {
	d := s.periodStart.Add(s.period).Sub(now)
	switch {
	case s.windowOpen:
		d = s.windowEnd.Sub(now)
	case !s.enableAt.IsZero():
		d = s.enableAt.Sub(now)
	}
	at := int64(monotonic()) + int64(max(d, time.Microsecond))
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	_ = unix.TimerfdSettime(s.timer, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// read takes the batch since the previous read.
func (s *state) read(now time.Time) Batch {
	elapsed := now.Sub(s.batchStart)
	b := Batch{Elapsed: elapsed, Share: s.share, Realtime: s.realtime, KernelFilter: s.kernelFilter, Lost: s.lost, TailDropped: s.tailDropped, Bad: s.bad, Throttled: s.throttled, Exact: true}
	calls := map[int]float64{}
	traced := map[int]uint64{}
	mono := monotonic()
	add := func(th *thread) {
		b.Counted += th.counted
		c := float64(th.counted)
		// The time the thread was known in the batch, attached or not.
		known := elapsed
		if th.since.After(s.batchStart) {
			known = now.Sub(th.since)
		}
		if !th.until.IsZero() {
			known -= now.Sub(th.until)
		}
		if th.attachedFor < known-known/100-time.Millisecond {
			b.Exact = false
			if th.attachedFor > 0 {
				c *= float64(known) / float64(th.attachedFor)
			}
		}
		calls[th.tid] += c
		traced[th.tid] += th.traced
		th.counted, th.traced, th.attachedFor = 0, 0, 0
	}
	for _, g := range s.gone {
		add(&g)
	}
	for _, tid := range sortedKeys(s.threads) {
		th := s.threads[tid]
		s.drain(th)
		if th.attached {
			if v, ok := readCount(th.countFD); ok {
				th.counted += v - th.count0
				th.count0 = v
			}
			th.attachedFor += now.Sub(th.attachedAt)
			th.attachedAt = now
		}
		add(th)
		if th.pending && len(b.InProgress) < 64 {
			b.InProgress = append(b.InProgress, InProgress{TID: tid, Addr: th.call.uaddr, Op: int(th.call.op), Since: time.Duration(mono - th.call.time)})
		}
	}
	for tid, c := range calls {
		b.Calls += c
		b.Traced += traced[tid]
	}
	b.Futexes = s.agg.take(func(tid int) float64 {
		if traced[tid] == 0 || calls[tid] < float64(traced[tid]) {
			return 1
		}
		return calls[tid] / float64(traced[tid])
	})
	b.TracedShare = 1
	if b.Calls > 0 {
		b.TracedShare = min(1, float64(b.Traced)/b.Calls)
	}
	b.Threads = len(s.threads)
	cpu := threadCPU()
	b.Cost = cpu - s.cpu0
	s.cpu0 = cpu
	s.batchStart = now
	s.lost, s.bad, s.throttled, s.tailDropped = 0, 0, 0, 0
	s.gone = s.gone[:0]
	return b
}
