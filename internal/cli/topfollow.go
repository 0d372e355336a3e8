package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/top"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// topFollowRun is top --follow: the same view as topRun over a followed
// log (source.Follow, as analyze --follow reads it) instead of a Sampler,
// so there is no process, no PID and no interval: the view refreshes at
// each dump the log completes.
func topFollowRun(ctx context.Context, opts *TopOptions) error {
	out, err := topTerminal(opts)
	if err != nil {
		return err
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
	n, err := runTopSession(ctx, opts, out, topSession{
		src:       src,
		view:      top.Options{Source: src.Name()},
		htmlName:  "ctprof-top-follow",
		sources:   []string{src.Name()},
		stoppedAs: "reading",
		ended: func(n int, err error) string {
			return fmt.Sprintf("%s ended after %d dumps; q quits", src.Name(), n)
		},
	})
	if n == 0 && (err == nil || errors.Is(err, threaddump.ErrNoThreadDump)) {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: no complete thread dump in %s\n", src.Name())
		return nil
	}
	return err
}
