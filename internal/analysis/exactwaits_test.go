package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// The kernel's counts of a lock the samples never saw: the lock, its
// figures scaled to the exact counts, a finding, its site from the copied
// stacks, and the stacks weighed for pprof's contentions and delay.
func TestExactWaitsOfALockTheSamplesMissed(t *testing.T) {
	loc := symbolize.Location{Address: 0x4040, Module: "app", Offset: 0x40, Symbol: "short_lock", SymbolSize: 40}
	st := []symbolize.StackFrame{fr("libc.so.6", "__lll_lock_wait"), fr("libc.so.6", "pthread_mutex_lock"), fr("app", "take"), fr("app", "worker")}
	a := New()
	for i := 0; i < 3; i++ {
		s := liveSnap(i, []procfs.Thread{thread(1, "w-1", 'R', 0, 0, 0), thread(2, "w-2", 'R', 0, 0, 0)})
		if i > 0 {
			// Each second: 20,000 waits, of which 2,000 timed for 20 ms in
			// all (10 µs each): 0.2 s of waiting scaled, two stacks.
			s.FutexTrace = &snapshot.FutexTrace{Elapsed: time.Second, Calls: 20000, Exact: true, Traced: 2000, TracedShare: 0.1, Cost: 5 * time.Millisecond,
				Futexes: []snapshot.TracedFutex{{Address: 0x4040, Location: loc, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE",
					Waits: 20000, Traced: 2000, Total: 20 * time.Millisecond, Max: 80 * time.Microsecond,
					Durations: []time.Duration{5 * time.Microsecond, 10 * time.Microsecond, 10 * time.Microsecond, 80 * time.Microsecond},
					TIDs:      []int{1, 2}, Stacks: [][]symbolize.StackFrame{st, st}},
					{Address: 0x9000, Kind: procfs.FutexCondition, Waits: 10, Traced: 10, Total: time.Second}}}
		}
		a.Add(s)
	}
	s := a.Summary()
	require.NotNil(t, s.ExactWaits)
	assert.Equal(t, int64(40000), s.ExactWaits.Calls)
	assert.InDelta(t, 0.005, s.ExactWaits.CostShare, 1e-9)
	l := futexLockOf(s, `^short_lock$`)
	require.NotNil(t, l, "%+v", s.Locks)
	x := l.Exact
	require.NotNil(t, x)
	assert.Equal(t, int64(40000), x.Waits)
	assert.Equal(t, 20000.0, x.PerSecond)
	assert.InDelta(t, 0.4, x.WaitSeconds, 1e-9)
	assert.InDelta(t, 0.2, x.AvgWaiters, 1e-9)
	assert.InDelta(t, 0.08, x.MaxMs, 1e-9)
	assert.InDelta(t, 0.01, x.P50Ms, 0.001)
	assert.Equal(t, []FrameCount{{Frame: "take ← worker", Samples: 4}}, x.Sites)
	require.NotNil(t, l.WaitFrame, "the site from the kernel's stacks")
	assert.Equal(t, "take ← worker", *l.WaitFrame)
	assert.Nil(t, futexLockOf(s, `^0x9000$`), "a condition's waits are idle, not a lock")

	var f *Finding
	for i := range s.Findings {
		if strings.Contains(s.Findings[i].Summary, "short_lock") {
			f = &s.Findings[i]
		}
	}
	require.NotNil(t, f, "%+v", s.Findings)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Contains(t, f.Summary, "Threads waited on futex short_lock (app+0x40) in take ← worker 20000 times a second")
	assert.Contains(t, f.Summary, "no sample saw a waiter")

	ws := a.WaitStacks()
	require.Len(t, ws, 1)
	assert.Equal(t, []string{"worker", "take", "pthread_mutex_lock", "__lll_lock_wait"}, ws[0].Frames)
	assert.Equal(t, int64(40000), ws[0].Count, "contentions: the waits the stacks stand for")
	assert.Equal(t, int64(400*time.Millisecond), ws[0].WaitNanos, "delay: their scaled wait time")
	assert.Equal(t, map[string]int64{l.ID: int64(400 * time.Millisecond)}, ws[0].ByLock)
}

// The header's line: what the kernel counted, and a run without any call.
func TestExactWaitsLine(t *testing.T) {
	assert.Equal(t, "exact futex waits: 41,234 blocking futex calls in 3.00 s, counted by the kernel; 100% of them timed; ctprof's cost 0.50% of a CPU",
		ExactWaitsLine(&ExactWaitsSummary{Seconds: 3, Calls: 41234, Exact: true, TimedShare: 1, CostShare: 0.005}))
	assert.Equal(t, "exact futex waits: 90,000 blocking futex calls in 3.00 s, estimated from the kernel's sampling windows; 2% of them timed; ctprof's cost 1.00% of a CPU; 7 records lost (counted, not timed)",
		ExactWaitsLine(&ExactWaitsSummary{Seconds: 3, Calls: 90000, TimedShare: 0.02, CostShare: 0.01, Lost: 7}))
	assert.Equal(t, "exact futex waits: the kernel counted no blocking futex call in 3.00 s; ctprof's cost 0.10% of a CPU",
		ExactWaitsLine(&ExactWaitsSummary{Seconds: 3, CostShare: 0.001}))
}
