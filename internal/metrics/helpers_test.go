package metrics

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

var update = flag.Bool("update", false, "capture fresh live summaries and rewrite the golden files under testdata/")

// moduleRoot is the directory holding go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	for d := filepath.Dir(file); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		require.NotEqual(t, filepath.Dir(d), d, "go.mod not found above %s", file)
	}
}

// liveTarget samples pid with a real Sampler every interval until the test
// ends, feeding a fresh Aggregator, as `ctprof serve` does for each target.
func liveTarget(t testing.TB, pid int, interval time.Duration) (*analysis.Aggregator, snapshot.Target) {
	t.Helper()
	return liveTargetWith(t, sample.Options{PID: pid, Interval: interval})
}

// liveTargetWith is liveTarget with the sampler's options.
func liveTargetWith(t testing.TB, o sample.Options) (*analysis.Aggregator, snapshot.Target) {
	t.Helper()
	s, err := sample.NewSampler(o)
	require.NoError(t, err)
	agg := analysis.New()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = s.Run(ctx, agg.Add)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		s.Close()
	})
	return agg, s.Target()
}

// sampleN takes n samples of pid, interval apart, into a new Aggregator.
func sampleN(t testing.TB, pid, n int, interval time.Duration) (*analysis.Aggregator, *sample.Sampler) {
	t.Helper()
	s, err := sample.NewSampler(sample.Options{PID: pid, Interval: interval, Count: n})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	agg := analysis.New()
	_, err = s.Run(context.Background(), agg.Add)
	require.NoError(t, err)
	return agg, s
}

// addDump adds one live sample joined with a thread dump of the same
// moment, the way the JVM sampler will: /proc threads and the dump's
// threads by nid.
func addDump(t testing.TB, agg *analysis.Aggregator, s *sample.Sampler, dumpText []byte) {
	t.Helper()
	snap, err := s.Take(context.Background())
	require.NoError(t, err)
	dumps, err := threaddump.Parse(bytes.NewReader(dumpText))
	require.NoError(t, err)
	require.NotEmpty(t, dumps)
	snap.Dump = dumps[len(dumps)-1]
	agg.Add(snap)
}

// frozen is a SummarySource that always returns the same Summary.
type frozen struct{ s *analysis.Summary }

func (f frozen) MetricsSummary() *analysis.Summary { return f.s }

// gather collects c into metric families.
func gather(t testing.TB, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// labelsOf renders a metric's labels as "k=v,k=v" for map keys and messages.
func labelsOf(m *dto.Metric) string {
	var b strings.Builder
	for i, lp := range m.GetLabel() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(lp.GetName() + "=" + lp.GetValue())
	}
	return b.String()
}

// label returns the value of label name on m.
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// value is a gauge's or counter's value.
func value(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// find returns the value of the series of family name whose labels include
// want, and whether there is one.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			if label(m, k) != v {
				continue next
			}
		}
		return value(m), true
	}
	return 0, false
}

// poll calls cond every 100 ms until it returns nil or timeout passes, and
// returns its last error.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var errNotYet = errors.New("not yet")
