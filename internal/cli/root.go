// Package cli holds ctprof's cobra commands. Each command has an options
// struct, a NewCmdX constructor that only parses flags, and an xRun function
// that does the work, so tests can drive either.
package cli

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/ctprof/ctprof/internal/debuginfod"
	"github.com/ctprof/ctprof/internal/self"
	"github.com/ctprof/ctprof/internal/symbolize"
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

//go:embed help/root-long.txt
var rootLong string

//go:embed help/root-example.txt
var rootExample string

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
	stopDebuginfod := startDebuginfod()
	err := root.Execute()
	stopDebuginfod()
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

// startDebuginfod lets the unwinders fetch the debug files of stripped
// binaries from the debuginfod servers DEBUGINFOD_URLS names in ctprof's
// own environment (never the target's), in the background, into the
// cache gdb and perf use; the returned func stops the fetches under way.
func startDebuginfod() func() {
	o, ok := debuginfod.OptionsFromEnv(os.Getenv)
	if !ok {
		return func() {}
	}
	o.Verify = symbolize.VerifyDebugFile
	c := debuginfod.New(o)
	symbolize.SetDebuginfod(c)
	return func() {
		symbolize.SetDebuginfod(nil)
		c.Close()
	}
}
