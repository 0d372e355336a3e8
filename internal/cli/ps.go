package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/procs"
)

// PsOptions are the inputs of `ctprof ps`.
type PsOptions struct {
	IO       IO
	JavaOnly bool
	All      bool
	Format   string
	ProcRoot string
}

func init() { register(func(io IO) *cobra.Command { return NewCmdPs(io, nil) }) }

// NewCmdPs builds `ctprof ps`.
func NewCmdPs(io IO, runF func(*PsOptions) error) *cobra.Command {
	opts := &PsOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List processes worth profiling: threads, connections, JVM or not",
		Long: `List processes with their thread count, established TCP connections and
whether each is a JVM, most threads first, so you can find the pid to attach
to. A server made of processes (PostgreSQL's postmaster and its backends,
nginx's master and workers: descendants running the parent's executable) is
one row, its parent's, with PROCS processes and the tree's threads and
connections, as attach samples it. Single-threaded processes are left out
unless --all is given. A "-" in
the connections column means ctprof may not read that process's file
descriptors, and a "?" in the JVM column that it may not read its memory
maps (another user's process): run as its user or root. --java leaves those
out and says how many there were.`,
		Example: `  ctprof ps
  ctprof ps --java
  ctprof ps --format json | jq '.[0].pid'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != "text" && opts.Format != "json" {
				return usageErrorf("unknown --format %q: use text or json", opts.Format)
			}
			if runF != nil {
				return runF(opts)
			}
			return psRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JavaOnly, "java", false, "only JVMs")
	cmd.Flags().BoolVar(&opts.All, "all", false, "include single-threaded processes")
	cmd.Flags().StringVarP(&opts.Format, "format", "f", "text", "output format: text or json")
	return cmd
}

func psRun(opts *PsOptions) error {
	rows, uninspected, err := procs.New(opts.ProcRoot).Candidates(procs.CandidateFilter{JavaOnly: opts.JavaOnly, All: opts.All})
	if err != nil {
		return err
	}
	if uninspected > 0 {
		// Said on stderr so that the listing (and its JSON) stays clean.
		defer fmt.Fprintln(opts.IO.ErrOut, procs.UninspectedMessage(uninspected, os.Geteuid() == 0))
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return procs.WriteTable(opts.IO.Out, rows)
}
