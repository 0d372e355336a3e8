package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
	points, err := readFitFile(opts.IO.In, opts.File)
	if err != nil {
		return err
	}
	res, err := NewFitReport(points)
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(opts.File), err)
	}
	if err := writeFitReport(opts.IO.Out, opts.Format, res); err != nil {
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

// FitReport is everything `ctprof fit` knows about one set of points: the
// fits as the report package renders them (points, usl, amdahl and their
// errors), the fits themselves, and every warning. Writers take it whole.
type FitReport struct {
	*report.FitDocument
	// Warnings gathers both models' warnings, each prefixed with its
	// model, and why a model could not be fitted.
	Warnings []string `json:"warnings"`
	// USL and Amdahl are the fits; nil when a model could not be fitted.
	USLFit    *usl.Fit `json:"-"`
	AmdahlFit *usl.Fit `json:"-"`
}

// NewFitReport fits both models. It fails only when neither can be fitted
// (the USL needs 4 distinct concurrencies, Amdahl 2).
func NewFitReport(points []usl.Point) (*FitReport, error) {
	u, uerr := usl.FitUSL(points)
	a, aerr := usl.FitAmdahl(points)
	if uerr != nil && aerr != nil {
		return nil, aerr
	}
	res := &FitReport{
		FitDocument: report.NewFitDocument(points, u, uerr, a, aerr),
		Warnings:    []string{},
		USLFit:      u,
		AmdahlFit:   a,
	}
	if uerr != nil {
		res.Warnings = append(res.Warnings, "USL not fitted: "+uerr.Error())
	} else {
		for _, w := range u.Warnings {
			res.Warnings = append(res.Warnings, "USL: "+w)
		}
	}
	if aerr != nil {
		res.Warnings = append(res.Warnings, "Amdahl not fitted: "+aerr.Error())
	} else {
		for _, w := range a.Warnings {
			res.Warnings = append(res.Warnings, "Amdahl: "+w)
		}
	}
	return res, nil
}

func writeFitReport(w io.Writer, format string, res *FitReport) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return report.FitText(w, res.FitDocument)
}

// Limits of the input, so that a wrong file fails fast instead of filling
// memory.
const (
	maxFitLine   = 64 << 10
	maxFitPoints = 1_000_000
	// quoteMax bounds how much of a bad line an error message repeats.
	quoteMax = 60
)

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

// readFitFile reads the points from file, or from stdin for "-".
func readFitFile(stdin io.Reader, file string) ([]usl.Point, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("open measurements: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not a file of measurements", file)
		}
		r = f
	}
	return readFitPoints(r, displayName(file))
}

// readFitPoints parses lines of "concurrency, throughput". Fields are
// separated by commas, semicolons, tabs or spaces; # starts a comment; the
// first line that is not blank or a comment may be a header (no field is a
// number). Every error names the line.
func readFitPoints(r io.Reader, name string) ([]usl.Point, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxFitLine)
	var pts []usl.Point
	line, seenContent := 0, false
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF") // a byte-order mark from spreadsheets
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.FieldsFunc(text, func(r rune) bool {
			return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f'
		})
		if len(fields) == 0 {
			continue
		}
		first := !seenContent
		seenContent = true
		if first && isHeader(fields) {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want two fields, concurrency and throughput; got %d in %s", name, line, len(fields), quote(text))
		}
		n, err := parseMeasure(fields[0], "concurrency")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		x, err := parseMeasure(fields[1], "throughput")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if len(pts) == maxFitPoints {
			return nil, fmt.Errorf("%s:%d: more than %d measurements", name, line, maxFitPoints)
		}
		pts = append(pts, usl.Point{N: n, Throughput: x})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d KiB: not a file of measurements", name, line+1, maxFitLine>>10)
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no measurements (want lines of concurrency,throughput)", name)
	}
	return pts, nil
}

// isHeader: a line none of whose fields is a number.
func isHeader(fields []string) bool {
	for _, f := range fields {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			return false
		}
	}
	return true
}

// parseMeasure reads a positive, finite number.
func parseMeasure(field, what string) (float64, error) {
	v, err := strconv.ParseFloat(field, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s is not a number", what, quote(field))
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s must be a positive number, got %s", what, quote(field))
	}
	return v, nil
}

// quote renders part of the input for an error message: bounded, and
// quoted so that control characters cannot reach the terminal.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > quoteMax {
		cut := quoteMax
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
