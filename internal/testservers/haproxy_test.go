//go:build linux && amd64

package testservers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestHAProxyLabels starts haproxy with four threads under 64 keep-alive
// clients, labels its threads from /proc (stacks as ctprof unwinds them)
// and from one set of gdb backtraces, and checks the role the design
// promises: every thread is an event loop, idle in epoll_wait when it
// waits.
func TestHAProxyLabels(t *testing.T) {
	srv := StartHAProxy(t)
	loops := func(ls []rhThread) int {
		n := 0
		for _, l := range ls {
			if l.label.Verdict == Idle {
				n++
			}
		}
		return n
	}
	sweeps := rhSweeps(t, srv, 5*time.Second, func(ls []rhThread) bool { return loops(ls) >= 2 })
	// gdb's look is one instant: under load all four threads may be
	// running or sending at it. A few looks, until one catches a loop.
	gdb := rhGDB(t, srv)
	for i := 0; i < 4 && loops(gdb) == 0; i++ {
		gdb = rhGDB(t, srv)
	}
	rhLogRoleTable(t, srv, sweeps, gdb)

	best := 0
	for _, s := range sweeps {
		best = max(best, loops(s))
	}
	assert.GreaterOrEqual(t, best, 2, "no /proc sweep saw 2 event loops in epoll_wait")
	assert.Len(t, gdb, haproxyThreads, "haproxy runs one thread per nbthread")
	assert.GreaterOrEqual(t, loops(gdb), 1, "gdb saw no event loop in epoll_wait")
	rhAssertFewUnknown(t, sweeps)
}
