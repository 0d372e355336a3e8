package scale

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/ctprof/ctprof/internal/testprio"
)

func regexSource(t *testing.T) func() (Throughput, error) {
	return func() (Throughput, error) { return NewRegexThroughput(`throughput (\d+) ops/s`) }
}

// On this 2-CPU machine: the independent workload gains from the second
// CPU, the contended one does not, and its mutex's contention grows.
func TestScaleNamesTheLockThatGrows(t *testing.T) {
	cpus, err := AllowedCPUs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cpus), 2, "the scaling tests need 2 CPUs")
	bin := testnative.Build(t, "scale_workload")
	run := func(mode string) *Result {
		res, err := Run(context.Background(), Options{
			Command: testprio.Prioritized(t, bin, mode), Vary: VaryCPUs, Levels: []int{1, 2}, CPUs: cpus,
			Warmup: 700 * time.Millisecond, Measure: 2 * time.Second, Interval: 100 * time.Millisecond,
			NewThroughput: regexSource(t), Retries: 2,
		}, func(s string) { t.Log(s) })
		require.NoError(t, err)
		require.Len(t, res.Levels, 2)
		for _, lv := range res.Levels {
			assert.GreaterOrEqual(t, lv.Measurements, 1)
		}
		return res
	}
	indep := run("independent")
	cont := run("contended")
	t.Logf("independent: %.2fx, contended: %.2fx", indep.Levels[1].Normalized, cont.Levels[1].Normalized)
	assert.Greater(t, indep.Levels[1].Normalized, cont.Levels[1].Normalized+0.2, "the contended workload scales worse")
	require.NotEmpty(t, cont.Locks)
	top := cont.Locks[0]
	assert.Contains(t, top.Name, "work_lock")
	assert.Greater(t, top.BlockedShare[1], top.BlockedShare[0], "contention grows with CPUs")
	assert.Greater(t, top.BlockedShare[1], 0.1, "a thread queues on the lock in a good share of the samples")
}

func TestScaleErrors(t *testing.T) {
	cpus, err := AllowedCPUs()
	require.NoError(t, err)
	bin := testnative.Build(t, "scale_workload")
	base := Options{Vary: VaryCPUs, CPUs: cpus, Warmup: 300 * time.Millisecond, Measure: time.Second, Interval: 100 * time.Millisecond, NewThroughput: regexSource(t)}

	o := base
	o.Command, o.Levels = []string{bin, "independent"}, []int{1}
	_, err = Run(context.Background(), o, nil)
	assert.ErrorContains(t, err, "at least two levels")

	o.Levels = []int{1, len(cpus) + 1}
	_, err = Run(context.Background(), o, nil)
	assert.ErrorContains(t, err, "cannot bind to")

	o.Levels, o.Command = []int{1, 2}, []string{bin, "bogus-mode"}
	_, err = Run(context.Background(), o, nil)
	assert.ErrorIs(t, err, ErrWorkloadFailed)
	assert.ErrorContains(t, err, "usage:", "the workload's own output explains")

	o.Command = []string{bin, "independent"}
	o.NewThroughput = func() (Throughput, error) { return NewRegexThroughput(`requests (\d+)`) }
	_, err = Run(context.Background(), o, nil)
	assert.ErrorIs(t, err, ErrWorkloadFailed)
	assert.ErrorContains(t, err, "no line of the workload's output matched")

	o.Command = []string{"/nonexistent/workload"}
	_, err = Run(context.Background(), o, nil)
	assert.ErrorIs(t, err, ErrWorkloadFailed)
}
