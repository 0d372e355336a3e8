package cli

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/source"
)

// ReportOptions are the inputs of `ctprof report`.
type ReportOptions struct {
	IO     IO
	File   string
	Format string
	Top    int
	Out    outputFiles
}

//go:embed help/report-long.txt
var reportLongText string

var reportLong = reportLongText + outputFlagsHelp

//go:embed help/report-example.txt
var reportExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdReport(io, nil) }) }

// NewCmdReport builds `ctprof report`.
func NewCmdReport(io IO, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "report FILE",
		Short:   "Replay a recording (ctprof attach --record) and print its summary",
		Long:    reportLong,
		Example: reportExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("report takes one recording FILE")
			}
			opts.File = args[0]
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if err := opts.Out.check([]string{opts.File}, ""); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return reportRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "summary format: text or json")
	cmd.Flags().IntVar(&opts.Top, "top", 10, "rows per table in the text summary")
	opts.Out.register(cmd.Flags())
	return cmd
}

func reportRun(opts *ReportOptions) error {
	r, err := source.OpenRecording(opts.File)
	if err != nil {
		return err
	}
	defer r.Close()
	h := r.Header()
	agg := analysis.New()
	n, err := agg.Drain(context.Background(), r, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: replaying %s: pid %d (%s, %s), recorded by ctprof %s from %s, %d samples\n",
		opts.File, h.Target.PID, report.Terminal(h.Target.Name), h.Target.Kind, report.Terminal(h.Version), h.Start.Format("2006-01-02 15:04:05"), n)
	// Damage is reported in the summary itself (text, JSON and HTML), not
	// only here: a partially damaged recording still exits 0, and the
	// warning is what says the summary covers fewer samples.
	for _, w := range r.Warnings() {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: warning: %s\n", w)
	}
	if n == 0 {
		return fmt.Errorf("%s holds no samples", opts.File)
	}
	if err := writeSummary(opts.IO.Out, agg, opts.Format, opts.Top); err != nil {
		return err
	}
	return opts.Out.write(opts.IO.ErrOut, agg, []string{opts.File})
}
