package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
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
	// JVM tunes thread dumps of JVM targets.
	JVM JVMOptions
	// ExactWaits says whether a native target's futex waits are counted
	// by the kernel (exactwaits.go); off by default.
	ExactWaits ExactWaits
	// Tree says whether the target's descendants are sampled with it
	// (tree.go); TreeAuto by default.
	Tree TreeMode
}

// JVMOptions tune the thread dumps of a JVM target.
type JVMOptions struct {
	// NoDumps samples a JVM through /proc and hsperfdata only.
	NoDumps bool
	// DumpEvery is the shortest time between dumps (0: every sample).
	DumpEvery time.Duration
	// PauseBudget is the largest share of the target's time ctprof's dumps
	// may stop it for (default 0.005): after each dump the next one waits
	// until its pause is within the budget.
	PauseBudget float64
	// DumpToFile uses Thread.dump_to_file (JDK 21+): no global safepoint,
	// but no native thread ids to join with /proc.
	DumpToFile bool
	// Locks asks for owned synchronizers (-l), a heap scan at the safepoint.
	Locks bool
	// JFR records the JVM's lock waits with Flight Recorder (jfrlive.go).
	JFR JFRLiveOptions
	// DumpTimeout bounds each request to the JVM: the attach handshake, a
	// dump, a JFR start, read or stop (0: jvm.DefaultTimeout). A request
	// past it is abandoned and the run goes on with /proc (hung.go).
	DumpTimeout time.Duration
}

// DefaultPauseBudget keeps the dumps' pause under 0.5 % of the target's
// time.
const DefaultPauseBudget = 0.005

// StopReason says why Run returned.
type StopReason int

// Why a run ends.
const (
	// StopDone: --count or --duration was reached.
	StopDone StopReason = iota
	// StopInterrupted: the context was cancelled (Ctrl-C).
	StopInterrupted
	// StopTargetGone: the target exited (its pid may now be another
	// process's).
	StopTargetGone
	// StopTargetExec: the target replaced its program (exec); the run
	// ends with the samples of the program it was attached to.
	StopTargetExec
)

func (r StopReason) String() string {
	switch r {
	case StopDone:
		return "done"
	case StopInterrupted:
		return "interrupted"
	case StopTargetGone:
		return "target exited"
	case StopTargetExec:
		return "target exec'd another program"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// Sampler takes Snapshots of one live process: every OS thread from /proc,
// futex waits named by symbol, TCP connections and host context.
type Sampler struct {
	opts    Options
	fs      procfs.FS
	threads *procfs.ThreadReader
	host    *procfs.HostReader
	sym     *symbolize.Symbolizer
	// mem reads the holders of the glibc locks threads queue on.
	mem    *procfs.MemReader
	target snapshot.Target
	// fdDenied remembers that fd/ is unreadable, so connections are not
	// retried (and failed) every tick.
	fdDenied bool
	lastN    int
	// lastRootThreads is the target's own threads at the last sweep
	// (lastN counts a tree's).
	lastRootThreads int
	// spare is the thread slice of the sample Run last passed to its
	// callback, for the next sweep to fill: 10,000 threads are 2 MB a
	// tick, which the GC would otherwise scan and free every few ticks.
	spare []snapshot.OSThread

	// jvm is set for a JVM ctprof can read; nextDump is when the next
	// thread dump is due; notes are said once, in the next snapshot.
	jvm      *jvm.Info
	nextDump time.Time
	notes    []string
	// dumped are the threads the latest dump listed; droppedFutexes
	// counts the futex waits of a JVM left out of the lock table, by
	// reason (jvmfutex.go).
	dumped         dumpedThreads
	droppedFutexes map[string]int
	// tickSyncTime is the JVM's safepoint sync time when the tick began
	// (snap.JVM has the rest of its counters).
	tickSyncTime time.Duration
	// jfr is the run's Flight Recorder recording (jfrlive.go).
	jfr jfrLive
	// program is the organization of the target's own code, from its
	// latest dump that had a main thread (programKnown once one did).
	program      string
	programKnown bool
	// libjvm is a JVM's first mapping of libjvm.so (Path "": none).
	libjvm symbolize.Mapping
	// early is the dump the ctprof binary asked for while it started
	// (jvm.EarlyDump), for the first tick.
	early *jvm.EarlyDump
	// dumpsOff says the JVM cannot give thread dumps (attach disabled, no
	// quit handler): the options stay as asked, the dumps stop.
	dumpsOff bool
	// run is where the series of samples stands (next.go).
	run runState
	// budget books the pauses ctprof caused against the pause budget
	// (budget.go).
	budget pauseLedger
	// ident is the target's identity when the run began, to stop at an
	// exec or a reused pid; says keeps what the run's end reports of its
	// samples (runend.go).
	ident identState
	says  runNotes
	// hang is what the sampler knows of a target that does not answer
	// (hung.go).
	hang hangState
	// stacks unwinds the native stacks of blocked threads (stacks.go).
	stacks stackState
	// exact is the futex tracer (exactwaits.go); exactMissing says why
	// there is none when the host could not give one.
	exact        exactState
	exactMissing string
	// fast reads the threads that block too often for the samples
	// (fastreads.go).
	fast fastState
	// events are the epoll sets of the previous sample's threads
	// (eventsets.go).
	events perWait[procfs.EventSet]
	// locked are the files the previous sample's threads waited to lock
	// (lockedfiles.go).
	locked perWait[procfs.LockedFile]
	// tree samples the target's descendants with it (tree.go); nil
	// for one process.
	tree *treeState
	// member says the sampler samples one process of another's tree: the
	// host and the connections are the root's to read.
	member bool
}

// NewSampler checks the target and opens what the sweep keeps open. It
// returns an error wrapping procfs.ErrProcessGone when there is no such
// process.
func NewSampler(opts Options) (*Sampler, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	// A one-shot's dump may be on its way already: the look below waits
	// until it is, rather than compete with it for a CPU.
	early := jvm.TakeEarlyDump(opts.PID)
	if early != nil {
		<-early.Sent()
	}
	fs := procfs.NewFS(opts.ProcRoot)
	// A JVM maps libjvm.so (the kernel lists the mapped files without the
	// other mappings, two per thread). The walk, about a millisecond for
	// a 2,000-thread JVM, starts first and runs beside the reads below
	// and jvm's look for hsperfdata, whose answer counts only for a JVM.
	walked := make(chan procfs.JVMLibraries, 1)
	go func() {
		l, _ := fs.JVMLibraries(opts.PID)
		walked <- l
	}()
	libs := sync.OnceValue(func() procfs.JVMLibraries { return <-walked })
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
	if opts.JVM.PauseBudget <= 0 {
		opts.JVM.PauseBudget = DefaultPauseBudget
	}
	if opts.JVM.DumpTimeout <= 0 {
		opts.JVM.DumpTimeout = jvm.DefaultTimeout
	}
	// A one-shot has no rates: its sweep reads what one sample can use.
	tr.OneSample = opts.Count == 1
	hr := fs.NewHostReader(opts.PID)
	hr.OneSample = opts.Count == 1
	s := &Sampler{
		opts:    opts,
		fs:      fs,
		threads: tr,
		host:    hr,
		sym:     symbolize.NewSymbolizer(fs.Target(opts.PID)),
		mem:     fs.NewMemReader(opts.PID),
		target:  snapshot.Target{PID: opts.PID, Name: p.Name, Kind: snapshot.KindNative, CPUs: p.CPUs},

		droppedFutexes: map[string]int{},
	}
	// What the run is of: an exec or a new process under the pid ends it
	// (runend.go).
	s.readIdentity()
	info, inspectErr := jvm.InspectMapped(fs, opts.PID, func() bool {
		l := libs()
		return l.HotSpot && !l.OpenJ9
	})
	if l := libs(); l.HotSpot || l.OpenJ9 {
		s.target.Kind = snapshot.KindJVM
		s.libjvm = l.LibJVM
		err := inspectErr
		switch {
		case err == nil:
			s.jvm = info
			info.Timeout = opts.JVM.DumpTimeout
			if info.MainClass != "" {
				s.target.Name = info.MainClass
			}
			if p, ok := jfrsnap.ProgramOf(info.MainClass); ok {
				s.program, s.programKnown = p, true // until a dump's main thread says
			}
		case errors.Is(err, procfs.ErrProcessGone):
			return nil, fmt.Errorf("no process with pid %d: %w", opts.PID, procfs.ErrProcessGone)
		default:
			s.notes = append(s.notes, fmt.Sprintf("no JVM thread dumps or counters: %v; sampling through /proc only", err))
		}
	}
	if early != nil {
		if s.jvm != nil && earlyDumpFits(opts) {
			s.early = early
		} else if early.Result(context.Background()) != nil {
			s.notes = append(s.notes, "a thread dump asked for while ctprof started was not used (the options ask for another kind); the JVM paused for it")
		}
	}
	if err := s.openExactWaits(opts.ExactWaits); err != nil {
		s.Close()
		return nil, err
	}
	s.newTree()
	if s.jvm != nil && s.jvm.NoPerfData != "" {
		s.notes = append(s.notes, "no JVM counters (threads, safepoints, GC, monitor inflations): "+s.jvm.NoPerfData+
			"; thread dumps still work through the attach socket, but the pause each causes is not measured, so dumps are spaced as if the whole request paused the JVM")
	}
	if s.jvm != nil && !opts.JVM.NoDumps {
		switch {
		case !s.jvm.AttachSupported:
			s.notes = append(s.notes, "no thread dumps: "+jvm.ErrAttachDisabled.Error())
		case !s.jvm.DumpPossible():
			// Or a JVM in its first milliseconds: DumpPossible looks
			// again whenever a dump is due.
			s.notes = append(s.notes, "no thread dumps for now: "+jvm.ErrNoQuitHandler.Error()+" (ctprof looks again at every dump it would take)")
		}
	}
	return s, nil
}

// earlyDumpFits says whether the dump the ctprof binary asks for while it
// starts (jvm.EarlyDump: Thread.print without -l, through /proc) is the
// one these options take first.
func earlyDumpFits(o Options) bool {
	return o.Count == 1 && !o.JVM.NoDumps && !o.JVM.DumpToFile && !o.JVM.Locks && !o.JVM.JFR.Enabled &&
		(o.ProcRoot == "" || o.ProcRoot == "/proc")
}

// IsJVM reports whether pid (under the /proc mounted at root) runs a JVM.
func IsJVM(root string, pid int) bool { return procfs.NewFS(root).IsJVM(pid) }

// Notes are what the sampler found at its start that limits what it can
// see (no hsperfdata, attach disabled); the first snapshot carries them
// too, so they reach the summary's warnings.
func (s *Sampler) Notes() []string { return append([]string(nil), s.notes...) }

// Target describes the process being sampled.
func (s *Sampler) Target() snapshot.Target { return s.target }

// Close stops a JFR recording Run left (Run stops its own) and releases
// the open task directory and maps.
func (s *Sampler) Close() error {
	var unwinder error
	if s.stacks.unwinder != nil {
		unwinder = s.stacks.unwinder.Close()
	}
	return errors.Join(s.stopJFR(), s.closeExactWaits(), s.threads.Close(), s.sym.Close(), s.mem.Close(), unwinder, s.closeTree())
}

// Take takes one snapshot. It returns an error wrapping
// procfs.ErrProcessGone once the target has exited.
func (s *Sampler) Take(ctx context.Context) (*snapshot.Snapshot, error) {
	start := time.Now()
	snap := &snapshot.Snapshot{Time: start, Target: s.target, Interval: s.opts.Interval}
	// A thread dump waits on the JVM (its safepoint and printing), the
	// /proc sweep on the kernel: they run at the same time. The sweep then
	// leaves out the system calls and wait channels of sleeping threads
	// until the dump says which threads wait in Java (waitsNeeded).
	var jvmErr error
	dumping := s.jvm != nil && s.dumpDue(snap.Time)
	var dumped chan struct{}
	var inNative map[int]bool
	if dumping {
		inNative = s.javaInNative() // before the dump replaces the table
	}
	switch {
	case dumping:
		// The sweep starts once the request is on its way: started at
		// once, its goroutines (one per CPU) would hold the CPUs while
		// the dump's goroutine waits to send.
		dumped = make(chan struct{})
		sent := make(chan struct{})
		go func() {
			defer close(dumped)
			jvmErr = s.takeJVM(ctx, snap, func() { close(sent) })
		}()
		select {
		case <-sent:
		case <-dumped:
		}
	case s.jvm != nil:
		jvmErr = s.takeJVM(ctx, snap, nil)
	}
	s.threads.DeferWaits = dumping
	s.threads.EagerWaits = inNative
	s.threads.LeaveCPU = dumping
	buf := s.spare[:0]
	s.spare = nil
	if cap(buf) < s.lastN+16 {
		buf = make([]snapshot.OSThread, 0, s.lastN+16)
	}
	threads, err := s.threads.Read(buf)
	sweptAt := time.Now()
	if err == nil && len(inNative) > 0 {
		s.unwindEarly(threads, inNative)
	}
	// The connections and the host's counters do not depend on the dump:
	// read while it is under way.
	var connErr error
	// A tree's connections are read for all its processes at once
	// (takeTree), a member's by its root.
	if !s.fdDenied && !s.member && (s.tree == nil || !s.tree.on) && err == nil {
		c, err := s.fs.Connections(s.opts.PID, s.opts.Port)
		switch {
		case err == nil:
			snap.Connections = c
		case errors.Is(err, procfs.ErrPermission):
			s.fdDenied = true
		case errors.Is(err, procfs.ErrProcessGone):
			connErr = err
		}
	}
	if !s.member { // a tree's root reads the host for its members
		if h, err := s.host.Read(); err == nil {
			snap.Host = h
		}
	}
	if dumped != nil {
		// Naming futexes after the dump needs the mappings (or, on an
		// older kernel, the whole maps text) and, for a JVM, the symbols
		// of libjvm.so, where JDK 25 keeps HotSpot's own locks: ready
		// now, they cost the dump's wait, not the result's.
		s.sym.Prepare()
		s.sym.Preload(s.libjvm)
		<-dumped
	}
	if jvmErr != nil {
		return nil, jvmErr
	}
	if err != nil {
		return nil, err
	}
	if connErr != nil {
		return nil, connErr
	}
	var locked chan struct{}
	if snap.Dump != nil {
		// The lock table depends on the dump alone: it is worked out on
		// another CPU beside the waits and futexes below, which the
		// aggregation would otherwise wait for (about a millisecond
		// each for 2,000 threads).
		locked = make(chan struct{})
		go func() {
			defer close(locked)
			snap.DumpLocks = snap.Dump.Locks()
		}()
	}
	if dumping {
		s.threads.ReadWaits(threads, s.waitsNeeded(snap))
	}
	s.lastN, s.lastRootThreads = len(threads), len(threads)
	snap.Threads = threads
	s.noteHang(snap, threads, sweptAt)
	group := func() {
		snap.Futexes = procfs.GroupFutexWaits(threads, s.sym)
		if s.target.Kind == snapshot.KindJVM {
			snap.Futexes = s.jvmProgramFutexes(snap.Futexes, threads, func() bool { return snap.NoAnswer != nil || s.safepointDuringTick(snap) })
		}
		s.mem.FillHolders(snap.Futexes, threads)
	}
	group()
	s.readHoldersNow(threads, snap.Futexes)
	if s.unwindStacks(threads, snap.Futexes) {
		group() // threads read again in another wait join its group
	}
	// Last, after the holders' stacks: a holder blocked now, and still
	// named by its mutex, held it through that wait (a gate's holder
	// waits for work with the lock held: analysis.openGates).
	s.mem.ConfirmHolders(snap.Futexes)
	s.readWaitedFor(threads)
	if s.tree == nil {
		// A tree's are read once its processes' threads are in.
		s.readExactWaits(snap, threads)
	}
	s.fastReads(snap, threads, sweptAt)

	nerr, jfrStart := len(snap.Errors), time.Now()
	s.takeJFR(ctx, snap)
	s.noteJFR(snap, snap.Errors[nerr:], time.Since(jfrStart))
	snap.Errors = append(snap.Errors, s.notes...)
	s.notes = nil
	snap.Missing = s.threads.Missing()
	if s.fdDenied {
		snap.Missing = append(snap.Missing, "fd")
	}
	if s.mem.Denied() {
		snap.Missing = append(snap.Missing, "mem")
	}
	if s.exactMissing != "" {
		snap.Missing = append(snap.Missing, "futex-trace")
	}
	if locked != nil {
		<-locked
	}
	if s.tree != nil {
		s.takeTree(ctx, snap)
		s.readExactWaits(snap, snap.Threads)
	}
	snap.Cost = time.Since(start)
	return snap, nil
}

// takeJVM reads the JVM's counters and, when one is due, a thread dump
// (sent is DumpOptions.Sent for it). A dump that fails is reported in the snapshot and retried later; one the
// JVM cannot give (attach disabled) stops the dumps with one note.
func (s *Sampler) takeJVM(ctx context.Context, snap *snapshot.Snapshot, sent func()) error {
	if sent != nil {
		sent = sync.OnceFunc(sent)
	}
	if e := s.early; e != nil {
		// The dump is under way since ctprof started: the tick's
		// counters are the ones read just before its request.
		s.early = nil
		if sent != nil {
			<-e.Sent()
			sent()
		}
		if res := e.Result(ctx); res != nil {
			if res.Before != nil {
				s.setCounters(snap, *res.Before)
			}
			return s.useDump(ctx, snap, res, nil, true)
		}
		if ctx.Err() != nil {
			return nil // stopped (Ctrl-C) while the JVM did not answer
		}
		if err := e.Err(); timedOut(err) || errors.Is(err, jvm.ErrTargetStopped) {
			// Asking again would meet the same JVM.
			if pd, err := s.jvm.ReadPerfData(); err == nil {
				s.setCounters(snap, pd.Counters())
			}
			s.waitedEarly(snap, e)
			return s.useDump(ctx, snap, nil, err, true)
		}
		// It did not come back: the tick asks for its own.
	}
	if pd, err := s.jvm.ReadPerfData(); err == nil {
		s.setCounters(snap, pd.Counters())
	} else if !s.fs.Exists(s.opts.PID) {
		return fmt.Errorf("pid %d: %w", s.opts.PID, procfs.ErrProcessGone)
	}
	o := s.opts.JVM
	if !s.dumpDue(snap.Time) || !s.mayAsk(snap) || !s.jvm.DumpPossible() {
		return nil
	}
	mode := jvm.ModeThreadPrint
	if o.DumpToFile {
		mode = jvm.ModeDumpToFile
	}
	asked := time.Now()
	res, err := jvm.ThreadDump(ctx, s.jvm, jvm.DumpOptions{Mode: mode, Locks: o.Locks, AllowJcmd: true, Sent: sent})
	if timedOut(err) || cutShort(ctx, err, time.Since(asked)) {
		s.unanswered(snap, "thread dump", time.Since(asked))
	}
	return s.useDump(ctx, snap, res, err, false)
}

// setCounters keeps a tick's JVM counters, read when it began.
func (s *Sampler) setCounters(snap *snapshot.Snapshot, c jvm.Counters) {
	s.tickSyncTime = c.SafepointSyncTime
	snap.JVM = &snapshot.JVMCounters{
		LiveThreads: c.LiveThreads, DaemonThreads: c.DaemonThreads, PeakThreads: c.PeakThreads, StartedThreads: c.StartedThreads,
		Safepoints: c.Safepoints, SafepointTime: c.SafepointTime, GCTime: c.GCTime, Sync: c.Sync,
	}
}

// useDump puts a dump request's outcome in the tick's snapshot and spaces
// the next dump by its pause. early says the dump is the one the binary
// asked for while it started.
func (s *Sampler) useDump(ctx context.Context, snap *snapshot.Snapshot, res *jvm.DumpResult, err error, early bool) error {
	o := s.opts.JVM
	switch {
	case errors.Is(err, procfs.ErrProcessGone):
		return err
	case errors.Is(err, jvm.ErrTargetStopped):
		// Said by the snapshot's Stopped, and the analysis's finding.
		return nil
	case errors.Is(err, jvm.ErrAttachDisabled), errors.Is(err, jvm.ErrNoQuitHandler):
		s.dumpsOff = true
		snap.Errors = append(snap.Errors, "no thread dumps: "+err.Error())
		return nil
	case err != nil:
		if ctx.Err() != nil {
			return nil
		}
		snap.Errors = append(snap.Errors, "thread dump failed: "+err.Error())
		s.nextDump = snap.Time.Add(max(o.DumpEvery, 5*s.opts.Interval))
		return nil
	}
	s.answered()
	d, err := threaddump.ParseOwnedBytes(res.Text) // res.Text is ours and never changes: kept read-only as snap.DumpText
	if err == nil {
		d = s.settleNames(d, res.Text, snap)
	}
	if err != nil {
		snap.Errors = append(snap.Errors, "thread dump unreadable: "+err.Error())
	} else {
		snap.Dump = d[len(d)-1]
		snap.DumpText = res.Text
		s.noteDumpThreads(snap.Dump)
		if p := snap.Dump.ProgramOrganization(); p != "?" {
			s.program, s.programKnown = p, true // the JFR reader's wait rule needs it
		}
	}
	snap.DumpCost = &snapshot.DumpCost{Method: res.Method, Wall: res.Wall, Pause: res.Pause, Early: early}
	if res.Fallback != "" {
		s.notes = append(s.notes, "thread dumps through jcmd: "+res.Fallback)
	}
	// Keep the pause within the budget: a dump that stopped the JVM for p
	// waits p/budget before the next one.
	wait := o.DumpEvery
	pause := res.Pause
	if !res.PauseKnown {
		// Without hsperfdata the safepoint time is unknown; the request's
		// wall time bounds it from above.
		pause = res.Wall
	}
	wait = max(wait, time.Duration(float64(pause)/o.PauseBudget))
	s.nextDump = snap.Time.Add(wait)
	s.budget.addDumpPause(snap.Time, pause, o.PauseBudget)
	return nil
}

// dumpDue says whether a tick starting at now takes a thread dump, as far
// as the options and the pause budget go (takeJVM also checks the JVM can
// give one).
func (s *Sampler) dumpDue(now time.Time) bool {
	return !s.opts.JVM.NoDumps && !s.dumpsOff && !now.Before(s.nextDump) && s.withinBudget(now)
}

// waitsNeeded says, after a tick's dump, which sleeping threads' system
// calls the sweep still reads. A thread the dump shows waiting in Java
// (BLOCKED, WAITING, TIMED_WAITING with Java frames) waits on the JVM's
// own per-thread futex, which says less than the dump: skipped. Any other
// sleeping thread (a RUNNABLE one may wait on a native mutex in JNI code,
// the JVM's own threads, threads the dump does not list) may have looked
// asleep only because the dump's safepoint stopped it during the sweep:
// its state is read again, then its system call if it still sleeps.
func (s *Sampler) waitsNeeded(snap *snapshot.Snapshot) func(*snapshot.OSThread) procfs.WaitRead {
	if snap.DumpCost == nil {
		return nil // no dump was taken: nothing stopped the threads
	}
	if snap.Dump == nil || snap.DumpCost.Method == jvm.MethodDumpToFile {
		// A dump without native ids to join (or unreadable).
		return func(*snapshot.OSThread) procfs.WaitRead { return procfs.WaitsRecheck }
	}
	// The dump's table (noteDumpThreads, called on snap.Dump).
	dumped := s.dumped
	return func(t *snapshot.OSThread) procfs.WaitRead {
		kind, listed := dumped[t.TID]
		java, waiting := listed && kind != dumpedInternal, listed && kind == dumpedJavaWaiting
		switch {
		case !t.Sleeping() && java:
			return procfs.WaitsSkip // runs Java code: it was not stopped
		case !t.Sleeping():
			// The VM thread and the attach listener run for the dump
			// itself: their state after it is theirs.
			return procfs.WaitsRecheck
		case waiting:
			return procfs.WaitsSkip
		}
		return procfs.WaitsRecheck
	}
}

// safepointDuringTick reports whether a safepoint other than the one the
// tick's own dump caused began or ended between the tick's start (when
// snap.JVM was read) and now (after the /proc sweep): hsperfdata counts a
// safepoint when it begins and adds its time when it ends, and the dump's
// own pause was measured the same way. The sweep runs after the dump's
// reply, so the dump's safepoint has ended by then; what remains are its
// stragglers and the JVM's own safepoints (GC, deoptimization). Without
// counters, a tick with a dump counts as one, to be safe.
func (s *Sampler) safepointDuringTick(snap *snapshot.Snapshot) bool {
	dumped := snap.DumpCost != nil
	if s.jvm == nil || snap.JVM == nil {
		return dumped
	}
	pd, err := s.jvm.ReadPerfData()
	if err != nil {
		return dumped
	}
	c := pd.Counters()
	began := c.Safepoints - snap.JVM.Safepoints
	// A dump's pause counts the time to reach the safepoint too.
	ended := c.SafepointTime - snap.JVM.SafepointTime + c.SafepointSyncTime - s.tickSyncTime
	if dumped {
		began--
		ended -= snap.DumpCost.Pause
	}
	return began > 0 || ended > time.Microsecond
}

// Run samples every Interval until Count or Duration is reached, ctx is
// cancelled, or the target exits, calling fn with each snapshot (see Next).
// The error is the one that stopped sampling, if it was not one of those
// normal ends. fn must not keep a snapshot's Threads once it returns: the
// next sample fills the same slice (the Aggregator and the recording copy
// what they keep).
func (s *Sampler) Run(ctx context.Context, fn func(*snapshot.Snapshot)) (StopReason, error) {
	for {
		snap, err := s.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return s.run.reason, err
		}
		fn(snap)
	}
}
