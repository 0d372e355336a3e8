// Package testservers is test support: it starts real servers from
// Debian's packages under the load generators people use with them, for
// the tests of ctprof's native wait model (the corpus in
// internal/analysis/corpus_native_test.go). Each server comes with the
// rules that label its threads by their roles, written from the server's
// source and debugger stacks of its threads, never from ctprof's verdicts,
// and, where the server has it, its own count of the threads waiting at
// the resource the load makes hot.
//
// A starter fails the test with a clear message when the server or its
// load generator is missing (scripts/deps.sh installs them), and stops
// what it started, by pid, when the test ends.
package testservers

import (
	"net"
	"regexp"
	"testing"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Verdicts a label gives a thread: the wait model's four, and running.
const (
	Running    = "running"
	Idle       = "idle"
	Contention = "contention"
	Sleep      = "sleep"
	IO         = "io"
)

// Label is the truth of one thread of one sample.
type Label struct {
	// Verdict is one of the constants above; "" when the server's rules
	// do not know the thread's role (it is left out of the score and
	// counted as unlabelled).
	Verdict string
	// Role names the role the rules recognised ("row-lock wait",
	// "tpool worker waiting for a task"), for the test's log.
	Role string
}

// Server is a server a test started, under load.
type Server struct {
	// Name is the server's name ("mariadb", "redis").
	Name string
	PID  int
	// Lang is the language it is written in ("C", "C++").
	Lang string
	// Shape says how it serves: "thread pool", "event loop", "thread per
	// connection", or a combination.
	Shape string
	// Label labels one thread of a sample from its state, its system call
	// and its stack as ctprof unwound it (innermost first; nil when not
	// unwound). A thread in state R is Running; the rules need not say so.
	Label func(t *procfs.Thread) Label
	// TopSite matches the wait site (contention_sites[].wait_frame) of the
	// resource the load makes threads wait at most.
	TopSite *regexp.Regexp
	// TopRole matches the roles (Label.Role) of the threads that wait at
	// that resource: where the server keeps no count (TopWaiters nil),
	// the threads labelled so are the truth of its waiters.
	TopRole *regexp.Regexp
	// TopWaiters, when the server counts them itself, returns the mean
	// number of threads it counted waiting at that resource since the
	// previous call (its own instrumentation, sampled faster than ctprof
	// samples); nil when it has no such count: the labels are the truth.
	TopWaiters func() float64
	// Notes are the judgement calls behind the labels.
	Notes string
}

// freePort is a port of 127.0.0.1 that was free a moment ago, for a
// server to listen on.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
