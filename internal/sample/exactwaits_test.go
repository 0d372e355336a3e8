package sample

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testnative"
)

// As root the sampler counts a native target's futex waits with the
// kernel (--exact-waits): the waits counted_waits makes on its own word,
// counted by the program itself between two signals, are what the lock
// table says within 10 %, and the program's mutexes are named, classed as
// locks and have their waiters' sites.
func TestExactWaitsMatchTheProgramsOwnCount(t *testing.T) {
	testnative.RequireExactWaits(t)
	p := testnative.Start(t, "counted_waits", "1000", "3")
	counted := p.Value("COUNTED")
	s, err := NewSampler(Options{PID: p.PID, Interval: 200 * time.Millisecond, ExactWaits: ExactOn})
	require.NoError(t, err)
	defer s.Close()
	agg := analysis.New()
	// The first batch covers the time before the first count: not compared.
	snap, err := s.Take(context.Background())
	require.NoError(t, err)
	require.NotNil(t, snap.FutexTrace, "the tracer runs")
	c1 := p.Request(t, syscall.SIGUSR1, "COUNTS")
	for i := 0; i < 15; i++ {
		time.Sleep(200 * time.Millisecond)
		snap, err := s.Take(context.Background())
		require.NoError(t, err)
		agg.Add(snap)
	}
	c2 := p.Request(t, syscall.SIGUSR1, "COUNTS")
	sum := agg.Summary()
	require.NotNil(t, sum.ExactWaits)
	t.Logf("%s", analysis.ExactWaitsLine(sum.ExactWaits))

	var word *analysis.LockSummary
	byClass := map[string]*analysis.LockSummary{}
	for i := range sum.Locks {
		l := &sum.Locks[i]
		if l.Address == counted {
			word = l
		}
		byClass[l.Class] = l
	}
	require.NotNil(t, word, "no lock at the counted word %s in %+v", counted, sum.Locks)
	require.NotNil(t, word.Exact)
	slept := c2["calls"] - c1["calls"] - (c2["again"] - c1["again"])
	t.Logf("program: %d calls that slept; ctprof: %s", slept, analysis.ExactLockLine(word.Exact))
	assert.InEpsilon(t, float64(slept), float64(word.Exact.Waits), 0.10, "the kernel's count vs the program's own")
	mean := time.Duration((c2["total_ns"] - c1["total_ns"]) / max(c2["woken"]-c1["woken"], 1))
	assert.InDelta(t, float64(mean), word.Exact.P50Ms*1e6, float64(mean), "the median wait near the program's mean (%v)", mean)

	// Where: the stacks the kernel copied at some of the waits.
	require.NotEmpty(t, word.Exact.Sites)
	assert.Equal(t, "counted_wait ← waiter", word.Exact.Sites[0].Frame, "the program calls futex(2) in counted_wait, called by the waiter thread")
	require.NotNil(t, word.WaitFrame, "the samples or the kernel's stacks give the site")

	for _, name := range []string{"global_mutex"} {
		l := byClass[name]
		require.NotNil(t, l, "%s: %+v", name, sum.Locks)
		require.NotNil(t, l.Exact, name)
		assert.Positive(t, l.Exact.Waits, name)
		assert.Equal(t, "lock", l.FutexKind, name)
	}
	for _, l := range sum.Locks {
		assert.NotRegexp(t, `^0x`, l.Class, "named, not by its address")
	}
	assert.Positive(t, sum.ExactWaits.Calls)
	assert.Less(t, sum.ExactWaits.CostShare, 0.05, "the tracer's own CPU")
}

// A target with more threads than the tracer follows (each costs a kernel
// ring) is sampled instead, and says so; --exact-waits on refuses it.
func TestExactWaitsBoundedByThreads(t *testing.T) {
	testnative.RequireExactWaits(t)
	p := testnative.Start(t, "many_threads", strconv.Itoa(maxExactThreads+50))
	_, err := NewSampler(Options{PID: p.PID, ExactWaits: ExactOn})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than the 2000 whose futex waits ctprof counts")
	s, err := NewSampler(Options{PID: p.PID, ExactWaits: ExactAuto})
	require.NoError(t, err)
	defer s.Close()
	assert.Nil(t, s.exact.tracer)
	assert.Contains(t, strings.Join(s.Notes(), "\n"), "more than the 2000 whose futex waits ctprof counts")
}

// The samplers of one ctprof (serve's targets) share the bound on traced
// threads: a second target that does not fit beside the first is sampled
// (and says why), and is traced once the first's sampler has closed.
func TestExactWaitsBudgetSharedByTargets(t *testing.T) {
	testnative.RequireExactWaits(t)
	big := testnative.Start(t, "many_threads", "1500")
	small := testnative.Start(t, "many_threads", "600")
	first, err := NewSampler(Options{PID: big.PID, ExactWaits: ExactOn})
	require.NoError(t, err)
	require.NotNil(t, first.exact.tracer)
	_, err = NewSampler(Options{PID: small.PID, ExactWaits: ExactOn})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "whose futex waits ctprof can still count (2000 at most across its targets")
	second, err := NewSampler(Options{PID: small.PID, ExactWaits: ExactAuto})
	require.NoError(t, err)
	assert.Nil(t, second.exact.tracer)
	assert.Contains(t, strings.Join(second.Notes(), "\n"), "its futex waits are sampled")
	require.NoError(t, second.Close())
	require.NoError(t, first.Close())
	third, err := NewSampler(Options{PID: small.PID, ExactWaits: ExactOn})
	require.NoError(t, err, "the first target's share came back when its sampler closed")
	assert.NotNil(t, third.exact.tracer)
	require.NoError(t, third.Close())
}
