// Package cli holds ctprof's cobra commands. Each command has an options
// struct, a NewCmdX constructor that only parses flags, and an xRun function
// that does the work, so tests can drive either.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/ctprof/ctprof/internal/self"
	"github.com/spf13/cobra"
)

// Exit codes, documented in README and `ctprof --help`.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// version is set by the Makefile with -ldflags "-X ...cli.version=...".
var version = ""

// Version returns ctprof's version: the linker-set one, or the module's.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// IO is where commands read and write; tests pass buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// usageError marks errors that are the caller's words, not the run's
// failure: they exit with ExitUsage.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErrorf(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// silentError carries an exit code for a failure already explained to the
// user (for example a summary printed with warnings about unreadable files).
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }

const rootLong = `ctprof finds out why a Java or native Linux server does not scale: which
locks its threads queue on, which frames they wait in and what the owner does
meanwhile, how its threads group into pools, and which threads are stuck.

It works three ways, all through the same analysis:
  attach   sample a live process (/proc per thread, futex waits, connections,
           and for a JVM thread dumps over the attach protocol, with --jfr
           exact lock waits from Flight Recorder; no JDK needed)
  analyze  read thread dumps people already have (jstack, jcmd Thread.print,
           kill -3 in a log, Thread.dump_to_file, OpenJ9 javacores) and
           JFR recordings (.jfr)
  report   replay a recording made with attach --record
  diff     compare two runs, before and after a change
and answers in plain words (findings first), JSON for scripts, an offline
HTML report with a flame graph (--html), and pprof, folded and speedscope
profiles. top is a live terminal view of one process; serve exports
Prometheus metrics of live processes; fit and scale fit Amdahl's law and
the Universal Scalability Law to throughput measurements; ps lists
processes worth profiling.

Exit codes: 0 success, 1 failure (unreadable input, target gone, file not
written), 2 usage error (unknown flag, bad argument).`

const rootExample = `  # Watch a running server for a minute; summary, then an HTML report
  ctprof attach 4242 --duration 1m --html report.html

  # What is wrong in this dump?
  ctprof analyze dump.txt

  # A series of dumps taken 10 s apart: CPU per thread, stuck threads
  for i in 1 2 3; do jcmd $PID Thread.print -l >> series.txt; sleep 10; done
  ctprof analyze series.txt

  # For scripts and CI
  ctprof analyze --format json dump.txt | jq '.locks[0]'

  # A flame graph of where threads are
  ctprof analyze --format folded dump.txt | flamegraph.pl > threads.svg`

// NewRootCmd builds the command tree.
func NewRootCmd(io IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "ctprof",
		Short:         "Thread and lock contention profiler for JVMs and native Linux processes",
		Long:          rootLong,
		Example:       rootExample,
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetVersionTemplate("ctprof {{.Version}}\n")
	// Flag errors are usage errors (exit 2), with a pointer to --help.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	for _, newCmd := range commands {
		root.AddCommand(newCmd(io))
	}
	return root
}

// commands holds the constructors of the subcommands. Each command's file
// registers itself in an init function, so adding a command touches one
// file; cobra lists them alphabetically whatever the order here.
var commands []func(IO) *cobra.Command

// register adds a subcommand constructor; called from init functions.
func register(newCmd func(IO) *cobra.Command) { commands = append(commands, newCmd) }

// Main runs ctprof with args and returns the exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	root := NewRootCmd(IO{In: in, Out: out, ErrOut: errOut})
	root.SetArgs(args)
	stopProfiles := self.StartProfiles(errOut)
	err := root.Execute()
	stopProfiles()
	if err == nil {
		return ExitOK
	}
	var silent silentError
	if errors.As(err, &silent) {
		return silent.code
	}
	msg := err.Error()
	code := ExitFailure
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(msg) {
		code = ExitUsage
	}
	fmt.Fprintf(errOut, "ctprof: %s\n", msg)
	if h := hintFor(err); h != "" {
		fmt.Fprintf(errOut, "hint: %s\n", h)
	}
	return code
}

// isCobraUsageError recognises the errors cobra itself returns for unknown
// commands and wrong argument counts, which carry no type.
func isCobraUsageError(msg string) bool {
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand flag", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// checkTop refuses a --top that would print or export no rows: 0 and
// negatives are a mistake, not a request for the default.
func checkTop(top int) error {
	if top < 1 {
		return usageErrorf("--top must be at least 1, not %d", top)
	}
	return nil
}
