package jvm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// An EarlyDump is a thread dump asked for while ctprof is still starting.
// A one-shot (`ctprof attach PID --count 1`) spends its first milliseconds
// in the Go runtime and in its dependencies' package initializers, and
// then looks at the JVM again; the JVM could be printing its threads all
// that time. The ctprof binary starts an early dump from an initializer
// that runs before most others (cmd/ctprof/internal/earlydump) when its
// command line is that of a one-shot; the sampler takes it over
// (TakeEarlyDump) instead of asking for a dump of its own.
//
// An early dump goes through the same Inspect and ThreadDump as any
// other, with the options a one-shot uses (Thread.print, no -l), and only
// to a JVM whose attach listener already runs: starting one (SIGQUIT)
// waits for the sampler's own checks.
type EarlyDump struct {
	PID int
	// sent is closed once the request is on its way, or once the early
	// dump has given up; done once it has ended.
	sent, done chan struct{}
	res        *DumpResult
	err        error
	// started is when the request began.
	started time.Time
}

// early holds the dump StartEarlyDump started until the sampler takes it.
var early atomic.Pointer[EarlyDump]

// StartEarlyDump starts a thread dump of pid in the background (the
// /proc mounted at procRoot), for TakeEarlyDump.
func StartEarlyDump(procRoot string, pid int) {
	d := &EarlyDump{PID: pid, sent: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	early.Store(d)
	go d.run(procRoot)
}

// TakeEarlyDump returns the early dump started for pid and forgets it (a
// second call returns nil); nil when none was.
func TakeEarlyDump(pid int) *EarlyDump {
	d := early.Load()
	if d == nil || d.PID != pid || !early.CompareAndSwap(d, nil) {
		return nil
	}
	return d
}

func (d *EarlyDump) run(procRoot string) {
	defer close(d.done)
	sent := sync.OnceFunc(func() { close(d.sent) })
	defer sent()
	info, err := Inspect(procRoot, d.PID)
	if err != nil || !info.AttachSupported || info.listenerRunning() != nil {
		d.err = errNoEarlyDump
		return
	}
	d.res, d.err = ThreadDump(context.Background(), info, DumpOptions{Mode: ModeThreadPrint, Sent: sent})
}

// errNoEarlyDump: the early dump did not ask (not a JVM with hsperfdata,
// attach disabled, no listener yet).
var errNoEarlyDump = errors.New("no early dump was asked for")

// Sent is closed once the early request is on its way to the JVM, or
// once the early dump has given up.
func (d *EarlyDump) Sent() <-chan struct{} { return d.sent }

// Result waits for the early dump, or for ctx to end. It returns nil when
// the dump did not come back (never asked for, or failed) or ctx ended
// first: the caller then takes its own, through the whole of ThreadDump
// (the jcmd fallback included), unless ctx has ended. A request that
// failed after the JVM had begun may have paused it once more; the pause
// of a dump that came back is in its DumpResult.
func (d *EarlyDump) Result(ctx context.Context) *DumpResult {
	select {
	case <-d.done:
	case <-ctx.Done():
		return nil
	}
	if d.err != nil {
		return nil
	}
	return d.res
}

// Err is why the early dump did not come back, once it has ended (nil
// while it runs, or when it came back); Started is when it began. A
// request the JVM did not answer in time (ErrTimeout), or one not sent to
// a stopped process (ErrTargetStopped), is not asked again by the same
// tick: the answer would be the same.
func (d *EarlyDump) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Started is when the early dump began.
func (d *EarlyDump) Started() time.Time { return d.started }
