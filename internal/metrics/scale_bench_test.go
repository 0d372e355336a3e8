package metrics

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// A 4,000-thread JVM (testdata/java/ManyThreads: readers, writers and
// heartbeats of 1,333 connections), sampled as ctprof attach --listen
// does: /proc every tick and a thread dump with each. Shared by the series
// test and the scrape benchmark so the JVM starts once per test binary.
var (
	bigJVMOnce sync.Once
	bigJVM     struct {
		agg    *analysis.Aggregator
		target snapshot.Target
		err    error
	}
)

func bigJVMRun(t testing.TB) (*analysis.Aggregator, snapshot.Target) {
	t.Helper()
	bigJVMOnce.Do(func() {
		// The JVM is stopped by pid when the first caller ends; the
		// Aggregator it filled is all the later callers need.
		p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "4000")
		s, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: 500 * time.Millisecond, Count: 6,
			JVM: sample.JVMOptions{PauseBudget: 0.5}})
		if err != nil {
			bigJVM.err = err
			return
		}
		defer s.Close()
		agg := analysis.New()
		if _, err := s.Run(context.Background(), agg.Add); err != nil {
			bigJVM.err = err
			return
		}
		bigJVM.agg, bigJVM.target = agg, s.Target()
	})
	require.NoError(t, bigJVM.err)
	return bigJVM.agg, bigJVM.target
}

// scrape gathers and encodes once, as a Prometheus scrape of /metrics
// does, and returns the number of series.
func scrape(t testing.TB, reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
	n := 0
	for _, mf := range mfs {
		n += len(mf.Metric)
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func bigJVMRegistry(t testing.TB) *prometheus.Registry {
	agg, target := bigJVMRun(t)
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(target), agg)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// The default series count stays under 300 for a 4,000-thread JVM: no
// per-thread or per-address labels, top-K pools and locks plus "other".
func TestSeriesBoundedFor4000ThreadJVM(t *testing.T) {
	reg := bigJVMRegistry(t)
	n := scrape(t, reg)
	t.Logf("series for a 4,000-thread JVM: %d", n)
	assert.Less(t, n, 300)
	agg, _ := bigJVMRun(t)
	s := agg.Summary()
	assert.GreaterOrEqual(t, s.Threads, 4000, "the dumps saw every thread")
	require.NotNil(t, s.SampleCost)
	assert.Positive(t, s.SampleCost.Dumps)
}

// BenchmarkScrape4000ThreadJVM is one scrape of the 4,000-thread JVM (the
// budget is 10 ms), and reports the series count and the cost of one
// sample (a /proc sweep of 4,000 threads and a thread dump) from the run:
//
//	go test ./internal/metrics -run '^$' -bench Scrape4000ThreadJVM -benchtime 200x
func BenchmarkScrape4000ThreadJVM(b *testing.B) {
	reg := bigJVMRegistry(b)
	agg, _ := bigJVMRun(b)
	series := 0
	b.ResetTimer()
	for b.Loop() {
		series = scrape(b, reg)
	}
	b.ReportMetric(float64(series), "series")
	if c := agg.Summary().SampleCost; c != nil {
		b.ReportMetric(1000*c.AvgSeconds, "sample-ms")
	}
}
