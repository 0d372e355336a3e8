package cli

import (
	_ "embed"
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

//go:embed help/output-flags-help.txt
var outputFlagsHelp string

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
