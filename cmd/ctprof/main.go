// Command ctprof profiles thread and lock contention of JVMs and native
// Linux processes. All logic lives in internal/cli; main maps its errors to
// exit codes.
package main

import (
	"os"

	"github.com/ctprof/ctprof/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
