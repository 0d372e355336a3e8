package sample

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Options configure a live Sampler.
type Options struct {
	PID int
	// Interval is the time between samples; Duration (0: unbounded) and
	// Count (0: unbounded) end the run.
	Interval time.Duration
	Duration time.Duration
	Count    int
	// Port > 0 counts only connections to that local port.
	Port int
	// ProcRoot is where /proc is mounted ("/proc" when empty).
	ProcRoot string
}

// StopReason says why Run returned.
type StopReason int

// Why a run ends.
const (
	// StopDone: --count or --duration was reached.
	StopDone StopReason = iota
	// StopInterrupted: the context was cancelled (Ctrl-C).
	StopInterrupted
	// StopTargetGone: the target exited.
	StopTargetGone
)

func (r StopReason) String() string {
	switch r {
	case StopDone:
		return "done"
	case StopInterrupted:
		return "interrupted"
	case StopTargetGone:
		return "target exited"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// Sampler takes Snapshots of one live process: every OS thread from /proc,
// futex waits named by symbol, TCP connections and host context.
type Sampler struct {
	opts    Options
	fs      procfs.FS
	threads *procfs.ThreadReader
	sym     *procfs.Symbolizer
	target  Target
	// fdDenied remembers that fd/ is unreadable, so connections are not
	// retried (and failed) every tick.
	fdDenied bool
	lastN    int
}

// NewSampler checks the target and opens what the sweep keeps open. It
// returns an error wrapping procfs.ErrProcessGone when there is no such
// process.
func NewSampler(opts Options) (*Sampler, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	fs := procfs.NewFS(opts.ProcRoot)
	p, err := fs.Process(opts.PID)
	if err != nil {
		if errors.Is(err, procfs.ErrProcessGone) {
			return nil, fmt.Errorf("no process with pid %d: %w", opts.PID, procfs.ErrProcessGone)
		}
		return nil, fmt.Errorf("pid %d: %w", opts.PID, err)
	}
	tr, err := fs.NewThreadReader(opts.PID)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", opts.PID, err)
	}
	kind := KindNative
	if fs.IsJVM(opts.PID) {
		kind = KindJVM
	}
	return &Sampler{
		opts:    opts,
		fs:      fs,
		threads: tr,
		sym:     fs.NewSymbolizer(opts.PID),
		target:  Target{PID: opts.PID, Name: p.Name, Kind: kind, CPUs: p.CPUs},
	}, nil
}

// IsJVM reports whether pid (under the /proc mounted at root) runs a JVM.
func IsJVM(root string, pid int) bool { return procfs.NewFS(root).IsJVM(pid) }

// Target describes the process being sampled.
func (s *Sampler) Target() Target { return s.target }

// Close releases the open task directory.
func (s *Sampler) Close() error { return s.threads.Close() }

// Take takes one snapshot. It returns an error wrapping
// procfs.ErrProcessGone once the target has exited.
func (s *Sampler) Take(ctx context.Context) (*Snapshot, error) {
	start := time.Now()
	snap := &Snapshot{Time: start, Target: s.target, Interval: s.opts.Interval}
	threads, err := s.threads.Read(make([]OSThread, 0, s.lastN+16))
	if err != nil {
		return nil, err
	}
	s.lastN = len(threads)
	snap.Threads = threads
	snap.Futexes = procfs.GroupFutexWaits(threads, s.sym)

	if !s.fdDenied {
		c, err := s.fs.Connections(s.opts.PID, s.opts.Port)
		switch {
		case err == nil:
			snap.Connections = c
		case errors.Is(err, procfs.ErrPermission):
			s.fdDenied = true
		case errors.Is(err, procfs.ErrProcessGone):
			return nil, err
		}
	}
	if h, err := s.fs.Host(ctx); err == nil {
		snap.Host = h
	}
	snap.Missing = s.threads.Missing()
	if s.fdDenied {
		snap.Missing = append(snap.Missing, "fd")
	}
	snap.Cost = time.Since(start)
	return snap, nil
}

// Run samples every Interval until Count or Duration is reached, ctx is
// cancelled, or the target exits, calling fn with each snapshot. The first
// sample is taken at once. A sample that takes longer than the interval
// delays the next one rather than causing a burst. The error is the one
// that stopped sampling, if it was not one of those normal ends.
func (s *Sampler) Run(ctx context.Context, fn func(*Snapshot)) (StopReason, error) {
	start := time.Now()
	var deadline time.Time
	if s.opts.Duration > 0 {
		deadline = start.Add(s.opts.Duration)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	next := start
	for n := 0; ; {
		select {
		case <-ctx.Done():
			return StopInterrupted, nil
		case <-timer.C:
		}
		snap, err := s.Take(ctx)
		if err != nil {
			if errors.Is(err, procfs.ErrProcessGone) {
				return StopTargetGone, nil
			}
			return StopDone, err
		}
		if ctx.Err() != nil {
			// Ctrl-C during the sweep: the sample is complete, keep it.
			fn(snap)
			return StopInterrupted, nil
		}
		fn(snap)
		n++
		if s.opts.Count > 0 && n >= s.opts.Count {
			return StopDone, nil
		}
		now := time.Now()
		for next = next.Add(s.opts.Interval); !next.After(now); next = next.Add(s.opts.Interval) {
		}
		if !deadline.IsZero() && next.After(deadline) {
			return StopDone, nil
		}
		timer.Reset(next.Sub(now))
	}
}
