package metrics

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/analysis"
)

// A futex's label is its stable name, never its address; a futex on a
// thread's stack drops the thread's id, which the next thread or run
// changes.
func TestFutexLockLabels(t *testing.T) {
	for class, want := range map[string]string{
		"global_lock":                   "futex global_lock",
		"queue::lock":                   "futex queue::lock",
		"[heap]+0x2a0":                  "futex [heap]+0x2a0",
		"[stack:4242]+0x7fee90":         "futex [stack]+0x7fee90",
		"shared memory (anonymous)+0x0": "futex shared memory (anonymous)+0x0",
		"lock_convoy+0x40e0":            "futex lock_convoy+0x40e0",
		"libfoo.so.6+0x1234":            "futex libfoo.so.6+0x1234",
	} {
		l := analysis.LockSummary{Kind: "futex", Resource: "futex", Class: class, Address: "0x7f0012345678"}
		assert.Equal(t, want, lockLabel(&l), class)
	}
}
