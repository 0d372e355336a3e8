package cli

import (
	_ "embed"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/fit"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/pkg/usl"
)

// FitOptions are the inputs of `ctprof fit`.
type FitOptions struct {
	IO     IO
	File   string // a path, or "-" for standard input
	Format string // text or json
	HTML   string // also write an HTML page with the chart
}

//go:embed help/fit-long.txt
var fitLong string

//go:embed help/fit-example.txt
var fitExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdFit(io, nil) }) }

// NewCmdFit builds `ctprof fit`; runF replaces fitRun in tests.
func NewCmdFit(io IO, runF func(*FitOptions) error) *cobra.Command {
	opts := &FitOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "fit FILE",
		Short:   "Fit Amdahl's law and the Universal Scalability Law to throughput measurements",
		Long:    fitLong,
		Example: fitExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("fit takes one FILE of concurrency,throughput lines (- for standard input), got %d arguments", len(args))
			}
			opts.File = args[0]
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if err := (&outputFiles{HTML: opts.HTML}).check([]string{opts.File}, ""); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return fitRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "output format: text or json")
	cmd.Flags().StringVar(&opts.HTML, "html", "", "also write a self-contained HTML page: measured points, both fitted curves, the fit")
	return cmd
}

func fitRun(opts *FitOptions) error {
	var points []usl.Point
	var err error
	if opts.File == "-" {
		points, err = fit.ReadPoints(opts.IO.In, displayName(opts.File))
	} else {
		points, err = fit.ReadFile(opts.File)
	}
	if err != nil {
		return err
	}
	res, err := fit.NewReport(points)
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(opts.File), err)
	}
	if err := fit.WriteReport(opts.IO.Out, opts.Format, res); err != nil {
		return err
	}
	if opts.HTML == "" {
		return nil
	}
	in := report.ScalabilityInput{Title: "ctprof fit: " + displayName(opts.File), Fit: res.FitDocument, Unit: "N",
		Facts: [][2]string{{"input", displayName(opts.File)}, {"points", fmt.Sprint(len(points))}}, Generated: time.Now()}
	if err := writeAtomic(opts.HTML, func(w io.Writer) error { return report.ScalabilityHTML(w, in) }); err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: wrote the HTML report to %s\n", opts.HTML)
	return nil
}

// displayName is how messages and the HTML page name the input: "-" is
// the command line's word for standard input.
func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}
