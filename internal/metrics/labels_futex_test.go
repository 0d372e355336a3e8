package metrics

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testnative"
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

// A native lock convoy's lock labels, scraped live: each futex by its
// stable name, the stack's without its thread id, and none holds the
// futex's address.
func TestFutexLockLabelsLive(t *testing.T) {
	p := testnative.Start(t, "lock_convoy", "3", "20000")
	agg, s := sampleN(t, p.PID, 6, 100*time.Millisecond)
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfo{PID: p.PID, Name: s.Target().Name}, agg)
	sum := agg.MetricsSummary()
	seen := map[string]bool{}
	for _, m := range gather(t, c)["ctprof_lock_blocked_thread_seconds_total"].GetMetric() {
		l := label(m, "lock")
		seen[l] = true
		for _, lk := range sum.Locks {
			assert.NotContains(t, l, strings.TrimPrefix(lk.Address, "0x"), "no address in %q", l)
		}
	}
	for _, want := range []string{"futex global_lock", "futex shared memory (anonymous)+0x0"} {
		assert.True(t, seen[want], "%q among %v", want, seen)
	}
	var heap, stack bool
	for l := range seen {
		heap = heap || regexp.MustCompile(`^futex \[heap\]\+0x[0-9a-f]+$`).MatchString(l)
		stack = stack || regexp.MustCompile(`^futex \[stack\]\+0x[0-9a-f]+$`).MatchString(l)
	}
	assert.True(t, heap, "the heap mutex: %v", seen)
	assert.True(t, stack, "the stack mutex, without the thread id: %v", seen)
}
