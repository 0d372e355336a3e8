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
	listener := Label{Idle, "listener in its event loop"}
	// The listener runs now and then (it accepts the load's
	// connections): a look that caught it running shows it as running.
	look := rlLookUntil(t, srv, func(l []rlThread) bool { return lruWaiters(l) >= 2 && rlCount(l)[listener] == 1 })
	rlCheck(t, look, rlMaxUnknown)
	assert.GreaterOrEqual(t, lruWaiters(look), 2, "workers labelled contention at the LRU lock")
	roles := rlCount(look)
	assert.Equal(t, 1, roles[listener], "the listener")
	idle := 0
	for l, n := range roles {
		if l.Verdict == Idle && strings.HasSuffix(l.Role, "waiting for a request") {
			idle += n
		}
	}
	assert.GreaterOrEqual(t, idle, 3, "maintenance threads waiting for a request")
}
