package analysis

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkNativeResourceGrouping1000Threads measures what the native wait
// model adds to a sample of a 1,000-thread process (testdata/c/stacks.c,
// 1,000 threads queued on two mutexes, every one blocked with a stack): the
// verdicts of every blocked thread and the resources they count at, in
// the steady state of a live run (the sampler keeps an unmoved thread's
// stack, and the verdict with it), against the whole sample (the sweep,
// the unwinding and the Aggregator's Add). Budget: at most 10 % of a sample
// (docs/PERFORMANCE.md).
//
//	go test ./internal/analysis -run '^$' -bench NativeResourceGrouping1000Threads -benchtime 20x
func BenchmarkNativeResourceGrouping1000Threads(b *testing.B) {
	p := testnative.Start(b, "stacks", "500")
	smp, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: 100 * time.Millisecond, Count: 6 + b.N, ExactWaits: sample.ExactOff})
	if err != nil {
		b.Fatal(err)
	}
	defer smp.Close()
	a := New()
	var ticks, grouping []float64
	n := 0
	b.ResetTimer()
	_, err = smp.Run(context.Background(), func(s *snapshot.Snapshot) {
		n++
		start := time.Now()
		a.Add(s)
		tick := s.Cost + time.Since(start) // the sampler's cost of the snapshot, and its Add
		// The model's part, measured apart on the same snapshot: its
		// cost is the same a second time (the verdicts are cached with
		// the stacks), and the table it fills is already there.
		g0 := time.Now()
		v := a.classifyNative(s)
		a.addNativeSites(s, v, 0)
		g := time.Since(g0)
		if n > 5 { // the first samples unwind cold
			ticks = append(ticks, tick.Seconds())
			grouping = append(grouping, g.Seconds())
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	sum := a.Summary()
	waiters := 0
	for _, cs := range sum.ContentionSites {
		waiters += cs.Waiters
	}
	if waiters < 900 {
		b.Fatalf("expected ~1,000 waiters at the resources: %+v", sum.ContentionSites)
	}
	sort.Float64s(ticks)
	sort.Float64s(grouping)
	b.ReportMetric(grouping[len(grouping)/2]*1e3, "ms/grouping")
	b.ReportMetric(ticks[len(ticks)/2]*1e3, "ms/sample")
	b.ReportMetric(100*grouping[len(grouping)/2]/ticks[len(ticks)/2], "%-of-sample")
}
