package cli

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/metrics"
	"github.com/ctprof/ctprof/internal/serve"
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
	// MaxRequests bounds the scrapes served at once (0: no bound).
	MaxRequests int
	Top         int
	// Discovery is the time between looks for targets that started or
	// exited.
	Discovery time.Duration
	// JVM tunes the thread dumps of JVM targets.
	JVM      liveJVMFlags
	Native   nativeFlags
	OTLP     otlpFlags
	ProcRoot string

	// onListen, when set, is told the bound address (tests listen on
	// port 0).
	onListen func(addr string)
}

//go:embed help/serve-long.txt
var serveLongText string

var serveLong = serveLongText + jfrFlagsHelp + ` Each JVM target gets its own recording.

Reading another user's process needs root or that user (and for the system
calls threads are blocked in, CAP_SYS_PTRACE); see docs/prometheus.md for
systemd and Kubernetes setups.`

//go:embed help/serve-example.txt
var serveExample string

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
			if err := opts.OTLP.validate(); err != nil {
				return err
			}
			if err := opts.Native.validate(); err != nil {
				return err
			}
			if opts.Native.exactWaits == "on" {
				return usageErrorf("serve --exact-waits takes auto or off: serve counts the waits of the native targets it can trace, and samples the rest")
			}
			if opts.MaxRequests < 0 {
				return usageErrorf("--max-requests %d: give the scrapes served at once, or 0 for no bound", opts.MaxRequests)
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
	f.IntVar(&opts.Port, "port", 0, "count only TCP connections to this local server port (clients on the target's Unix sockets always count)")
	opts.JVM.register(f)
	opts.Native.register(f)
	opts.OTLP.register(f)
	f.Lookup("exact-waits").Usage = "native targets: count every futex wait with the kernel's tracepoints where the privilege allows (root or CAP_PERFMON): auto or off"
	f.StringVar(&opts.Listen, "listen", metrics.DefaultAddr, "address to serve metrics on (host:port; :port for all interfaces)")
	f.StringVar(&opts.WebConfigFile, "web.config.file", "", "Prometheus exporter-toolkit web configuration: TLS and basic auth")
	f.IntVar(&opts.MaxRequests, "max-requests", metrics.DefaultMaxRequests, "scrapes of /metrics served at once; one more is answered 503 Service Unavailable (0: no bound)")
	f.IntVar(&opts.Top, "top", metrics.DefaultTop, "locks, pools and waking pools with series of their own per target; the rest are summed as \"other\"")
	f.DurationVar(&opts.Discovery, "discovery-interval", 5*time.Second, "time between looks for targets that started or exited")
	return cmd
}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	if ctx == nil {
		ctx = context.Background()
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
	srv, served, err := startMetrics(ctx, opts.IO, opts.Listen, opts.WebConfigFile, opts.Top, metrics.MaxRequestsOfFlag(opts.MaxRequests))
	if err != nil {
		return err
	}
	exp, err := opts.OTLP.open(opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer exp.Shutdown()
	if exp != nil {
		srv.MustRegister(exp)
	}
	fmt.Fprintln(opts.IO.ErrOut, "ctprof: Ctrl-C stops")
	if opts.onListen != nil {
		opts.onListen(srv.Addr())
	}

	ts := serve.New(serve.Options{
		PIDs: opts.PIDs, Name: re, Java: opts.Java, Interval: opts.Interval, Port: opts.Port, JVM: opts.JVM.options(),
		ExactWaits: opts.Native.mode(), Tree: opts.Native.treeMode(), Discovery: opts.Discovery, ProcRoot: opts.ProcRoot, Exporter: srv, Profiles: exp, Version: Version(),
		Report: func(ev serve.Event) { fmt.Fprintln(opts.IO.ErrOut, ev.Message(opts.Interval)) },
	})
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		ts.Run(ctx)
	}()
	select {
	case <-ctx.Done():
		<-followed
		err := <-served
		fmt.Fprintln(opts.IO.ErrOut, "ctprof: stopped")
		return err
	case err := <-served:
		// The server failed (a bad certificate, say): stop sampling.
		cancel()
		<-followed
		if err == nil {
			err = errors.New("metrics server stopped")
		}
		return err
	}
}
