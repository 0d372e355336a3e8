package cli

import (
	"context"
	_ "embed"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/source"
)

// AnalyzeOptions are the inputs of `ctprof analyze`.
type AnalyzeOptions struct {
	IO     IO
	Files  []string
	Format string
	Top    int
	Out    outputFiles
	// Follow keeps reading the one FILE as it grows (analyze --follow).
	Follow bool
}

var outputFormats = []string{"text", "json", "folded"}

//go:embed help/analyze-long.txt
var analyzeLongText string

var analyzeLong = analyzeLongText + outputFlagsHelp

//go:embed help/analyze-example.txt
var analyzeExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdAnalyze(io, nil) }) }

// NewCmdAnalyze builds `ctprof analyze`. runF replaces analyzeRun in tests.
func NewCmdAnalyze(io IO, runF func(*AnalyzeOptions) error) *cobra.Command {
	opts := &AnalyzeOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "analyze FILE...",
		Short:   "Analyze thread dump and JFR files: locks, deadlocks, pools, stuck threads",
		Long:    analyzeLong,
		Example: analyzeExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("analyze needs at least one FILE (or - for standard input)")
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Follow && len(args) != 1 {
				return usageErrorf("--follow takes one FILE (or - for standard input), not %d", len(args))
			}
			if opts.Follow && opts.Format == "folded" {
				return usageErrorf("--follow prints text or json after each dump; for collapsed stacks add --folded FILE, written at the end")
			}
			if err := checkTop(opts.Top); err != nil {
				return err
			}
			if err := opts.Out.check(opts.Files, ""); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Follow {
				return followRun(cmd.Context(), opts)
			}
			return analyzeRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "output format: text, json or folded")
	cmd.Flags().IntVar(&opts.Top, "top", 10, "rows per table in the text report")
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "keep reading FILE as it grows (a live log, like tail -F) and print what each new dump changed; Ctrl-C ends with the summary")
	opts.Out.register(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return outputFormats, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func checkFormat(f string) error {
	for _, x := range outputFormats {
		if f == x {
			return nil
		}
	}
	return usageErrorf("unknown --format %q: use text, json or folded", f)
}

// analyzeRun streams every file through one Aggregator, dump by dump, so
// that no file's dumps are all held at once, and writes its summary. A file
// that cannot be read is reported and skipped (a file that fails part way
// keeps the dumps read before the failure); the others are still analyzed,
// and the exit code says something failed.
func analyzeRun(opts *AnalyzeOptions) error {
	agg := analysis.New()
	var failed []error
	var partial []bool
	dumps := 0
	for _, name := range opts.Files {
		n, err := drainFile(opts.IO.In, name, agg)
		dumps += n
		if err != nil {
			failed = append(failed, err)
			partial = append(partial, n > 0)
		}
	}
	if dumps == 0 {
		if len(failed) == 1 {
			return failed[0]
		}
		for _, e := range failed[:len(failed)-1] {
			fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v\n", e)
		}
		return failed[len(failed)-1]
	}
	if err := writeSummary(opts.IO.Out, agg, opts.Format, opts.Top); err != nil {
		return err
	}
	var read []string
	for _, name := range opts.Files {
		if name == "-" {
			name = "standard input"
		}
		read = append(read, name)
	}
	if err := opts.Out.write(opts.IO.ErrOut, agg, read); err != nil {
		return err
	}
	for i, e := range failed {
		if partial[i] {
			fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v (the summary covers the dumps read before it)\n", e)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v (skipped; the summary covers the other files)\n", e)
		}
	}
	if len(failed) > 0 {
		return silentError{code: ExitFailure}
	}
	return nil
}

// drainFile feeds one input, whatever its kind, to agg.
func drainFile(stdin io.Reader, name string, agg *analysis.Aggregator) (int, error) {
	src, err := source.Open(name, stdin)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return agg.Drain(context.Background(), src, nil)
}

func writeSummary(w io.Writer, agg *analysis.Aggregator, format string, top int) error {
	switch format {
	case "json":
		return report.JSON(w, agg.Summary())
	case "folded":
		return report.Folded(w, agg.Stacks())
	default:
		return report.Text(w, agg.Summary(), report.TextOptions{Top: top})
	}
}
