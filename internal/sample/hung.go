package sample

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// A target that does not answer: stopped (every thread in state T or t),
// or a JVM whose requests go past --dump-timeout (a thread that keeps the
// JVM from reaching a safepoint, a long garbage collection, a JVM too
// loaded to answer). The sampler then sends nothing more until the target
// can answer again, keeps sampling /proc, and puts what it sees on each
// snapshot (Snapshot.Stopped, Snapshot.NoAnswer) for the analysis to name.
// A JVM that does not answer is at a safepoint or on its way to one: its
// tick counts as a safepoint window for the futex filter (jvmfutex.go),
// whose Java threads wait on HotSpot's own locks held for it.

// hangState is what the sampler knows of a target that does not answer.
type hangState struct {
	// stopped says the latest sweep found every thread stopped.
	stopped bool
	// since is when the first unanswered request was sent (zero: the JVM
	// answers); request names it; waited is how long this tick's own
	// request waited before it was abandoned (zero: none timed out).
	since   time.Time
	request string
	waited  time.Duration
	// gaveUp is how long the latest unanswered request waited, gaveUpAt
	// when it was abandoned.
	gaveUp   time.Duration
	gaveUpAt time.Time
	// safepoints and safepointTime are the JVM's counters when it stopped
	// answering (known says it has counters): a request waits until they
	// move, i.e. the JVM ended a safepoint and served what it had queued.
	safepoints    int64
	safepointTime time.Duration
	known         bool
	// retryAt is the earliest time of the next request; backoff grows for
	// a JVM without counters.
	retryAt time.Time
	backoff time.Duration
	// cpu and cpuAt are the CPU time of the threads running at the
	// previous sweep, for the CPU they use over the next tick.
	cpu   map[int]cpuReading
	cpuAt time.Time
}

// cpuReading is a running thread's CPU and run-queue time at a sweep.
type cpuReading struct{ cpu, queued time.Duration }

// mayAsk says whether the tick may send the JVM a request: not to a
// stopped process, and, after a request went unanswered, only once the
// JVM has ended a safepoint since (counters, when snap has them) and
// retryAt has passed.
func (s *Sampler) mayAsk(snap *snapshot.Snapshot) bool {
	h := &s.hang
	if h.stopped {
		return false
	}
	if h.since.IsZero() {
		return true
	}
	if snap.Time.Before(h.retryAt) {
		return false
	}
	if h.known && snap.JVM != nil && snap.JVM.Safepoints == h.safepoints && snap.JVM.SafepointTime == h.safepointTime {
		// Not yet, unless a minute has passed: a JVM whose counters stay
		// still for other reasons (nothing ctprof sent reached it) is
		// asked again then.
		return !snap.Time.Before(h.gaveUpAt.Add(time.Minute))
	}
	return true
}

// answering says whether the JVM is not known to leave requests
// unanswered: the end of a run reads JFR and stops it only then.
func (s *Sampler) answering() bool { return !s.hang.stopped && s.hang.since.IsZero() }

// unanswered notes a request that was abandoned after waiting waited (at
// its deadline, or cut short by Ctrl-C or the run's end), on the tick
// snap.
func (s *Sampler) unanswered(snap *snapshot.Snapshot, request string, waited time.Duration) {
	h := &s.hang
	now := time.Now()
	if h.since.IsZero() {
		h.since, h.request = now.Add(-waited), request
		h.backoff = 0
	}
	h.waited, h.gaveUp, h.gaveUpAt = waited, waited, now
	if snap.JVM != nil {
		h.safepoints, h.safepointTime, h.known = snap.JVM.Safepoints, snap.JVM.SafepointTime, true
	} else {
		h.known = false
	}
	// The JVM still holds the abandoned request and serves it when it can:
	// another sent now would queue behind it. The wait doubles with each
	// request abandoned in a row, up to a minute; with counters, mayAsk
	// also waits for them to move.
	h.backoff = min(max(2*h.backoff, s.opts.Interval, s.jvm.Timeout), time.Minute)
	h.retryAt = now.Add(h.backoff)
}

// answered notes that the JVM answered a request.
func (s *Sampler) answered() { s.hang.since = time.Time{} }

// timedOut reports whether err is a request the JVM did not answer in
// time.
func timedOut(err error) bool { return errors.Is(err, jvm.ErrTimeout) }

// noteHang puts what the tick saw of a target that does not answer on
// snap: Stopped when every thread of the sweep was stopped, NoAnswer
// while a JVM leaves a request unanswered. sweptAt is when the sweep
// read the threads.
func (s *Sampler) noteHang(snap *snapshot.Snapshot, threads []snapshot.OSThread, sweptAt time.Time) {
	h := &s.hang
	stopped := len(threads) > 0
	for i := range threads {
		if !procfs.Stopped(threads[i].State) {
			stopped = false
			break
		}
	}
	h.stopped = stopped
	if stopped {
		st := &snapshot.Stopped{}
		st.Tracer, st.TracerName, _ = s.fs.Tracer(s.opts.PID)
		snap.Stopped = st
	}
	prev, prevAt := h.cpu, h.cpuAt
	h.cpu, h.cpuAt = nil, sweptAt
	for i := range threads {
		if t := &threads[i]; t.State == 'R' {
			if h.cpu == nil {
				h.cpu = map[int]cpuReading{}
			}
			h.cpu[t.TID] = cpuReading{threadCPU(t), t.RunQueueWait}
		}
	}
	if h.since.IsZero() || s.jvm == nil {
		h.waited = 0
		return
	}
	now := time.Now()
	na := &snapshot.NoAnswer{Request: h.request, Since: h.since, For: now.Sub(h.since), Waited: h.gaveUp}
	f := jvmFutexFilter{dumped: s.dumped, threads: threads}
	for i := range threads {
		t := &threads[i]
		internal := f.internal(t.TID)
		if !internal {
			na.JavaThreads++
		}
		if t.State != 'R' {
			continue
		}
		rt := snapshot.RunningThread{TID: t.TID, Name: t.Name, CPU: -1, Queued: -1, Internal: internal, GC: gcThreadName(t.Name)}
		switch {
		case h.waited > 0:
			// This tick's request waited: the CPU the thread used from
			// the sweep, just after the request went out, until now.
			if fresh, err := s.fs.ThreadRunTime(s.opts.PID, t.TID); err == nil {
				rt.CPU, rt.Window = cpuShare(threadCPU(t), pick(t, fresh), now.Sub(sweptAt))
				if t.RunTime > 0 && fresh.RunTime > 0 {
					rt.Queued, _ = cpuShare(t.RunQueueWait, fresh.RunQueueWait, now.Sub(sweptAt))
				}
				if fresh.State != 'R' && rt.CPU < 0.2 {
					continue // it ran a moment at the sweep, not all along
				}
			}
		case prev != nil:
			if c, ok := prev[t.TID]; ok {
				rt.CPU, rt.Window = cpuShare(c.cpu, threadCPU(t), sweptAt.Sub(prevAt))
				if t.RunTime > 0 {
					rt.Queued, _ = cpuShare(c.queued, t.RunQueueWait, sweptAt.Sub(prevAt))
				}
			}
		}
		na.Running = append(na.Running, rt)
	}
	if pd, err := s.jvm.ReadPerfData(); err == nil {
		na.GCRunning, na.GCKnown = pd.Counters().GCRunning, true
	}
	na.VMThreadWakeups = s.vmThreadWakeups(threads)
	snap.NoAnswer = na
	h.waited = 0
}

// threadCPU is a thread's CPU time as the sweep read it: schedstat's run
// time where the kernel has it, stat's user and system time otherwise (a
// one-shot reads stat only).
func threadCPU(t *snapshot.OSThread) time.Duration {
	if t.RunTime > 0 {
		return t.RunTime
	}
	return t.CPU()
}

// pick takes from a fresh read the same kind of CPU time the sweep had
// for t, so that the two subtract.
func pick(t *snapshot.OSThread, fresh procfs.ThreadCPUTimes) time.Duration {
	if t.RunTime > 0 {
		return fresh.RunTime
	}
	return fresh.CPU
}

// cpuShare is the share of one CPU between two readings window apart.
func cpuShare(before, after, window time.Duration) (float64, time.Duration) {
	if window <= 0 || after < before {
		return -1, 0
	}
	return min(float64(after-before)/float64(window), 1), window
}

// gcThreadName tells a garbage collector's threads by the names HotSpot
// gives them (cut at 15 bytes). The VM Thread runs the serial collector's
// work itself.
func gcThreadName(name string) bool {
	for _, p := range []string{"GC Thread#", "G1 ", "VM Thread", "ZWorker", "ZDriver", "ZDirector", "Shenandoah", "Conc#", "Concurrent Mark"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// waitedEarly notes the early dump (the one the binary asked for while it
// started) when the JVM did not answer it in time.
func (s *Sampler) waitedEarly(snap *snapshot.Snapshot, e *jvm.EarlyDump) {
	if timedOut(e.Err()) {
		s.unanswered(snap, "thread dump", time.Since(e.Started()))
	}
}

// runGrace is how far past --duration a tick's requests may run: a run
// ends within about a second of its --duration whatever the target does.
const runGrace = time.Second

// takeContext bounds a tick by the run's end (--duration and runGrace):
// a request the JVM has not answered by then is abandoned.
func (s *Sampler) takeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.run.deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, s.run.deadline.Add(runGrace))
}

// cutShort reports a request that Ctrl-C or the run's end cut short after
// it had waited long enough to tell (a second: a dump of a JVM that runs
// takes milliseconds): the JVM had not answered it either, and the run's
// summary says so.
func cutShort(ctx context.Context, err error, waited time.Duration) bool {
	return err != nil && ctx.Err() != nil && waited >= time.Second
}

// vmWindow is how long vmThreadWakeups watches the VM Thread.
const vmWindow = 200 * time.Millisecond

// vmThreadWakeups counts how often a second HotSpot's VM Thread is put on
// a CPU, over vmWindow (see snapshot.NoAnswer.VMThreadWakeups); -1 when
// the thread or its schedstat cannot be read.
func (s *Sampler) vmThreadWakeups(threads []snapshot.OSThread) float64 {
	tid := 0
	for i := range threads {
		if threads[i].Name == "VM Thread" {
			tid = threads[i].TID
		}
	}
	if tid == 0 {
		return -1
	}
	a, err := s.fs.ThreadRunTime(s.opts.PID, tid)
	start := time.Now()
	if err != nil || a.Timeslices == 0 {
		return -1
	}
	time.Sleep(vmWindow)
	b, err := s.fs.ThreadRunTime(s.opts.PID, tid)
	if err != nil || b.Timeslices < a.Timeslices {
		return -1
	}
	return float64(b.Timeslices-a.Timeslices) / time.Since(start).Seconds()
}
