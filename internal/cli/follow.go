package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/follow"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
)

// followRun is analyze --follow: one Aggregator over a log that is still
// being written. After each complete dump it prints what changed; when
// SIGINT or SIGTERM ends it (or a followed pipe closes), it prints the
// summary of every dump seen and writes the output files, as analyze does.
func followRun(ctx context.Context, opts *AnalyzeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := source.Follow(opts.Files[0], opts.IO.In)
	if err != nil {
		return err
	}
	defer src.Close()

	agg := analysis.New()
	var tracker follow.Tracker
	enc := json.NewEncoder(opts.IO.Out) // one line per record: JSON Lines
	var werr error
	n, err := agg.Drain(ctx, src, func(s *snapshot.Snapshot) {
		ch := tracker.Next(agg.Summary(), src.Name(), s.Time)
		if werr != nil {
			return
		} else if opts.Format == "json" {
			werr = enc.Encode(ch)
		} else {
			werr = report.FollowText(opts.IO.Out, ch)
		}
	})
	if werr != nil {
		return fmt.Errorf("write: %w", werr)
	}
	if n == 0 {
		if ctx.Err() != nil {
			// Ended by the user before any dump: nothing to sum up.
			fmt.Fprintf(opts.IO.ErrOut, "ctprof: no complete thread dump in %s yet\n", src.Name())
			return nil
		}
		return err
	}
	if opts.Format == "json" {
		if err := enc.Encode(struct {
			Event   string            `json:"event"`
			Summary *analysis.Summary `json:"summary"`
		}{"summary", agg.Summary()}); err != nil {
			return fmt.Errorf("write JSON summary: %w", err)
		}
	} else {
		fmt.Fprintln(opts.IO.Out)
		if err := writeSummary(opts.IO.Out, agg, "text", opts.Top); err != nil {
			return err
		}
	}
	if err := opts.Out.write(opts.IO.ErrOut, agg, []string{src.Name()}); err != nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v (the summary covers the dumps read before it)\n", err)
		return silentError{code: ExitFailure}
	}
	return nil
}
