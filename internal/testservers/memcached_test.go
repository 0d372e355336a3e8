//go:build linux && amd64

package testservers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// memcached under the LRU-contention load: workers queue on the LRU lock
// "stats cachedump" holds, the rest of its threads wait for work.
func TestMemcachedLabels(t *testing.T) {
	srv := StartMemcached(t)
	lruWaiters := func(look []rlThread) int {
		n := 0
		for _, th := range look {
			if th.label.Role == "worker queued on the LRU lock" {
				n++
			}
		}
		return n
	}
	look := rlLookUntil(t, srv, func(l []rlThread) bool { return lruWaiters(l) >= 2 })
	rlCheck(t, look, 0.1)
	assert.GreaterOrEqual(t, lruWaiters(look), 2, "workers labelled contention at the LRU lock")
	roles := rlCount(look)
	assert.Equal(t, 1, roles[Label{Idle, "listener in its event loop"}], "the listener")
	idle := 0
	for l, n := range roles {
		if l.Verdict == Idle && strings.HasSuffix(l.Role, "waiting for a request") {
			idle += n
		}
	}
	assert.GreaterOrEqual(t, idle, 3, "maintenance threads waiting for a request")
}
