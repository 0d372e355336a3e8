package cli

import (
	"context"
	_ "embed"
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

//go:embed help/diff-long.txt
var diffLong string

//go:embed help/diff-example.txt
var diffExample string

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
