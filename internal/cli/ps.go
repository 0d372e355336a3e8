package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/procs"
	"github.com/ctprof/ctprof/internal/report"
)

// PsOptions are the inputs of `ctprof ps`.
type PsOptions struct {
	IO       IO
	JavaOnly bool
	All      bool
	Format   string
	ProcRoot string
}

// processInfo is one row of `ctprof ps`.
type processInfo struct {
	PID     int    `json:"pid"`
	Name    string `json:"name"`
	User    string `json:"user"`
	Threads int    `json:"threads"`
	// Established is the number of established TCP connections; -1 when
	// the process's fds cannot be read.
	Established int  `json:"established"`
	JVM         bool `json:"jvm"`
	// JVMUnknown: ctprof may not read the process's memory maps (another
	// user's process), so whether it is a JVM is unknown; JVM is false.
	JVMUnknown bool   `json:"jvm_unknown,omitempty"`
	Cmdline    string `json:"cmdline"`
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
to. Single-threaded processes are left out unless --all is given. A "-" in
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
	lister := procs.New(opts.ProcRoot)
	all, err := lister.List()
	if err != nil {
		return err
	}
	fs := procfs.NewFS(lister.Root())
	rows := make([]processInfo, 0, len(all))
	uninspected := 0
	for _, proc := range all {
		if proc.Threads < 2 && !opts.All {
			continue
		}
		p := processInfo{PID: proc.PID, Name: proc.Name, User: proc.User, Threads: proc.Threads, Cmdline: proc.Cmdline, Established: -1}
		jvm, err := fs.CheckJVM(p.PID)
		if errors.Is(err, procfs.ErrProcessGone) {
			continue
		}
		p.JVM = jvm
		if errors.Is(err, procfs.ErrPermission) {
			p.JVMUnknown = true
			uninspected++
		}
		if opts.JavaOnly && !p.JVM {
			continue
		}
		if c, err := fs.Connections(p.PID, 0); err == nil {
			p.Established = c.Established
		}
		rows = append(rows, p)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Threads != rows[j].Threads {
			return rows[i].Threads > rows[j].Threads
		}
		return rows[i].PID < rows[j].PID
	})
	if uninspected > 0 {
		// Said on stderr so that the listing (and its JSON) stays clean.
		what := "processes"
		if uninspected == 1 {
			what = "process"
		}
		defer fmt.Fprintf(opts.IO.ErrOut, "ctprof: %d %s could not be inspected (JVM or not): they belong to other users; run as root or as their user\n", uninspected, what)
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tTHREADS\tCONNS\tJVM\tUSER\tCOMMAND")
	for _, r := range rows {
		conns := "-"
		if r.Established >= 0 {
			conns = fmt.Sprint(r.Established)
		}
		jvm := ""
		switch {
		case r.JVM:
			jvm = "yes"
		case r.JVMUnknown:
			jvm = "?"
		}
		cmdline := r.Cmdline
		if cmdline == "" {
			cmdline = r.Name
		}
		if len(cmdline) > 100 {
			cmdline = cmdline[:100] + "…"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", r.PID, r.Threads, conns, jvm, report.Terminal(r.User), report.Terminal(strings.TrimSpace(cmdline)))
	}
	return tw.Flush()
}
