package sample

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// The pause budget holds with the target and the machine under CPU load:
// each dump's pause (safepoint sync included) is accounted before the next
// dump is allowed, and the whole run ends at most one dump's pause above
// its budget, by the JVM's own counters read apart from the sampler.
func TestPauseBudgetHoldsUnderLoad(t *testing.T) {
	// Eight busy workers on two CPUs, and spinners beside them: the
	// JVM's threads reach a safepoint late, which lengthens every pause.
	p := testjvm.Start(t, testjvm.JDK17(t), "ScaleWorkload", "independent", "8")
	load := testnative.Start(t, "spinners", "2")
	defer load.Stop()
	info, err := jvm.Inspect("/proc", p.PID)
	require.NoError(t, err)
	pauseSoFar := func() time.Duration {
		pd, err := info.ReadPerfData()
		require.NoError(t, err)
		c := pd.Counters()
		return c.SafepointTime + c.SafepointSyncTime
	}

	const budget = 0.1 // high, so that a short run takes several dumps
	// The run lasts 8 s, longer while it has fewer than 4 dumps: on a
	// machine loaded further by other work, one pause can pass 0.8 s and
	// hold the next dump back for as long as that 8 s.
	s, err := NewSampler(Options{PID: p.PID, Interval: 20 * time.Millisecond, Duration: 60 * time.Second, JVM: JVMOptions{PauseBudget: budget}})
	require.NoError(t, err)
	defer s.Close()
	type dump struct {
		at    time.Time
		pause time.Duration
	}
	var dumps []dump
	var first, last time.Time
	before := pauseSoFar()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	_, err = s.Run(ctx, func(snap *snapshot.Snapshot) {
		if first.IsZero() {
			first = snap.Time
		}
		last = snap.Time
		if snap.DumpCost != nil {
			dumps = append(dumps, dump{snap.Time, snap.DumpCost.Pause})
		}
		if len(dumps) >= 4 && last.Sub(first) >= 8*time.Second {
			stop()
		}
	})
	require.NoError(t, err)
	total := pauseSoFar() - before
	require.GreaterOrEqual(t, len(dumps), 3, "the run must take several dumps to test their spacing")

	var largest time.Duration
	for i, d := range dumps {
		largest = max(largest, d.pause)
		if i > 0 {
			prev := dumps[i-1]
			assert.GreaterOrEqual(t, d.at.Sub(prev.at), time.Duration(float64(prev.pause)/budget),
				"dump %d came before dump %d's pause of %s was within the budget", i, i-1, prev.pause)
		}
	}
	elapsed := last.Sub(first)
	// total also holds the JVM's own safepoints during the run (few and
	// short for this workload), so this bound is the stricter one.
	assert.LessOrEqual(t, total, time.Duration(budget*float64(elapsed))+largest,
		"%d dumps paused the JVM %s in %s (budget %.1f %%, largest pause %s)", len(dumps), total, elapsed, 100*budget, largest)
	t.Logf("%d dumps, JVM paused %s in %s (%.2f %%, budget %.1f %%), largest pause %s",
		len(dumps), total, elapsed, 100*total.Seconds()/elapsed.Seconds(), 100*budget, largest)
}
