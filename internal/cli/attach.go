package cli

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/metrics"
	"github.com/ctprof/ctprof/internal/outfile"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/procs"
	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/self"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// AttachOptions are the inputs of `ctprof attach`.
type AttachOptions struct {
	IO       IO
	PID      int
	Name     string
	Interval time.Duration
	Duration time.Duration
	Count    int
	Port     int
	Format   string
	Top      int
	// JVM targets: thread dumps, and Flight Recorder with --jfr.
	JVM liveJVMFlags
	// Native targets: the kernel's count of futex waits.
	Native nativeFlags
	OTLP   otlpFlags
	// Record appends every sample to this recording (ctprof report).
	Record string
	// Listen, when set, serves Prometheus metrics of the run there;
	// WebConfigFile adds TLS and basic auth (exporter-toolkit format).
	Listen        string
	WebConfigFile string
	// Status forces the live status line on or off; nil means "when
	// standard error is a terminal".
	Status   *bool
	ProcRoot string
	Out      outputFiles
}

//go:embed help/attach-long.txt
var attachLongText string

var attachLong = attachLongText + jfrFlagsHelp + `

Reading another user's process needs root or that user, and the system call
a thread is blocked in (so futex hotspots) needs ptrace rights over it
(CAP_SYS_PTRACE under Yama ptrace_scope 1 or more): ctprof reads what it can
and says in the summary what was missing.

On a terminal a status line shows progress; Ctrl-C (or SIGTERM, or SIGHUP
when the terminal closes) stops sampling and still prints the summary of
everything seen. --name never matches ctprof itself or the processes that
started it (a shell, sudo, timeout), whose command lines hold the pattern.

With --listen ADDR ctprof also serves Prometheus metrics of the run at
http://ADDR/metrics while it samples (see docs/prometheus.md; ctprof serve
watches several processes). A bare port (9901) listens on 127.0.0.1 only;
:9901 listens on every interface.

` + outputFlagsHelp + `
They are written when sampling ends, also after Ctrl-C or the target's exit.`

//go:embed help/attach-example.txt
var attachExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdAttach(io, nil) }) }

// NewCmdAttach builds `ctprof attach`.
func NewCmdAttach(io IO, runF func(*AttachOptions) error) *cobra.Command {
	opts := &AttachOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "attach [PID]",
		Short:   "Sample a running process: threads, context switches, futex hotspots, connections",
		Long:    attachLong,
		Example: attachExample,
		Args: func(cmd *cobra.Command, args []string) error {
			return targetArgs("attach", args, opts.Name, &opts.PID)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Format == "folded" {
				return usageErrorf("--format folded needs thread dumps; attach prints text or json")
			}
			if opts.Interval < 10*time.Millisecond {
				return usageErrorf("--interval must be at least 10ms, not %s", opts.Interval)
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
			switch {
			case opts.Duration < 0:
				return usageErrorf("--duration must not be negative (0: until Ctrl-C or the target exits), not %s", opts.Duration)
			case opts.Count < 0:
				return usageErrorf("--count must not be negative (0: no limit), not %d", opts.Count)
			case opts.Port < 0 || opts.Port > 65535:
				return usageErrorf("--port must be between 0 and 65535, not %d", opts.Port)
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if opts.Listen != "" {
				if err := checkListen(opts.Listen); err != nil {
					return err
				}
			}
			if err := opts.Out.check(nil, opts.Record); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return attachRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "choose the target by a regular expression over process name and command line")
	f.DurationVarP(&opts.Interval, "interval", "i", time.Second, "time between samples")
	f.DurationVarP(&opts.Duration, "duration", "d", 0, "stop after this long (0: until Ctrl-C or the target exits)")
	f.IntVarP(&opts.Count, "count", "n", 0, "stop after this many samples (0: no limit)")
	f.IntVar(&opts.Port, "port", 0, "count only TCP connections to this local server port (clients on the target's Unix sockets always count)")
	f.StringVarP(&opts.Format, "format", "f", "text", "summary format: text or json")
	f.IntVar(&opts.Top, "top", 10, "rows per table in the text summary")
	opts.JVM.register(f)
	opts.Native.register(f)
	opts.OTLP.register(f)
	opts.Out.register(f)
	f.StringVar(&opts.Record, "record", "", "also append every sample to this recording file, for ctprof report")
	f.StringVar(&opts.Listen, "listen", "", "serve Prometheus metrics at this address while sampling (e.g. 127.0.0.1:9901)")
	f.StringVar(&opts.WebConfigFile, "web.config.file", "", "TLS and basic auth for --listen (Prometheus exporter-toolkit web config)")
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func attachRun(ctx context.Context, opts *AttachOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.Count == 1 {
		defer self.CollectLessForOneSample()()
		if opts.Format == "json" {
			go report.PrepareJSON()
		}
	}
	s, err := openSampler(opts.ProcRoot, opts.Name, sample.Options{PID: opts.PID, Interval: opts.Interval, Duration: opts.Duration, Count: opts.Count, Port: opts.Port,
		JVM: opts.JVM.options(), ExactWaits: opts.Native.mode(), Tree: opts.Native.treeMode()})
	if err != nil {
		return err
	}
	// The sampler's thread files, symbol tables and any recording are
	// released however the run ends.
	defer s.Close()
	opts.PID = s.Target().PID
	// Ctrl-C, SIGTERM and SIGHUP (the terminal or ssh session closed, a
	// nohup-less background run) end sampling alike: the summary and the
	// files of what was seen are still written.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	if opts.WebConfigFile != "" && opts.Listen == "" {
		return usageErrorf("--web.config.file needs --listen")
	}
	var srv *metrics.Server
	var served <-chan error
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	agg := analysis.New()
	if opts.Listen != "" {
		if srv, served, err = startMetrics(srvCtx, opts.IO, opts.Listen, opts.WebConfigFile, metrics.DefaultTop, 0); err != nil {
			return err
		}
		srv.Register(metrics.TargetInfoOf(s.Target()), agg)
		defer func() {
			stopServer()
			<-served
		}()
	}

	exp, err := opts.OTLP.open(opts.IO.ErrOut)
	if err != nil {
		return err
	}
	defer exp.Shutdown()
	if srv != nil && exp != nil {
		srv.MustRegister(exp)
	}
	stream := exp.Target(s.Target(), Version(), func() (*profile.Profile, error) { return outfile.Pprof(agg) })

	var rec *record.Writer
	if opts.Record != "" {
		if rec, err = record.Create(opts.Record, record.Header{Version: Version(), Start: time.Now(), Target: s.Target(), Interval: opts.Interval, Port: opts.Port}); err != nil {
			return err
		}
		defer func() {
			if err := rec.Close(); err != nil {
				fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v\n", err)
			}
		}()
	}
	var recErr error

	showStatus := isTerminal(opts.IO.ErrOut)
	if opts.Status != nil {
		showStatus = *opts.Status
	}
	start := time.Now()
	t := s.Target()
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: sampling pid %d (%s, %s) every %s; Ctrl-C stops and prints the summary\n",
		t.PID, report.Terminal(t.Name), t.Kind, opts.Interval)
	for _, n := range s.Notes() {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: %s\n", report.Terminal(n))
	}
	seen := 0
	n, runErr := agg.Drain(ctx, s, func(snap *snapshot.Snapshot) {
		seen++
		if rec != nil && recErr == nil {
			// A failed recording (a full disk) does not stop the run: the
			// summary still comes, and says so.
			if recErr = rec.Append(snap); recErr != nil {
				fmt.Fprintf(opts.IO.ErrOut, "\nctprof: %v\n", recErr)
			}
		}
		if showStatus {
			fmt.Fprintf(opts.IO.ErrOut, "\r\x1b[K%s", report.StatusLine(time.Since(start), seen, snap))
		}
		stream.Tick(time.Now())
	})
	if n > 0 {
		stream.Final(time.Now())
	}
	reason := s.StopReason()
	if showStatus {
		fmt.Fprint(opts.IO.ErrOut, "\r\x1b[K")
	}
	if runErr != nil && n == 0 {
		return runErr
	}
	switch reason {
	case sample.StopTargetGone:
		if srv != nil {
			srv.SetUp(opts.PID, false)
		}
		if n == 0 {
			return fmt.Errorf("pid %d exited before the first sample: %w", opts.PID, procfs.ErrProcessGone)
		}
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: pid %d exited after %d samples; summary of what was seen:\n", opts.PID, n)
	case sample.StopTargetExec:
		// The sampler stopped at the exec: the summary is of the program
		// the run began with, and its warnings say which.
		if srv != nil {
			srv.SetUp(opts.PID, false)
		}
		if n == 0 {
			return fmt.Errorf("pid %d exec'd another program before the first sample", opts.PID)
		}
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: pid %d exec'd another program after %d samples; summary of %s until then:\n", opts.PID, n, report.Terminal(t.Name))
	case sample.StopInterrupted:
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: interrupted after %d samples\n", n)
	}
	// The files do not depend on the summary reaching standard output:
	// after a hangup the terminal may be gone, and the HTML report is then
	// the only result of the run.
	sumErr := writeSummary(opts.IO.Out, agg, opts.Format, opts.Top)
	if err := errors.Join(sumErr, opts.Out.write(opts.IO.ErrOut, agg, nil)); err != nil {
		return err
	}
	if rec != nil && recErr == nil {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: %d samples recorded in %s (replay: ctprof report %s)\n", rec.Frames(), opts.Record, opts.Record)
	}
	if runErr != nil {
		return fmt.Errorf("sampling stopped early: %w", runErr)
	}
	if recErr != nil {
		return fmt.Errorf("the recording stopped early: %w", recErr)
	}
	return nil
}

// targetArgs reads the one PID argument of attach and top, or none with
// --name.
func targetArgs(command string, args []string, name string, pid *int) error {
	switch {
	case len(args) > 1:
		return usageErrorf("%s takes one PID", command)
	case len(args) == 1 && name != "":
		return usageErrorf("give a PID or --name, not both")
	case len(args) == 0 && name == "":
		return usageErrorf("%s needs a PID or --name REGEX (ctprof ps lists candidates)", command)
	case len(args) == 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 0 {
			return usageErrorf("%q is not a process id", args[0])
		}
		*pid = n
	}
	return nil
}

// openSampler picks the target (so.PID, or the one process --name
// matches) and opens its Sampler; attach and top share it.
func openSampler(procRoot, name string, so sample.Options) (*sample.Sampler, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	if name != "" {
		re, err := regexp.Compile(name)
		if err != nil {
			return nil, usageErrorf("--name: %v", err)
		}
		pid, err := procs.New(procRoot).Find(re)
		if err != nil {
			return nil, err
		}
		so.PID = pid
	}
	so.ProcRoot = procRoot
	s, err := sample.NewSampler(so)
	if err != nil {
		if errors.Is(err, procfs.ErrProcessGone) {
			return nil, fmt.Errorf("%w (ctprof ps lists candidates)", err)
		}
		return nil, err
	}
	return s, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
