package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/top"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// topFollowRun is top --follow: the same view as topRun over a followed
// log (source.Follow, as analyze --follow reads it) instead of a Sampler,
// so there is no process, no PID and no interval: the view refreshes at
// each dump the log completes.
func topFollowRun(ctx context.Context, opts *TopOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	out, ok := opts.IO.Out.(*os.File)
	if !ok || !isTerminal(out) {
		return errNotTerminal
	}
	if opts.Follow == source.StdinName {
		if in, ok := opts.IO.In.(*os.File); ok && isTerminal(in) {
			return usageErrorf("top --follow - reads the log from standard input, which is this terminal: pipe the log in (tail -F app.log | ctprof top --follow -)")
		}
	}
	src, err := source.Follow(opts.Follow, opts.IO.In)
	if err != nil {
		return err
	}
	defer src.Close()
	htmlPath := opts.HTML
	if htmlPath == "" {
		htmlPath = fmt.Sprintf("ctprof-top-follow-%s.html", time.Now().Format("20060102-150405"))
	}

	// As in topRun: Ctrl-C reaches the view as a key; signals end it alike.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	agg := analysis.New()
	var wrote atomic.Pointer[string]
	m := top.New(top.Options{
		Profile: colorProfile(out),
		Source:  src.Name(),
		WriteReport: func() (string, error) {
			err := writeAtomic(htmlPath, func(f io.Writer) error {
				return report.HTML(f, report.HTMLInput{Summary: agg.Summary(), Stacks: agg.Stacks(), Sources: []string{src.Name()}, Generated: time.Now()})
			})
			if err == nil {
				wrote.Store(&htmlPath)
			}
			return htmlPath, err
		},
	})
	// The log may be standard input: the keys come from the terminal.
	var res struct {
		err error
		n   int
	}
	err = top.Run(ctx, m, out, nil, func(ctx context.Context, send func(tea.Msg)) {
		res.n, res.err = agg.Drain(ctx, src, func(snap *snapshot.Snapshot) {
			send(top.Refresh{Summary: agg.Summary(), Stacks: top.StacksOf(snap.Dump)})
		})
		switch {
		case res.err != nil:
			send(top.Stopped{Reason: "reading stopped: " + res.err.Error()})
		case ctx.Err() == nil:
			send(top.Stopped{Reason: fmt.Sprintf("%s ended after %d dumps; q quits", src.Name(), res.n)})
		}
	})
	if err != nil {
		return err
	}
	if res.n == 0 {
		if res.err != nil && !errors.Is(res.err, threaddump.ErrNoThreadDump) {
			return res.err
		}
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: no complete thread dump in %s\n", src.Name())
		return nil
	}
	if err := writeSummary(opts.IO.Out, agg, "text", opts.Top); err != nil {
		return err
	}
	if w := wrote.Load(); w != nil {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: wrote the HTML report to %s\n", *w)
	}
	if res.err != nil {
		return fmt.Errorf("reading stopped early: %w", res.err)
	}
	return nil
}
