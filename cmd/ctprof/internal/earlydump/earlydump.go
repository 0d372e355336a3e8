// Package earlydump starts a one-shot's thread dump before ctprof has
// finished starting.
//
// `ctprof attach PID --count 1` spends about five milliseconds before
// main: the Go runtime, then the package initializers of every dependency
// linked into the binary (the Prometheus client, pprof, protobuf, the
// terminal UI), which no command can skip. The JVM could be printing its
// threads meanwhile. This package's initializer runs among the first of
// the binary's (Go initializes a package as soon as its imports are, in
// import path order), recognizes a one-shot's command line and asks for
// the dump at once (jvm.StartEarlyDump); the sampler takes the request
// over when it starts (jvm.TakeEarlyDump).
//
// Only cmd/ctprof imports it: tests and other programs that link ctprof's
// packages never send a request from an initializer.
package earlydump

import (
	"os"
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/jvm"
)

// DisableEnv, when set to anything, turns early dumps off: the one-shot
// asks for its dump after parsing its command line, as every other
// command does.
const DisableEnv = "CTPROF_NO_EARLY_DUMP"

func init() {
	if _, off := os.LookupEnv(DisableEnv); off {
		return
	}
	if pid, ok := OneShotPID(os.Args[1:]); ok {
		jvm.StartEarlyDump("/proc", pid)
	}
}

// OneShotPID returns the target of a command line that is exactly a
// one-shot attach: `attach PID --count 1`, in any order, with at most
// --format (text or json) and --top besides, each flag once, in the forms
// the command line parser accepts. Anything else, a help flag, an unknown
// or repeated flag, a second argument, a "--", is not recognized: the
// dump then waits for the parsed command line, so an early dump is never
// one the command would not have taken.
func OneShotPID(args []string) (int, bool) {
	if len(args) < 2 || args[0] != "attach" {
		return 0, false
	}
	pid, count := 0, ""
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if pid != 0 {
				return 0, false
			}
			p, err := strconv.Atoi(a)
			if err != nil || p <= 0 || strconv.Itoa(p) != a {
				return 0, false
			}
			pid = p
			continue
		}
		name, value, hasValue := flagParts(a)
		if name == "" || seen[name] {
			return 0, false
		}
		seen[name] = true
		if !hasValue {
			if i+1 == len(args) {
				return 0, false
			}
			i++
			value = args[i]
		}
		switch name {
		case "count":
			count = value
		case "format":
			if value != "text" && value != "json" {
				return 0, false
			}
		case "top":
			if n, err := strconv.Atoi(value); err != nil || n < 0 {
				return 0, false
			}
		}
	}
	if pid == 0 || count != "1" {
		return 0, false
	}
	return pid, true
}

// flagParts splits one flag argument into the flag's long name and its
// value when the argument holds it ("--count=1", "-n1", "-n=1"); name is
// "" for a flag OneShotPID does not accept.
func flagParts(a string) (name, value string, hasValue bool) {
	if long, ok := strings.CutPrefix(a, "--"); ok {
		n, v, has := strings.Cut(long, "=")
		switch n {
		case "count", "format", "top":
			return n, v, has
		}
		return "", "", false
	}
	short := a[1:]
	names := map[byte]string{'n': "count", 'f': "format"}
	n, ok := names[short[0]]
	if !ok {
		return "", "", false
	}
	if rest := short[1:]; rest != "" {
		return n, strings.TrimPrefix(rest, "="), true
	}
	return n, "", false
}
