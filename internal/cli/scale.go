package cli

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/scale"
)

// ScaleOptions are the inputs of `ctprof scale`.
type ScaleOptions struct {
	IO          IO
	Command     []string
	Vary        string
	CPUs        string
	Concurrency string
	Regex       string
	Metric      string
	Warmup      time.Duration
	Measure     time.Duration
	Interval    time.Duration
	Retries     int
	Format      string
	HTML        string
	JVM         jvmFlags
}

//go:embed help/scale-long.txt
var scaleLong string

//go:embed help/scale-example.txt
var scaleExample string

func init() { register(func(io IO) *cobra.Command { return NewCmdScale(io, nil) }) }

// NewCmdScale builds `ctprof scale`.
func NewCmdScale(io IO, runF func(*ScaleOptions) error) *cobra.Command {
	opts := &ScaleOptions{IO: io}
	cmd := &cobra.Command{
		Use:     "scale [flags] -- COMMAND [ARGS...]",
		Short:   "Run a workload on 1..N CPUs, fit Amdahl and the USL, and show which lock grows",
		Long:    scaleLong,
		Example: scaleExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("scale needs the workload's command after --")
			}
			opts.Command = args
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if (opts.Regex == "") == (opts.Metric == "") {
				return usageErrorf("give one of --throughput-regex and --throughput-metric")
			}
			if opts.Vary != string(scale.VaryCPUs) && opts.Vary != string(scale.VaryConcurrency) {
				return usageErrorf("--vary must be cpus or concurrency")
			}
			if opts.Vary == string(scale.VaryConcurrency) && opts.Concurrency == "" {
				return usageErrorf("--vary concurrency needs --concurrency LEVELS (e.g. 1,2,4,8)")
			}
			if opts.Measure <= 0 || opts.Warmup < 0 || opts.Interval < 10*time.Millisecond {
				return usageErrorf("--measure must be positive, --warmup not negative, --interval at least 10ms")
			}
			if opts.Retries < 0 {
				return usageErrorf("--retries must not be negative")
			}
			if err := opts.JVM.validate(); err != nil {
				return err
			}
			if err := (&outputFiles{HTML: opts.HTML}).check(nil, ""); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return scaleRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Vary, "vary", "cpus", "what to vary: cpus (bind the workload to 1..N CPUs) or concurrency")
	f.StringVar(&opts.CPUs, "cpus", "", "CPU counts to run at, e.g. 1,2,4 (default: 1, 2, 4, … up to all ctprof may use)")
	f.StringVar(&opts.Concurrency, "concurrency", "", "concurrency levels for --vary concurrency, e.g. 1,2,4,8")
	f.StringVar(&opts.Regex, "throughput-regex", "", "read throughput from output lines matching this (first group, or the match)")
	f.StringVar(&opts.Metric, "throughput-metric", "", "read throughput as the rate of a Prometheus counter: URL#metric_name")
	f.DurationVar(&opts.Warmup, "warmup", 5*time.Second, "time to let each run warm up before measuring")
	f.DurationVar(&opts.Measure, "measure", 20*time.Second, "measurement time per level")
	f.DurationVarP(&opts.Interval, "interval", "i", time.Second, "profiling interval")
	f.IntVar(&opts.Retries, "retries", 0, "measure a level disturbed by other load again, up to this many more times")
	f.StringVarP(&opts.Format, "format", "f", "text", "output format: text or json")
	f.StringVar(&opts.HTML, "html", "", "also write a self-contained HTML page: throughput by level, the fits, each lock's share by level")
	opts.JVM.register(f)
	return cmd
}

func scaleRun(ctx context.Context, opts *ScaleOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cpus, err := scale.AllowedCPUs()
	if err != nil {
		return err
	}
	o := scale.Options{
		Command: opts.Command, Vary: scale.Vary(opts.Vary), CPUs: cpus,
		Warmup: opts.Warmup, Measure: opts.Measure, Interval: opts.Interval, Retries: opts.Retries,
		Sampler: func(pid int) (scale.Runner, error) {
			return sample.NewSampler(sample.Options{PID: pid, Interval: opts.Interval, Duration: opts.Measure, JVM: opts.JVM.options()})
		},
	}
	switch {
	case o.Vary == scale.VaryConcurrency:
		if o.Levels, err = scale.ParseLevels(opts.Concurrency, "--concurrency"); err != nil {
			return usageError{err}
		}
	case opts.CPUs != "":
		if o.Levels, err = scale.ParseLevels(opts.CPUs, "--cpus"); err != nil {
			return usageError{err}
		}
	default:
		if len(cpus) < 2 {
			return fmt.Errorf("ctprof may use only %d CPU here (%v): there is nothing to compare; run it with more CPUs, or vary the workload's concurrency (--vary concurrency)", len(cpus), cpus)
		}
		o.Levels = scale.DefaultCPULevels(len(cpus))
	}
	if opts.Regex != "" {
		if _, err := scale.NewRegexThroughput(opts.Regex); err != nil {
			return usageErrorf("--throughput-regex: %v", err)
		}
		o.NewThroughput = func() (scale.Throughput, error) { return scale.NewRegexThroughput(opts.Regex) }
	} else {
		if _, err := scale.ParseMetricSpec(opts.Metric); err != nil {
			return usageError{err}
		}
		o.NewThroughput = func() (scale.Throughput, error) { return scale.ParseMetricSpec(opts.Metric) }
	}
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: running %s at %s %v, %s warm-up and %s measurement each; Ctrl-C stops\n",
		report.Terminal(strings.Join(opts.Command, " ")), o.Vary, o.Levels, opts.Warmup, opts.Measure)
	res, err := scale.Run(ctx, o, func(s string) { fmt.Fprintf(opts.IO.ErrOut, "ctprof: %s\n", s) })
	if err != nil {
		return err
	}
	doc := scale.NewDocument(res)
	if err := scale.WriteDocument(opts.IO.Out, opts.Format, doc); err != nil {
		return err
	}
	if opts.HTML == "" {
		return nil
	}
	in := doc.HTMLInput(opts.Command, opts.Warmup, opts.Measure, time.Now())
	if err := writeAtomic(opts.HTML, func(w io.Writer) error { return report.ScalabilityHTML(w, in) }); err != nil {
		return fmt.Errorf("HTML report: %w", err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "ctprof: wrote the HTML report to %s\n", opts.HTML)
	return nil
}
