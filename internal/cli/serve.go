package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/metrics"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/sample"
)

// ServeOptions are the inputs of `ctprof serve`.
type ServeOptions struct {
	IO            IO
	PIDs          []int
	Name          string
	Java          bool
	Interval      time.Duration
	Port          int
	Listen        string
	WebConfigFile string
	Top           int
	// Discovery is the time between looks for targets that started or
	// exited.
	Discovery time.Duration
	// JVM tunes the thread dumps of JVM targets.
	JVM      liveJVMFlags
	ProcRoot string

	// onListen, when set, is told the bound address (tests listen on
	// port 0).
	onListen func(addr string)
}

const serveLong = `Serve Prometheus metrics for one or more live processes until Ctrl-C.

Each target gets its own sampler (every --interval, as ctprof attach) and its
own statistics; /metrics formats them at every scrape: threads by state and
by pool, lock hotspots (top --top locks by blocked thread-seconds, plus
"other"), context switches, run-queue wait, connections and threads per
connection. JVMs are also dumped over the attach protocol and their
hsperfdata counters read, as ctprof attach does: Java thread states, Java lock
names and the pause ctprof causes (kept under --pause-budget). The metrics are documented in docs/prometheus.md; a Grafana dashboard is in
deploy/grafana/ctprof-dashboard.json.

Targets:
  --pid N       this process (repeatable); when it exits, ctprof_up{pid="N"}
                becomes 0 and stays 0 (a reused pid is another program)
  --name REGEX  every process whose name or command line matches
  --java        every JVM on the host

Processes matching --name or --java that start later are picked up, and
those that exit are dropped, without a restart (ctprof looks again every
--discovery-interval). ctprof never stops or kills a target. It reads /proc;
for a JVM it also starts the JVM's attach listener the way jcmd does (a
.attach_pid file and SIGQUIT, sent only to a JVM that handles it) and asks for
thread dumps, each a short safepoint pause, kept under --pause-budget.

ctprof listens on 127.0.0.1:9901 unless told otherwise: --listen :9901
listens on every interface. --web.config.file takes a Prometheus
exporter-toolkit web configuration (TLS certificates, basic auth users with
bcrypt hashes), as node_exporter does.

` + jfrFlagsHelp + ` Each JVM target gets its own recording.

Reading another user's process needs root or that user (and for the system
calls threads are blocked in, CAP_SYS_PTRACE); see docs/prometheus.md for
systemd and Kubernetes setups.`

const serveExample = `  ctprof serve --pid 4242
  ctprof serve --java --listen :9901
  ctprof serve --name 'market-?data' --discovery-interval 2s
  ctprof serve --pid 4242 --pid 4343 --web.config.file /etc/ctprof/web.yml`

func init() { register(func(io IO) *cobra.Command { return NewCmdServe(io, nil) }) }

// NewCmdServe builds `ctprof serve`. runF replaces serveRun in tests.
func NewCmdServe(io IO, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Export Prometheus metrics for running processes: threads, locks, context switches",
		Long:    serveLong,
		Example: serveExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("serve takes its targets as --pid N, --name REGEX or --java, not arguments")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(opts.PIDs) == 0 && opts.Name == "" && !opts.Java {
				return usageErrorf("serve needs targets: --pid N, --name REGEX or --java (ctprof ps lists candidates)")
			}
			if err := opts.JVM.validate(); err != nil {
				return err
			}
			for _, pid := range opts.PIDs {
				if pid <= 0 {
					return usageErrorf("--pid %d is not a process id", pid)
				}
			}
			if opts.Name != "" {
				if _, err := regexp.Compile(opts.Name); err != nil {
					return usageErrorf("--name: %v", err)
				}
			}
			switch {
			case opts.Interval < 10*time.Millisecond:
				return usageErrorf("--interval must be at least 10ms")
			case opts.Discovery < 100*time.Millisecond:
				return usageErrorf("--discovery-interval must be at least 100ms")
			case opts.Port < 0 || opts.Port > 65535:
				return usageErrorf("--port must be between 0 and 65535")
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if err := checkListen(opts.Listen); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&opts.PIDs, "pid", nil, "serve this process (repeatable, or comma-separated)")
	f.StringVar(&opts.Name, "name", "", "serve every process whose name or command line matches this regular expression")
	f.BoolVar(&opts.Java, "java", false, "serve every JVM on the host")
	f.DurationVarP(&opts.Interval, "interval", "i", time.Second, "time between samples of each target")
	f.IntVar(&opts.Port, "port", 0, "count only connections to this local server port")
	opts.JVM.register(f)
	f.StringVar(&opts.Listen, "listen", metrics.DefaultAddr, "address to serve metrics on (host:port; :port for all interfaces)")
	f.StringVar(&opts.WebConfigFile, "web.config.file", "", "Prometheus exporter-toolkit web configuration: TLS and basic auth")
	f.IntVar(&opts.Top, "top", metrics.DefaultTop, "locks, pools and waking pools with series of their own per target; the rest are summed as \"other\"")
	f.DurationVar(&opts.Discovery, "discovery-interval", 5*time.Second, "time between looks for targets that started or exited")
	return cmd
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	root := opts.ProcRoot
	if root == "" {
		root = "/proc"
	}
	var re *regexp.Regexp
	if opts.Name != "" {
		var err error
		if re, err = regexp.Compile(opts.Name); err != nil {
			return usageErrorf("--name: %v", err)
		}
	}
	// Ctrl-C, the service manager's SIGTERM, or SIGHUP (a closed terminal)
	// stop cleanly.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, served, err := startMetrics(ctx, opts.IO, opts.Listen, opts.WebConfigFile, opts.Top)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.ErrOut, "ctprof: Ctrl-C stops")
	if opts.onListen != nil {
		opts.onListen(srv.Addr())
	}

	ts := newServeTargets(opts, procfs.NewFS(root), re, srv)
	ts.scan(ctx)
	ticker := time.NewTicker(opts.Discovery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			ts.wait()
			err := <-served
			fmt.Fprintln(opts.IO.ErrOut, "ctprof: stopped")
			return err
		case err := <-served:
			// The server failed (a bad certificate, say): stop sampling.
			cancel()
			ts.wait()
			if err == nil {
				err = errors.New("metrics server stopped")
			}
			return err
		case ev := <-ts.exited:
			ts.exit(ev)
		case <-ticker.C:
			ts.scan(ctx)
		}
	}
}

// listenHint adds what to do about a port in use or a privileged port.
func listenHint(err error) error {
	switch {
	case errors.Is(err, metrics.ErrAddress):
		return usageErrorf("--listen: %v", err)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w; choose another with --listen", err)
	case errors.Is(err, syscall.EACCES):
		// Not wrapped: the generic permission hint is about files.
		return fmt.Errorf("%v; ports below 1024 need root or CAP_NET_BIND_SERVICE, choose another with --listen", err)
	}
	return err
}

// serveTargets follows the processes ctprof serves: one Sampler goroutine
// and one Aggregator per target.
type serveTargets struct {
	opts   *ServeOptions
	fs     procfs.FS
	re     *regexp.Regexp
	srv    *metrics.Server
	errOut io.Writer
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

type targetExit struct {
	pid    int
	name   string
	reason sample.StopReason
	err    error
}

func newServeTargets(opts *ServeOptions, fs procfs.FS, re *regexp.Regexp, srv *metrics.Server) *serveTargets {
	ts := &serveTargets{
		opts: opts, fs: fs, re: re, srv: srv, errOut: opts.IO.ErrOut, self: selfAndAncestors(fs.Root()),
		explicit: map[int]bool{}, running: map[int]context.CancelFunc{}, gone: map[int]bool{},
		failed: map[int]bool{}, jvm: map[int]jvmVerdict{},
		exited: make(chan targetExit),
	}
	for _, pid := range opts.PIDs {
		ts.explicit[pid] = true
	}
	return ts
}

// scan starts samplers for the targets that are not sampled yet: the
// explicit pids, and the processes that match --name or --java.
func (ts *serveTargets) scan(ctx context.Context) {
	for _, pid := range ts.opts.PIDs {
		if ts.running[pid] == nil && !ts.gone[pid] {
			ts.start(ctx, pid, true)
		}
	}
	if ts.re == nil && !ts.opts.Java {
		return
	}
	pids, err := ts.listPIDs()
	if err != nil {
		fmt.Fprintf(ts.errOut, "ctprof: %v\n", err)
		return
	}
	alive := make(map[int]bool, len(pids))
	for _, pid := range pids {
		alive[pid] = true
		if ts.self[pid] || ts.running[pid] != nil || ts.explicit[pid] || ts.failed[pid] {
			continue
		}
		if ts.matches(pid) {
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

// listPIDs lists the processes under the /proc root.
func (ts *serveTargets) listPIDs() ([]int, error) {
	ents, err := os.ReadDir(ts.fs.Root())
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", ts.fs.Root(), err)
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// matches reports whether a discovered process is a target: its name or
// command line matches --name, or --java is given and it runs a JVM.
// Kernel threads and zombies (no command line) never are.
func (ts *serveTargets) matches(pid int) bool {
	p, err := ts.fs.Process(pid)
	if err != nil || p.Cmdline == "" {
		return false // gone meanwhile, or nothing to profile
	}
	if ts.re != nil && (ts.re.MatchString(p.Name) || ts.re.MatchString(p.Cmdline)) {
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
func (ts *serveTargets) start(ctx context.Context, pid int, explicit bool) {
	s, err := sample.NewSampler(sample.Options{PID: pid, Interval: ts.opts.Interval, Port: ts.opts.Port, ProcRoot: ts.fs.Root(), JVM: ts.opts.JVM.options()})
	if err != nil {
		switch {
		case explicit:
			// Exported as down, and not tried again.
			ts.srv.SetUp(pid, false)
			ts.gone[pid] = true
			fmt.Fprintf(ts.errOut, "ctprof: %v; exporting ctprof_up{pid=\"%d\"} 0\n", err, pid)
		case errors.Is(err, procfs.ErrProcessGone):
			// Exited between the scan and now: nothing to say.
		default:
			ts.failed[pid] = true
			fmt.Fprintf(ts.errOut, "ctprof: cannot sample pid %d: %v\n", pid, err)
		}
		return
	}
	t := s.Target()
	for _, n := range s.Notes() {
		fmt.Fprintf(ts.errOut, "ctprof: pid %d: %s\n", pid, report.Terminal(n))
	}
	agg := analysis.New()
	ts.srv.Register(metrics.TargetInfoOf(t), agg)
	tctx, cancel := context.WithCancel(ctx)
	ts.running[pid] = cancel
	fmt.Fprintf(ts.errOut, "ctprof: sampling pid %d (%s, %s) every %s\n", pid, report.Terminal(t.Name), t.Kind, ts.opts.Interval)
	ts.wg.Add(1)
	go func() {
		defer ts.wg.Done()
		defer s.Close()
		reason, err := s.Run(tctx, agg.Add)
		select {
		case ts.exited <- targetExit{pid: pid, name: t.Name, reason: reason, err: err}:
		case <-ctx.Done():
		}
	}()
}

// exit handles a sampler that returned: an explicit target is exported as
// down, a discovered one is dropped.
func (ts *serveTargets) exit(ev targetExit) {
	if cancel := ts.running[ev.pid]; cancel != nil {
		cancel()
	}
	delete(ts.running, ev.pid)
	if ev.reason == sample.StopInterrupted {
		return
	}
	what := "exited"
	if ev.err != nil {
		what = fmt.Sprintf("could not be sampled any more (%v)", ev.err)
	}
	name := report.Terminal(ev.name)
	if ts.explicit[ev.pid] {
		ts.srv.SetUp(ev.pid, false)
		ts.gone[ev.pid] = true
		fmt.Fprintf(ts.errOut, "ctprof: pid %d (%s) %s; exporting ctprof_up 0 for it\n", ev.pid, name, what)
		return
	}
	ts.srv.Unregister(ev.pid)
	if ev.err != nil {
		ts.failed[ev.pid] = true
	}
	fmt.Fprintf(ts.errOut, "ctprof: pid %d (%s) %s; its series are dropped\n", ev.pid, name, what)
}

// wait stops every sampler (the context is cancelled) and waits for them.
func (ts *serveTargets) wait() {
	for _, cancel := range ts.running {
		cancel()
	}
	ts.wg.Wait()
}
