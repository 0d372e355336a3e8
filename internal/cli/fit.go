package cli

import (
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

const fitLong = `Fit Amdahl's law and the Universal Scalability Law (USL) to throughput
measured at several levels of concurrency, and say what limits scaling.

  Amdahl: X(N) = λN / (1 + σ(N−1))
  USL:    X(N) = λN / (1 + σ(N−1) + κN(N−1))

N is what you varied: CPUs, client threads, connected users. X is the
throughput measured there, in any unit (requests/s, transactions/min).

σ, contention: the share of the work that runs one at a time (a lock, a
single queue, one disk). σ = 0.05 means 5 % of the work is serialized, and
throughput never exceeds λ/σ, 20 times that of one unit, however large N
gets.

κ, coherency (USL only): the cost of keeping shared state consistent
between the N parties (cache lines moving between CPUs, cross-talk). It
grows with N², so throughput peaks at N* = sqrt((1−σ)/κ) and falls after
it: beyond N*, adding capacity makes things worse.

λ: the throughput of one unit of concurrency.

What bounds throughput: σ alone would cap it at λ/σ, κ alone at about
λ/(2√κ); ctprof names the term with the lower cap. ± is one standard
error; R² is the share of the variance the model explains (1 is perfect).
Warnings say when to trust a fit less: a narrow range, a parameter stuck at
0, a peak far beyond the data, a poor fit, a point far from the curve.

Collecting the points:
  - measure steady state: warm up, then count completed work over a fixed
    time (30 s or more) at each level, changing nothing else between runs;
  - use at least 4 distinct N for the USL (2 for Amdahl), over a wide range
    (the largest at least 4 times the smallest), and past the peak if
    there is one: 1, 2, 4, 8, 16, 32…;
  - repeat levels to see the noise: several lines with the same N are fine.
ctprof scale runs such an experiment for you and shows which lock grows.

FILE holds one measurement per line: concurrency, then throughput,
separated by a comma, semicolon, tab or spaces. A header line, blank lines
and comments (from # to the end of the line) are skipped. FILE - reads
standard input. --format json prints usl, amdahl, points and warnings
(docs/usl.md).`

const fitExample = `  # SPEC SDM91 on a 16-CPU server: simulated users, scripts per hour
  printf 'users,throughput\n1,65\n18,996\n36,1652\n72,1853\n108,1829\n144,1775\n216,1702\n' | ctprof fit -

  ctprof fit measurements.csv
  ctprof fit --format json measurements.csv | jq '.usl.peak_concurrency'
  ctprof fit --html fit.html measurements.csv   # measured points and both curves`

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
