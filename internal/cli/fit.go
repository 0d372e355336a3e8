package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/pkg/usl"
)

// FitOptions are the inputs of `ctprof fit`.
type FitOptions struct {
	IO     IO
	File   string
	Format string
}

const fitLong = `Fit Amdahl's law and the Universal Scalability Law to measured throughput.

FILE holds one measurement per line: concurrency,throughput (a header line
and lines starting with # are skipped; several measurements of one
concurrency are fine). Concurrency is what you varied: CPUs, client
threads, users.

  Amdahl: X(N) = λN / (1 + σ(N−1))
  USL:    X(N) = λN / (1 + σ(N−1) + κN(N−1))

σ (contention) is the share of the work that runs one at a time: a lock, a
single queue. It caps throughput at λ/σ however much N grows. κ (coherency)
is the cost of keeping shared state consistent between the N parties
(cache lines bouncing, cross-talk); it grows with N² and makes throughput
fall after a peak at N* = sqrt((1−σ)/κ). λ is the throughput of one unit.

Measure at least 4 distinct N for the USL (2 for Amdahl), over as wide a
range as you can, past the peak if there is one. ctprof scale collects
such points for you.`

const fitExample = `  ctprof fit measurements.csv
  printf '1,955\n2,1879\n4,3549\n8,6531\n16,9897\n32,12074\n' | ctprof fit -
  ctprof fit --format json measurements.csv | jq .usl.peak_concurrency`

func init() { register(func(io IO) *cobra.Command { return NewCmdFit(io, nil) }) }

// NewCmdFit builds `ctprof fit`.
func NewCmdFit(io IO, runF func(*FitOptions) error) *cobra.Command {
	opts := &FitOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "fit FILE",
		Short:   "Fit Amdahl's law and the Universal Scalability Law to throughput measurements",
		Long:    fitLong,
		Example: fitExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("fit takes one FILE (- for standard input)")
			}
			opts.File = args[0]
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if runF != nil {
				return runF(opts)
			}
			return fitRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "output format: text or json")
	return cmd
}

func fitRun(opts *FitOptions) error {
	var r io.Reader = opts.IO.In
	if opts.File != "-" {
		f, err := os.Open(opts.File)
		if err != nil {
			return err // *PathError names the file
		}
		defer f.Close()
		r = f
	}
	name := opts.File
	if name == "-" {
		name = "standard input"
	}
	points, err := readPoints(r, name)
	if err != nil {
		return err
	}
	doc, err := fitDocument(points)
	if err != nil {
		return err
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return report.FitText(opts.IO.Out, doc)
}

// fitDocument fits both models; it fails only when neither can be fitted.
func fitDocument(points []usl.Point) (*report.FitDocument, error) {
	u, uerr := usl.FitUSL(points)
	a, aerr := usl.FitAmdahl(points)
	if aerr != nil && uerr != nil {
		return nil, aerr
	}
	return report.NewFitDocument(points, u, uerr, a, aerr), nil
}

// readPoints parses "concurrency,throughput" lines.
func readPoints(r io.Reader, name string) ([]usl.Point, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var pts []usl.Point
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\t' || r == ' ' })
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want concurrency,throughput, got %q", name, line, s)
		}
		n, err1 := strconv.ParseFloat(fields[0], 64)
		x, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			if len(pts) == 0 && line == 1 {
				continue // a header line
			}
			return nil, fmt.Errorf("%s:%d: not two numbers: %q", name, line, s)
		}
		pts = append(pts, usl.Point{N: n, Throughput: x})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(pts) == 0 {
		return nil, errors.New(name + ": no measurements")
	}
	return pts, nil
}
