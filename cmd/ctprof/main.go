// Command ctprof profiles thread and lock contention of JVMs and native
// Linux processes. All logic lives in internal/cli; main maps its errors to
// exit codes.
package main

import (
	"os"
	"runtime"

	// Its initializer asks a one-shot's JVM for its thread dump while the
	// rest of the binary initializes.
	_ "github.com/ctprof/ctprof/cmd/ctprof/internal/earlydump"
	"github.com/ctprof/ctprof/internal/cli"
)

func main() {
	if os.Getenv("CTPROF_HEAPPROFILE") == "" && os.Getenv("GODEBUG") == "" {
		// No one reads ctprof's own memory profile unless the developer
		// asks for one (CTPROF_HEAPPROFILE; GODEBUG may set the rate):
		// its samples, a stack walk every 512 KB allocated and pages of
		// the runtime's bucket table, are not taken.
		runtime.MemProfileRate = 0
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
