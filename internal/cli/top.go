package cli

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/top"
)

// TopOptions are the inputs of `ctprof top`.
type TopOptions struct {
	IO       IO
	PID      int
	Name     string
	Interval time.Duration
	Port     int
	JVM      liveJVMFlags
	Native   nativeFlags
	// HTML is where the r key writes the report; empty: a new file in the
	// current directory named after the target.
	HTML string
	// Top is the rows per table of the summary printed after quitting.
	Top      int
	ProcRoot string
	// Follow is a log to follow instead of a process (top --follow).
	Follow string
}

//go:embed help/top-long.txt
var topLong string

//go:embed help/top-example.txt
var topExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdTop(io, nil) }) }

// NewCmdTop builds `ctprof top`.
func NewCmdTop(io IO, runF func(*TopOptions) error) *cobra.Command {
	opts := &TopOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "top [PID]",
		Short:   "A live terminal view of a process: locks, pools, busiest threads, findings",
		Long:    topLong,
		Example: topExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Follow != "" {
				if len(args) > 0 || opts.Name != "" {
					return usageErrorf("top --follow FILE reads a log: give no PID or --name")
				}
				return nil
			}
			return targetArgs("top", args, opts.Name, &opts.PID)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Interval < 100*time.Millisecond {
				return usageErrorf("--interval must be at least 100ms, not %s", opts.Interval)
			}
			if err := opts.JVM.validate(); err != nil {
				return err
			}
			if err := opts.Native.validate(); err != nil {
				return err
			}
			if opts.Port < 0 || opts.Port > 65535 {
				return usageErrorf("--port must be between 0 and 65535, not %d", opts.Port)
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if opts.HTML != "" {
				if err := (&outputFiles{HTML: opts.HTML}).check(nil, ""); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Follow != "" {
				return topFollowRun(cmd.Context(), opts)
			}
			return topRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Name, "name", "", "choose the target by a regular expression over process name and command line")
	f.DurationVarP(&opts.Interval, "interval", "i", time.Second, "time between samples and screen refreshes")
	f.IntVar(&opts.Port, "port", 0, "count only TCP connections to this local server port (clients on the target's Unix sockets always count)")
	f.StringVar(&opts.HTML, "html", "", "where r writes the HTML report (default: ctprof-top-PID-TIME.html in the current directory)")
	f.IntVar(&opts.Top, "top", 10, "rows per table in the summary printed after quitting")
	f.StringVar(&opts.Follow, "follow", "", "show a log of thread dumps as it grows (FILE, or - for standard input) instead of a process")
	opts.JVM.register(f)
	opts.Native.register(f)
	return cmd
}

// errNotTerminal explains the refusal to draw into a pipe or a file.
var errNotTerminal = usageErrorf("ctprof top needs a terminal on standard output; for pipes, files and scripts use ctprof attach PID (a summary at the end, --format json, --html)")

func topRun(ctx context.Context, opts *TopOptions) error {
	out, err := topTerminal(opts)
	if err != nil {
		return err
	}
	s, err := openSampler(opts.ProcRoot, opts.Name, sample.Options{PID: opts.PID, Interval: opts.Interval, Port: opts.Port, JVM: opts.JVM.options(), ExactWaits: opts.Native.mode(), Tree: opts.Native.treeMode()})
	if err != nil {
		return err
	}
	// The sampler's thread files, symbol tables and any recording are
	// released however the run ends.
	defer s.Close()
	t := s.Target()
	_, err = runTopSession(ctx, opts, out, topSession{
		src:       s,
		view:      top.Options{Interval: opts.Interval},
		htmlName:  fmt.Sprintf("ctprof-top-%d", t.PID),
		stoppedAs: "sampling",
		ended: func(n int, err error) string {
			switch s.StopReason() {
			case sample.StopTargetGone:
				return fmt.Sprintf("pid %d exited after %d samples; q quits", t.PID, n)
			case sample.StopTargetExec:
				// The view keeps the program it showed, not the one exec'd.
				return fmt.Sprintf("pid %d exec'd another program after %d samples; q quits", t.PID, n)
			}
			return ""
		},
	})
	return err
}

// topTerminal is the terminal top draws on: standard output, refused when
// it is a pipe or a file.
func topTerminal(opts *TopOptions) (*os.File, error) {
	out, ok := opts.IO.Out.(*os.File)
	if !ok || !isTerminal(out) {
		return nil, errNotTerminal
	}
	return out, nil
}

// topSession is what differs between top's two inputs, a live process and
// a followed log: the Source, how the view names it, the report's file
// name, and what the view says when the Source ends by itself.
type topSession struct {
	src      snapshot.Source
	view     top.Options
	htmlName string // the default HTML report's name, without time and extension
	sources  []string
	// stoppedAs names the work in "<stoppedAs> stopped: <err>".
	stoppedAs string
	// ended is the view's line when src ends by itself (not Ctrl-C); ""
	// says nothing.
	ended func(n int, err error) string
}

// runTopSession drains the session's Source into a fresh Aggregator while
// the view draws it, then prints the summary and where r wrote the report.
// It returns how many snapshots the view drew.
func runTopSession(ctx context.Context, opts *TopOptions, out *os.File, sess topSession) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	htmlPath := opts.HTML
	if htmlPath == "" {
		// The current directory, where the user sees it; a name that does
		// not exist yet, so nothing of the user's is replaced.
		htmlPath = fmt.Sprintf("%s-%s.html", sess.htmlName, time.Now().Format("20060102-150405"))
	}
	// Ctrl-C reaches the view as a key (the terminal is raw); SIGTERM,
	// SIGHUP (the ssh session closed) and a SIGINT from kill end it alike.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	agg := analysis.New()
	// The report is written from the view's goroutine.
	var wrote atomic.Pointer[string]
	vo := sess.view
	vo.Profile = colorProfile(out)
	vo.WriteReport = func() (string, error) {
		err := writeAtomic(htmlPath, func(f io.Writer) error {
			return report.HTML(f, report.HTMLInput{Summary: agg.Summary(), Stacks: agg.Stacks(), Sources: sess.sources, Generated: time.Now()})
		})
		if err == nil {
			wrote.Store(&htmlPath)
		}
		return htmlPath, err
	}
	var in *os.File // nil: keys from the controlling terminal (the input may be a log on a pipe)
	if f, ok := opts.IO.In.(*os.File); ok && isTerminal(f) {
		in = f
	}
	var n int
	var srcErr error
	err := top.Run(ctx, top.New(vo), out, in, func(ctx context.Context, send func(tea.Msg)) {
		n, srcErr = agg.Drain(ctx, sess.src, func(snap *snapshot.Snapshot) {
			send(top.Refresh{Summary: agg.Summary(), Stacks: top.StacksOf(snap.Dump)})
		})
		if srcErr != nil {
			send(top.Stopped{Reason: sess.stoppedAs + " stopped: " + srcErr.Error()})
		} else if ctx.Err() == nil {
			if line := sess.ended(n, srcErr); line != "" {
				send(top.Stopped{Reason: line})
			}
		}
	})
	if err != nil {
		return n, err
	}
	if n == 0 {
		return 0, srcErr
	}
	if err := writeSummary(opts.IO.Out, agg, "text", opts.Top); err != nil {
		return n, err
	}
	// Last, where the user sees it below the summary.
	if w := wrote.Load(); w != nil {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: wrote the HTML report to %s\n", *w)
	}
	if srcErr != nil {
		return n, fmt.Errorf("%s stopped early: %w", sess.stoppedAs, srcErr)
	}
	return n, nil
}

// colorProfile is the terminal's colours, none when NO_COLOR is set
// (https://no-color.org: present and not empty).
func colorProfile(out *os.File) termenv.Profile {
	if os.Getenv("NO_COLOR") != "" {
		return termenv.Ascii
	}
	return lipgloss.NewRenderer(out).ColorProfile()
}
