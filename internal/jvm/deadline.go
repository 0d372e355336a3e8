package jvm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Every request ctprof makes of a JVM has a deadline: a JVM that is
// stopped (SIGSTOP, a debugger), cannot reach a safepoint (a thread in a
// loop compiled without safepoint polls) or sits in a long garbage
// collection answers nothing until it runs again, and ctprof must not wait
// with it. A request past its deadline is abandoned: the socket is closed
// and the trigger files ctprof created are removed (ensureListener's
// defer), so nothing is left for a later attach to trip over. What the JVM
// already took from the socket it still serves when it runs again (one
// more dump, whose reply goes nowhere): callers space their next request
// accordingly (the sampler waits until the JVM answers again).

// DefaultTimeout bounds a request when Info.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// ErrTimeout wraps a request the JVM did not answer within its deadline.
var ErrTimeout = errors.New("the JVM did not answer in time")

// ErrTargetStopped: the process is stopped (state T or t: SIGSTOP, job
// control, a debugger), so ctprof sends it nothing. A request would wait
// until the process is continued, and a SIGQUIT sent now would be handled
// only then, perhaps after ctprof removed its trigger file, when the JVM
// prints a thread dump into its own output instead.
var ErrTargetStopped = errors.New("the process is stopped (SIGSTOP or a debugger); ctprof sends it nothing until it runs again")

// timeout is the deadline of one request to i.
func (i *Info) timeout() time.Duration {
	if i.Timeout > 0 {
		return i.Timeout
	}
	return DefaultTimeout
}

// bounded runs fn with ctx bounded by the JVM's timeout and says why it
// failed when the bound, not ctx, ended it.
func (i *Info) bounded(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	return i.boundedFor(ctx, i.timeout(), what, fn)
}

// boundedFor is bounded with a deadline of its own: a first JFR start
// (firstJFRStart) may take longer than a dump.
func (i *Info) boundedFor(ctx context.Context, d time.Duration, what string, fn func(ctx context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := fn(bctx)
	if err != nil && !expired(ctx) && expired(bctx) {
		why := "(--dump-timeout)"
		if d != i.timeout() {
			why = "(its own deadline)"
		}
		return fmt.Errorf("%w: pid %d: %s got no answer within %s %s; the request was abandoned", ErrTimeout, i.PID, what, d, why)
	}
	return err
}

// firstJFRStart bounds the first JFR.start of a recording when
// --dump-timeout is shorter. It does more than a dump: on JDK 17 the
// first start in a JVM loads and initializes Flight Recorder and
// redefines the event classes at a safepoint, which took over 5 s on a
// 2-CPU host at load 30 (a dump took milliseconds there). A start
// abandoned at its deadline still runs in the JVM: a second recording
// that ends by itself (its duration), beside the one ctprof starts next.
const firstJFRStart = 30 * time.Second

// checkRunning refuses to send anything to a stopped process.
func (i *Info) checkRunning() error {
	stopped, err := i.fs.LeaderStopped(i.PID)
	switch {
	case errors.Is(err, procfs.ErrProcessGone):
		return fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
	case err == nil && stopped:
		return fmt.Errorf("pid %d: %w", i.PID, ErrTargetStopped)
	}
	return nil
}

// ioDeadline is the deadline of one read or write on the attach socket:
// step from now, but never past ctx's deadline. The poller's deadline is
// what ends a read the JVM does not answer; ctx's end also sets it to now
// (request's AfterFunc), and the caller checks ctx after setting this, so
// that a later deadline set here cannot undo that.
func ioDeadline(ctx context.Context, step time.Duration) time.Time {
	t := time.Now().Add(step)
	if d, ok := ctx.Deadline(); ok && d.Before(t) {
		return d
	}
	return t
}

// expired reports whether ctx has ended or its deadline has passed: a
// socket deadline set to ctx's may fire a moment before ctx's own timer.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
