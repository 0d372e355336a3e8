// Package serve follows the processes `ctprof serve` exports: the pids it
// was given, and those that match --name or --java, which it looks for
// again every discovery interval. Each target gets its own Sampler
// goroutine and its own Aggregator, registered with the metrics exporter
// while it lives.
//
// Like every package below internal/cli it prints nothing: what happens
// to targets reaches the command as Events.
package serve

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/metrics"
	"github.com/ctprof/ctprof/internal/otlp"
	"github.com/ctprof/ctprof/internal/outfile"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/procs"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Exporter is where targets are exported: a *metrics.Server.
type Exporter interface {
	Register(t metrics.TargetInfo, src metrics.SummarySource)
	// SetUp exports pid as up or down (ctprof_up).
	SetUp(pid int, up bool)
	// Unregister drops every series of pid.
	Unregister(pid int)
}

// Options say which processes to follow and how to sample them.
type Options struct {
	// PIDs are the explicit targets. One that exits, or never existed, is
	// exported as down and stays down: a reused pid is another program.
	PIDs []int
	// Name, when set, makes every process whose name or command line it
	// matches a target.
	Name *regexp.Regexp
	// Java makes every JVM a target.
	Java bool
	// Interval is the time between samples of each target.
	Interval time.Duration
	// Port, when not 0, counts only connections to this local port.
	Port int
	// JVM tunes the thread dumps of JVM targets.
	JVM sample.JVMOptions
	// ExactWaits counts native targets' futex waits with the kernel's
	// tracepoints (ExactAuto: where the privilege allows; the targets
	// share the sampler's bound on traced threads).
	ExactWaits sample.ExactWaits
	// Tree says whether native targets' descendants are sampled with
	// them (sample.TreeMode).
	Tree sample.TreeMode
	// Discovery is the time between looks for targets that started (5 s
	// when not positive).
	Discovery time.Duration
	// ProcRoot is where /proc is mounted ("/proc" when empty).
	ProcRoot string

	// Exporter exports the targets; required.
	Exporter Exporter
	// Profiles, when set, is sent each target's contention profile every
	// interval (OTLP); Version is ctprof's, for the profiles' scope.
	Profiles *otlp.Exporter
	Version  string
	// Report, when set, is told what happens to targets. It is called from
	// Run's goroutine only.
	Report func(Event)
}

// EventKind says what happened.
type EventKind int

// What Report is told.
const (
	// ListFailed: the processes could not be listed (Err); the next look
	// tries again.
	ListFailed EventKind = iota + 1
	// StartFailed: a target could not be sampled (Err). An explicit one is
	// exported as down and not tried again; a discovered one is not tried
	// again while its pid lives. A discovered process that exited before
	// its sampler started is not told.
	StartFailed
	// Noted: the sampler of a starting target says something about it
	// (Note), a missing permission say; told before Started.
	Noted
	// Started: Target is being sampled.
	Started
	// Exited: Target's sampler stopped because the target exited, or
	// because it could not be sampled any more (Err). An explicit target is
	// exported as down, a discovered one's series are dropped. Samplers
	// stopped by the end of Run are not told.
	Exited
)

// Event is one thing that happened to a target.
type Event struct {
	Kind EventKind
	PID  int
	// Explicit: the target is one of Options.PIDs.
	Explicit bool
	// Target is what the sampler read of the process (Started, Exited).
	// Its Name comes from the target: escape it before showing it.
	Target snapshot.Target
	// Note is the sampler's note (Noted), from the target as well.
	Note string
	Err  error
	// Exec says the target replaced its program (Exited): its sampler
	// stopped there, so no series mixes two programs.
	Exec bool
}

// Targets follows the processes one `ctprof serve` samples.
type Targets struct {
	opts  Options
	procs procs.Lister
	fs    procfs.FS
	// self is ctprof and its ancestors (the shell, sudo, timeout that
	// started it): their command lines hold the --name pattern itself.
	self map[int]bool

	explicit map[int]bool
	running  map[int]context.CancelFunc
	// gone are explicit pids that exited or never existed: they stay down
	// (a reused pid would be another program).
	gone map[int]bool
	// failed are discovered pids that could not be sampled (permission):
	// not retried, and not reported twice, while the pid lives.
	failed map[int]bool
	// jvm caches whether a pid runs a JVM, keyed by pid and name: a
	// launcher script that execs java keeps its pid but changes its name.
	jvm map[int]jvmVerdict

	exited chan targetExit
	wg     sync.WaitGroup
}

type jvmVerdict struct {
	name string
	jvm  bool
}

// targetExit is what a sampler goroutine hands back when Run returns.
type targetExit struct {
	pid    int
	target snapshot.Target
	reason sample.StopReason
	err    error
}

// New prepares the targets of o; Run follows them.
func New(o Options) *Targets {
	if o.Discovery <= 0 {
		o.Discovery = 5 * time.Second
	}
	if o.Report == nil {
		o.Report = func(Event) {}
	}
	l := procs.New(o.ProcRoot)
	ts := &Targets{
		opts: o, procs: l, fs: procfs.NewFS(l.Root()), self: l.SelfAndAncestors(),
		explicit: map[int]bool{}, running: map[int]context.CancelFunc{}, gone: map[int]bool{},
		failed: map[int]bool{}, jvm: map[int]jvmVerdict{},
		exited: make(chan targetExit),
	}
	for _, pid := range o.PIDs {
		ts.explicit[pid] = true
	}
	return ts
}

// Run samples the targets until ctx ends: it looks for them at once and
// every Discovery, and handles the samplers that stop. Once ctx ends it
// stops every sampler and returns when all have.
func (ts *Targets) Run(ctx context.Context) {
	ts.scan(ctx)
	ticker := time.NewTicker(ts.opts.Discovery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			ts.wait()
			return
		case ev := <-ts.exited:
			ts.exit(ev)
		case <-ticker.C:
			ts.scan(ctx)
		}
	}
}

// scan starts samplers for the targets that are not sampled yet: the
// explicit pids, and the processes that match --name or --java.
func (ts *Targets) scan(ctx context.Context) {
	for _, pid := range ts.opts.PIDs {
		if ts.running[pid] == nil && !ts.gone[pid] {
			ts.start(ctx, pid, true)
		}
	}
	if ts.opts.Name == nil && !ts.opts.Java {
		return
	}
	pids, err := ts.procs.PIDs()
	if err != nil {
		ts.opts.Report(Event{Kind: ListFailed, Err: err})
		return
	}
	alive := make(map[int]bool, len(pids))
	for _, pid := range pids {
		alive[pid] = true
		if ts.self[pid] || ts.running[pid] != nil || ts.explicit[pid] || ts.failed[pid] {
			continue
		}
		if ts.matches(pid) && !ts.inParentsTree(pid) {
			ts.start(ctx, pid, false)
		}
	}
	// Forget what was learnt about processes that are gone.
	for pid := range ts.failed {
		if !alive[pid] {
			delete(ts.failed, pid)
		}
	}
	for pid := range ts.jvm {
		if !alive[pid] {
			delete(ts.jvm, pid)
		}
	}
}

// inParentsTree reports a discovered process that its parent's sampler
// covers: the parent is a target too and runs the same executable (a
// PostgreSQL backend under its postmaster, an nginx worker under its
// master), and trees are sampled (sample.TreeMode).
func (ts *Targets) inParentsTree(pid int) bool {
	if ts.opts.Tree == sample.TreeOff {
		return false
	}
	pp, err := ts.fs.Parent(pid)
	if err != nil || pp <= 1 {
		return false
	}
	exe := ts.fs.Executable(pid)
	return exe != "" && ts.fs.Executable(pp) == exe && ts.matches(pp)
}

// matches reports whether a discovered process is a target: its name or
// command line matches --name, or --java is given and it runs a JVM.
// Kernel threads and zombies (no command line) never are.
func (ts *Targets) matches(pid int) bool {
	p, err := ts.procs.Get(pid)
	if err != nil || p.Cmdline == "" {
		return false // gone meanwhile, or nothing to profile
	}
	re := ts.opts.Name
	if re != nil && (re.MatchString(p.Name) || re.MatchString(p.Cmdline)) {
		return true
	}
	if !ts.opts.Java {
		return false
	}
	// A mapped libjvm finds HotSpot and OpenJ9 alike, with or without
	// hsperfdata; the sampler then names a HotSpot JVM by its main class.
	v, ok := ts.jvm[pid]
	if !ok || v.name != p.Name {
		v = jvmVerdict{name: p.Name, jvm: ts.fs.IsJVM(pid)}
		ts.jvm[pid] = v
	}
	return v.jvm
}

// start begins sampling pid in its own goroutine.
func (ts *Targets) start(ctx context.Context, pid int, explicit bool) {
	s, err := sample.NewSampler(sample.Options{PID: pid, Interval: ts.opts.Interval, Port: ts.opts.Port, ProcRoot: ts.fs.Root(), JVM: ts.opts.JVM, ExactWaits: ts.opts.ExactWaits, Tree: ts.opts.Tree})
	if err != nil {
		switch {
		case explicit:
			// Exported as down, and not tried again.
			ts.opts.Exporter.SetUp(pid, false)
			ts.gone[pid] = true
		case errors.Is(err, procfs.ErrProcessGone):
			return // exited between the scan and now: nothing to say
		default:
			ts.failed[pid] = true
		}
		ts.opts.Report(Event{Kind: StartFailed, PID: pid, Explicit: explicit, Err: err})
		return
	}
	t := s.Target()
	for _, n := range s.Notes() {
		ts.opts.Report(Event{Kind: Noted, PID: pid, Explicit: explicit, Target: t, Note: n})
	}
	agg := analysis.New()
	ts.opts.Exporter.Register(metrics.TargetInfoOf(t), agg)
	tctx, cancel := context.WithCancel(ctx)
	ts.running[pid] = cancel
	ts.opts.Report(Event{Kind: Started, PID: pid, Explicit: explicit, Target: t})
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		defer s.Close()
		profiles := ts.opts.Profiles.Target(t, ts.opts.Version, func() (*profile.Profile, error) { return outfile.Pprof(agg) })
		n, err := agg.Drain(tctx, s, func(*snapshot.Snapshot) { profiles.Tick(time.Now()) })
		if n > 0 {
			profiles.Final(time.Now())
		}
		reason := s.StopReason()
		select {
		case ts.exited <- targetExit{pid: pid, target: t, reason: reason, err: err}:
		case <-ctx.Done():
		}
	}()
}

// exit handles a sampler that returned: an explicit target is exported as
// down, a discovered one is dropped.
func (ts *Targets) exit(ev targetExit) {
	if cancel := ts.running[ev.pid]; cancel != nil {
		cancel()
	}
	delete(ts.running, ev.pid)
	if ev.reason == sample.StopInterrupted {
		return
	}
	explicit := ts.explicit[ev.pid]
	if explicit {
		ts.opts.Exporter.SetUp(ev.pid, false)
		ts.gone[ev.pid] = true
	} else {
		ts.opts.Exporter.Unregister(ev.pid)
		if ev.err != nil {
			ts.failed[ev.pid] = true
		}
	}
	ts.opts.Report(Event{Kind: Exited, PID: ev.pid, Explicit: explicit, Target: ev.target, Err: ev.err, Exec: ev.reason == sample.StopTargetExec})
}

// wait stops every sampler (the context is cancelled) and waits for them.
func (ts *Targets) wait() {
	for _, cancel := range ts.running {
		cancel()
	}
	ts.wg.Wait()
}
