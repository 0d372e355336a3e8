package cli

import (
	"context"
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

const analyzeLong = `Analyze thread dumps that were already taken, and Java Flight Recorder
recordings.

Each FILE may hold one dump, a series of dumps (jcmd Thread.print run several
times into one file, kill -3 output in a log), or be gzip-compressed; several
FILEs are read in the order given and treated as one series. Use - to read
standard input.

Formats read: HotSpot text from jstack, jcmd <pid> Thread.print (with or
without -l) and kill -3 (JDK 6 to 25, embedded in other log lines or not),
jcmd <pid> Thread.dump_to_file in text and JSON (JDK 21+), and OpenJ9/IBM
javacore files. UTF-16 with a byte order mark and CRLF line endings are fine.

JFR recordings (.jfr, also gzipped, from -XX:StartFlightRecording, jcmd
JFR.dump or async-profiler; told apart by content) give exact waits: every
jdk.JavaMonitorEnter, jdk.JavaMonitorWait, jdk.ThreadPark and
jdk.VirtualThreadPinned event becomes a wait on its lock, with its duration,
the previous owner of a monitor or the notifier of a wait(); each lock then
says how often threads waited, how long in all, p50/p99/max and behind whom.
Thread dumps in the recording (jdk.ThreadDump) join the lock table, GC pauses
(jdk.GarbageCollection) the timeline. Record the lock events with a threshold
of 0 ms (or a small one) to see every wait.

The text report leads with findings (deadlocks, lock hotspots, stuck threads),
then the lock table (each lock, its owner and the frame the owner runs, its
waiters and the first application frame they wait in), deadlocks, thread pools
(names with digits replaced by N), groups of identical stacks, and for a
series the busiest threads by cpu= deltas and threads stuck in one frame.

--format json prints the same as a stable document for scripts (docs/json.md);
--format folded prints collapsed stacks (root first) for flamegraph.pl and
speedscope.

Owners of java.util.concurrent locks only appear in dumps taken with -l
(jcmd <pid> Thread.print -l, jstack -l).

--follow reads one log that is still being written (kill -3 into a JVM's
stdout): what it holds, then what is appended, like tail -F. A new file at
the path (rotation) is read from its start once the old one is read to its
end; a file cut below what was read (truncation) is read again from its
start; - follows standard input (tail -F app.log, kubectl logs -f). Each
dump shows a second or two after the JVM wrote it (a quiet second after its
trailer: HotSpot prints a deadlock report right after it) with what it
changed: its time, the findings that appeared or went away, and the
resources threads wait on in it, most waiters first. --format json writes
one JSON object per dump instead, one per line (docs/json.md). Ctrl-C
(SIGINT) or SIGTERM ends it with exit code 0, the summary of every dump
seen and the files below; a followed pipe ends the same way when it closes.
Memory stays that of one dump and the summary, however long it runs.

` + outputFlagsHelp

const analyzeExample = `  ctprof analyze dump.txt
  jcmd 4242 Thread.print -l | ctprof analyze -
  ctprof analyze --format json dump1.txt dump2.txt dump3.txt
  ctprof analyze --format folded app.log.gz > stacks.folded
  ctprof analyze --html report.html --pprof blocked.pb.gz series.txt
  ctprof analyze --format json recording.jfr
  ctprof analyze --follow --html incident.html app.log   # Ctrl-C: summary and report
  kubectl logs -f my-pod | ctprof analyze --follow --format json -`

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
