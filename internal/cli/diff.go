package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/diff"
	"github.com/ctprof/ctprof/internal/diffinput"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/source"
)

// DiffOptions are the inputs of `ctprof diff`.
type DiffOptions struct {
	IO            IO
	Before, After string
	Format        string
	Top           int
	HTML          string
	Level         int
	// BeforeThroughput and AfterThroughput are nil unless given.
	BeforeThroughput, AfterThroughput *float64
}

const diffLong = `Compare two runs of one program: a load test before a change and the same
load test after it. What changed, and by how much.

BEFORE and AFTER are each anything ctprof reads:
  - thread dumps (a file of one or more, gzipped or not, or a directory whose
    files are read in name order as one series), .jfr recordings,
    recordings of ctprof attach --record;
  - a JSON summary ctprof wrote (analyze, attach or report --format json);
  - a ctprof scale --format json document (its highest level, or --level N;
    the level's throughput comes with it).
ctprof tells them apart by content. Use - for standard input (one side only).

Each run is analysed on its own, as ctprof analyze or report would, and the
two are joined:
  - findings that went away, appeared, or stayed (with their severity then
    and now);
  - the process: throughput, threads waiting on resources on average and the
    thread-seconds they waited, JFR wait totals, threads, CPU, run-queue wait,
    context-switch rates, threads per connection;
  - per resource (a class waited for at one call site, over all its
    instances, matched by class and wait site, never by address): average
    and peak waiters, share of dumps with a waiter, thread-seconds, and with
    JFR the waits recorded, their total and p99; a resource only one run has
    is marked APPEARED or GONE;
  - per thread pool: threads, and for live runs CPU and context switches.
Every figure reads before → after, the change, and where the direction is
clear (fewer waiters, more throughput) better or worse.

Throughput comes from a scale level, or from you: --before-throughput and
--after-throughput take the load test's own figure (requests/s, ops/s).

--format json prints the comparison as a document for scripts (docs/json.md,
"ctprof diff"). --html FILE writes a self-contained page: the figures side
by side, both runs' findings and resources, and a differential flame graph
(the after run's stacks, each frame red where its share of the threads grew
and blue where it shrank; a second view shows the before run the same way).
The flame graph needs stacks on both sides: a JSON summary has none.

Average waiters and shares compare runs of different lengths; thread-seconds
and recorded totals grow with a run's length (diff notes it when the lengths
differ). docs/diff.md walks through the workflow on a real run.

Exit codes: 0 compared; 1 a run cannot be read (the message says before: or
after:) or the page cannot be written; 2 usage error.`

const diffExample = `  # Record a load test, change one thing, record again, compare
  ctprof attach $PID --duration 2m --record before.ctprof
  ctprof attach $PID --duration 2m --record after.ctprof
  ctprof diff before.ctprof after.ctprof

  # Dumps taken with jcmd, one directory per run
  for i in 1 2 3; do jcmd $PID Thread.print -l > before/$i.txt; sleep 5; done
  ctprof diff before/ after/

  # Summaries kept from earlier runs, with the load test's throughput
  ctprof diff --before-throughput 1180 --after-throughput 2310 mon.json fri.json

  # An HTML page with a differential flame graph, and JSON for CI
  ctprof diff --html diff.html before.ctprof after.ctprof
  ctprof diff -f json before.jfr after.jfr | jq '.resources[0].avg_waiters'`

func init() { register(func(io IO) *cobra.Command { return NewCmdDiff(io, nil) }) }

// NewCmdDiff builds `ctprof diff`. runF replaces diffRun in tests.
func NewCmdDiff(io IO, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{IO: io}
	var beforeTP, afterTP float64
	cmd := &cobra.Command{
		Use:     "diff BEFORE AFTER",
		Short:   "Compare two runs: resources, pools, CPU, findings and a differential flame graph",
		Long:    diffLong,
		Example: diffExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("diff takes two runs, BEFORE and AFTER (got %d)", len(args))
			}
			if args[0] == source.StdinName && args[1] == source.StdinName {
				return usageErrorf("only one of BEFORE and AFTER can be standard input (-)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Before, opts.After = args[0], args[1]
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if opts.Level < 0 {
				return usageErrorf("--level must be a level of the scale run, not %d", opts.Level)
			}
			for _, tp := range []struct {
				name string
				v    float64
				p    **float64
			}{{"before-throughput", beforeTP, &opts.BeforeThroughput}, {"after-throughput", afterTP, &opts.AfterThroughput}} {
				if !cmd.Flags().Changed(tp.name) {
					continue
				}
				if tp.v < 0 {
					return usageErrorf("--%s must not be negative", tp.name)
				}
				v := tp.v
				*tp.p = &v
			}
			out := outputFiles{HTML: opts.HTML}
			if err := out.check([]string{opts.Before, opts.After}, ""); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return diffRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "output format: text or json")
	cmd.Flags().IntVar(&opts.Top, "top", 10, "resources and pools shown in the text")
	cmd.Flags().StringVar(&opts.HTML, "html", "", "write a self-contained HTML comparison with a differential flame graph to this file")
	cmd.Flags().IntVar(&opts.Level, "level", 0, "the level of a scale document to compare (default: its highest)")
	cmd.Flags().Float64Var(&beforeTP, "before-throughput", 0, "the before run's throughput, in the load test's unit (requests/s, ops/s)")
	cmd.Flags().Float64Var(&afterTP, "after-throughput", 0, "the after run's throughput, in the same unit")
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func diffRun(opts *DiffOptions) error {
	ctx := context.Background()
	lo := diffinput.LoadOptions{Level: opts.Level}
	before, err := diffinput.Load(ctx, opts.Before, opts.IO.In, lo)
	if err != nil {
		return fmt.Errorf("before: %w", err)
	}
	after, err := diffinput.Load(ctx, opts.After, opts.IO.In, lo)
	if err != nil {
		return fmt.Errorf("after: %w", err)
	}
	doc := diff.Compare(before, after, diff.Options{BeforeThroughput: opts.BeforeThroughput, AfterThroughput: opts.AfterThroughput})
	if opts.Format == "json" {
		err = diff.JSON(opts.IO.Out, doc)
	} else {
		err = diff.Text(opts.IO.Out, doc, diff.TextOptions{Top: opts.Top})
	}
	if err != nil {
		return err
	}
	if opts.HTML == "" {
		return nil
	}
	err = writeAtomic(opts.HTML, func(w io.Writer) error {
		return report.DiffHTML(w, report.DiffInput{Doc: doc, Before: before, After: after, Generated: time.Now()})
	})
	if err != nil {
		return fmt.Errorf("HTML comparison: %w", err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: wrote the HTML comparison to %s\n", opts.HTML)
	return nil
}
