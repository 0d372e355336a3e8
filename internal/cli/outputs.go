package cli

import (
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/outfile"
)

// outputFiles are the files a run writes besides the summary it prints:
// the HTML report and the profile exports. analyze, attach and report share
// them, so every mode writes the same files from the same Aggregator.
type outputFiles outfile.Files

const outputFlagsHelp = `Files besides the summary (any combination):
  --html FILE        one self-contained HTML report (no request leaves it):
                     findings, a flame graph of the sampled stacks (click to
                     zoom; all, blocked, waiting, runnable, one lock's
                     waiters; with a JFR recording, waits by wait time),
                     the lock table, wait-duration histograms (JFR),
                     timelines, pools, the busiest threads and a graph of
                     deadlocks
  --pprof FILE       profile.proto (gzipped) for go tool pprof: thread samples
                     and estimated blocked time, labels state and thread
                     (the thread name with digits as N, its pool); with a
                     JFR recording also contentions and delay, the exact
                     waits, as Go's mutex profile (-sample_index=delay)
  --folded FILE      collapsed stacks, root first (flamegraph.pl, inferno)
  --speedscope FILE  a speedscope profile (all threads, blocked threads)
Each is written whole or not at all (a temporary file renamed into place).
None may be an input, the recording or another output, under any name (a
run that would replace one is refused with exit code 2 before any work).`

func (o *outputFiles) register(f *pflag.FlagSet) {
	f.StringVar(&o.HTML, "html", "", "write a self-contained HTML report to this file")
	f.StringVar(&o.Pprof, "pprof", "", "write a pprof profile (go tool pprof) to this file")
	f.StringVar(&o.Folded, "folded", "", "write collapsed stacks (flamegraph.pl) to this file")
	f.StringVar(&o.Speedscope, "speedscope", "", "write a speedscope profile to this file")
}

// check runs before any work (outfile.Files.Check); a conflict between the
// paths given is a usage error.
func (o *outputFiles) check(inputs []string, recording string) error {
	err := (*outfile.Files)(o).Check(inputs, recording)
	var c *outfile.ConflictError
	if errors.As(err, &c) {
		return usageError{err}
	}
	return err
}

// write writes every requested file from the Aggregator.
func (o *outputFiles) write(w io.Writer, agg *analysis.Aggregator, sources []string) error {
	return (*outfile.Files)(o).Write(w, agg, sources)
}

// writeAtomic writes one file whole or not at all.
var writeAtomic = outfile.WriteAtomic
