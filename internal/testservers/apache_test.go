//go:build linux && amd64

package testservers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestApacheLabels looks at apache2's child under ab: every thread has a
// label or is counted unknown, and the roles the design promises are
// there: the listener, the child's main thread, and requests queued on
// the RewriteMap's mutex (the load's contention).
func TestApacheLabels(t *testing.T) {
	srv := StartApache(t)
	promised := []Label{
		{Idle, "listener waiting for connections and events"},
		{Idle, "child's main thread waiting on the pipe of death"},
		{Contention, "request queued on the RewriteMap's mutex"},
	}
	look := rlLookUntil(t, srv, func(l []rlThread) bool {
		n := rlCount(l)
		for _, p := range promised {
			if n[p] == 0 {
				return false
			}
		}
		return true
	})
	n := rlCount(look)
	for _, p := range promised {
		assert.NotZero(t, n[p], "no thread in the role %q (%s)", p.Role, p.Verdict)
	}
	assert.GreaterOrEqual(t, len(look), apacheThreads+2, "the child's threads: its workers, the listener and its main thread")
	rlCheck(t, look, rlMaxUnknown)
}
