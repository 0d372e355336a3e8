package sample

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// runState is where a run of Next calls stands: the Sampler is the live
// Source (snapshot.Source), and a run is the series of samples one
// Sampler takes.
type runState struct {
	started  bool
	stopped  bool
	reason   StopReason
	taken    int
	next     time.Time // when the next sample is due
	deadline time.Time // when --duration ends the run (zero: never)
	timer    *time.Timer
	// last is the snapshot Next returned last: its Threads slice is filled
	// again by the next sweep, as the Source contract allows.
	last *snapshot.Snapshot
	// pending are snapshots to hand out before the run ends (the waits a
	// JFR recording held when the run was interrupted).
	pending []*snapshot.Snapshot
}

// Name names the live target in messages.
func (s *Sampler) Name() string { return "pid " + strconv.Itoa(s.target.PID) }

// Warnings say how the run ended and what it lacked (runend.go): the
// target's exit or exec, no thread dump, no Flight Recorder data, fewer
// samples than asked for, dumps the pause budget held back. What limited
// single ticks is in the snapshots' Errors and in Notes.
func (s *Sampler) Warnings() []string { return s.runWarnings() }

// StopReason says why the run ended; valid once Next has returned an
// error.
func (s *Sampler) StopReason() StopReason { return s.run.reason }

// Next takes the next sample: the first at once, then one every Interval
// until Count or Duration is reached, ctx is cancelled, or the target
// exits; it then returns io.EOF and StopReason says which. A sample that
// takes longer than the interval delays the next one rather than causing a
// burst. Ctrl-C (ctx) during a sweep keeps the sample, and the waits a JFR
// recording held are handed out in a last snapshot. Any other error ends
// the run with it.
func (s *Sampler) Next(ctx context.Context) (*snapshot.Snapshot, error) {
	r := &s.run
	if r.last != nil {
		s.spare = r.last.Threads
		r.last = nil
	}
	if r.stopped {
		return s.pendingOrEOF()
	}
	if !r.started {
		r.started = true
		r.next = time.Now()
		if s.opts.Duration > 0 {
			r.deadline = r.next.Add(s.opts.Duration)
		}
		r.timer = time.NewTimer(0)
	} else {
		if s.opts.Count > 0 && r.taken >= s.opts.Count {
			return s.stop(StopDone, nil)
		}
		now := time.Now()
		for r.next = r.next.Add(s.opts.Interval); !r.next.After(now); r.next = r.next.Add(s.opts.Interval) {
		}
		if !r.deadline.IsZero() && r.next.After(r.deadline) {
			return s.stop(StopDone, nil)
		}
		r.timer.Reset(r.next.Sub(now))
	}
	select {
	case <-ctx.Done():
		s.flushJFR(func(snap *snapshot.Snapshot) { r.pending = append(r.pending, snap) })
		return s.stop(StopInterrupted, nil)
	case <-r.timer.C:
	}
	// The run's last sample reads every thread, so that the totals include
	// what idle threads read less often did since their last read (see
	// procfs.ThreadReader.Final).
	s.threads.Final = s.opts.Count > 0 && r.taken+1 >= s.opts.Count ||
		!r.deadline.IsZero() && r.next.Add(s.opts.Interval).After(r.deadline)
	held := s.countDumpTick(time.Now(), s.jvm != nil && !s.opts.JVM.NoDumps && !s.dumpsOff)
	tctx, cancel := s.takeContext(ctx)
	snap, err := s.Take(tctx)
	cancel()
	if err != nil {
		if errors.Is(err, procfs.ErrProcessGone) {
			if reason, changed := s.changedProgram(); changed {
				return s.stop(reason, nil)
			}
			return s.stop(StopTargetGone, nil)
		}
		return s.stop(StopDone, err)
	}
	// A sample is kept only if the pid still runs the program the run
	// began with: an exec or a reused pid during the sweep would mix two
	// programs in it.
	if reason, changed := s.changedProgram(); changed {
		s.spare = snap.Threads
		return s.stop(reason, nil)
	}
	if held && snap.DumpCost != nil {
		s.budget.heldBack-- // the tick took its dump after all
	}
	s.noteTick(snap)
	r.taken++
	r.last = snap
	if ctx.Err() != nil {
		// Ctrl-C during the sweep: the sample is complete, keep it.
		s.flushJFR(func(snap *snapshot.Snapshot) { r.pending = append(r.pending, snap) })
		s.end(StopInterrupted)
	}
	return snap, nil
}

// stop ends the run: the JFR recording stops with it, whatever ends it.
// It returns what Next returns at the end: err, or the pending snapshots
// and then io.EOF.
func (s *Sampler) stop(reason StopReason, err error) (*snapshot.Snapshot, error) {
	s.end(reason)
	if err != nil {
		return nil, err
	}
	return s.pendingOrEOF()
}

// end marks the run ended for reason and stops its JFR recording.
func (s *Sampler) end(reason StopReason) {
	r := &s.run
	r.stopped, r.reason = true, reason
	if r.timer != nil {
		r.timer.Stop()
	}
	s.stopJFR()
}

func (s *Sampler) pendingOrEOF() (*snapshot.Snapshot, error) {
	r := &s.run
	if len(r.pending) > 0 {
		snap := r.pending[0]
		r.pending = r.pending[1:]
		if len(snap.Waits) > 0 || len(snap.GCPauses) > 0 {
			s.says.jfrReads++ // the read at Ctrl-C (flushJFR) is data too
		}
		return snap, nil
	}
	return nil, io.EOF
}
