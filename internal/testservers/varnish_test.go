//go:build linux && amd64

package testservers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVarnishLabels looks at varnishd's cache process under load: every
// thread has a label or is counted unknown, and the roles the design
// promises are there: requests waiting for their fetches (the load's
// contention), the CLI thread, the waiter, and the background threads,
// each labelled.
func TestVarnishLabels(t *testing.T) {
	srv := StartVarnish(t)
	promised := []Label{
		{Idle, "CLI thread waiting for the manager's commands"},
		{Idle, "waiter waiting for events on idle connections"},
	}
	fetchWaits := func(l []rlThread) int { return rlCount(l)[Label{Contention, "request waiting for its fetch"}] }
	look := rlLookUntil(t, srv, func(l []rlThread) bool {
		n := rlCount(l)
		for _, p := range promised {
			if n[p] == 0 {
				return false
			}
		}
		return fetchWaits(l) >= 3
	})
	n := rlCount(look)
	for _, p := range promised {
		assert.NotZero(t, n[p], "no thread in the role %q (%s)", p.Role, p.Verdict)
	}
	assert.GreaterOrEqual(t, fetchWaits(look), 3, "requests waiting for their fetch")
	// The background threads are there, each with a label (they are told
	// by name): the expiry thread may be queued on a lock at that moment,
	// the ban lurker asleep or waiting.
	named := map[string]int{}
	for _, th := range look {
		if _, bg := varnishBackground[th.Name]; bg || th.Name == "cache-main" || th.Name == "cache-epoll" {
			named[th.Name]++
			assert.NotEmpty(t, th.label.Verdict, "tid %d %s: no label (syscall %d)", th.TID, th.Name, th.Syscall)
		}
	}
	for name := range varnishBackground {
		assert.Equal(t, 1, named[name], "threads named %s", name)
	}
	rlCheck(t, look, rlMaxUnknown)
}
