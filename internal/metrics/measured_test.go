package metrics

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/jfrsnap"
)

// TestJFRLockCounters: the waits of a real recording (pkg/jfr's fixture of
// JfrLocks) become wait-seconds and contention counters per lock, which
// add up to the recording's totals, lint clean, and never go down as more
// of the recording arrives.
func TestJFRLockCounters(t *testing.T) {
	f, err := os.Open(filepath.Join(moduleRoot(t), "pkg", "jfr", "testdata", "locks-jdk17.jfr"))
	require.NoError(t, err)
	defer f.Close()
	agg := analysis.New()
	c := NewCollector(CollectorOptions{Top: 1})
	c.Register(TargetInfo{PID: 4242, Name: "java", Kind: "jvm"}, agg)
	r := jfrsnap.NewReader(f, "locks.jfr", jfrsnap.Options{MaxEvents: 300})
	prev := map[string]float64{}
	scrapes := 0
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		agg.Add(s)
		mfs := gather(t, c)
		scrapes++
		for _, name := range []string{"ctprof_lock_wait_seconds_total", "ctprof_lock_contentions_total"} {
			mf := mfs[name]
			if mf == nil {
				continue
			}
			for _, m := range mf.GetMetric() {
				key := name + m.String()
				v := m.GetCounter().GetValue()
				assert.GreaterOrEqual(t, v, prev[key], "%s went down", key)
				prev[key] = v
			}
		}
	}
	require.Greater(t, scrapes, 2)
	s := agg.MetricsSummary()
	require.NotNil(t, s.JFR)
	mfs := gather(t, c)
	target := map[string]string{"pid": "4242"}
	assert.InDelta(t, s.JFR.WaitSeconds, sumOf(mfs, "ctprof_lock_wait_seconds_total", target), 0.01)
	assert.InDelta(t, float64(s.JFR.Events), sumOf(mfs, "ctprof_lock_contentions_total", target), 0.5)
	// Top 1: the hottest lock by name, the rest in "other".
	assert.Len(t, mfs["ctprof_lock_wait_seconds_total"].GetMetric(), 2)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
