//go:build linux && amd64

package testservers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Redis under redis-benchmark: its main thread runs or waits in its event
// loop, its bio threads wait for jobs; no thread waits for another's lock.
func TestRedisLabels(t *testing.T) {
	srv := StartRedis(t)
	bio := func(look []rlThread) int {
		return rlCount(look)[Label{Idle, "bio thread waiting for a job"}]
	}
	look := rlLookUntil(t, srv, func(l []rlThread) bool { return bio(l) >= 2 })
	rlCheck(t, look, rlMaxUnknown)
	assert.GreaterOrEqual(t, bio(look), 2, "bio threads waiting for a job")
	roles := rlCount(look)
	main := roles[Label{Running, "running"}] + roles[Label{Idle, "main thread's event loop"}] + roles[Label{IO, "main thread's I/O"}]
	assert.GreaterOrEqual(t, main, 1, "the main thread runs or waits in its event loop")
	assert.GreaterOrEqual(t, roles[Label{Idle, "jemalloc background thread waiting for its next purge"}], 1, "jemalloc's background threads")
	for _, th := range look {
		assert.NotEqual(t, Contention, th.label.Verdict, "tid %d %s: %s", th.TID, th.Name, th.label.Role)
	}
}
