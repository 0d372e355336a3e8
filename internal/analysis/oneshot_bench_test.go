package analysis

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// The snapshot a one-shot (ctprof attach PID --count 1) takes of a
// 2,000-thread JVM (testdata/java/ManyThreads, 21 more frames per thread):
// a /proc sweep and a thread dump. Taken once per test binary; the JVM is
// stopped when the first caller ends.
var (
	oneShotOnce sync.Once
	oneShot     struct {
		snap *snapshot.Snapshot
		err  error
	}
)

func oneShotSnapshot(tb testing.TB) *snapshot.Snapshot {
	tb.Helper()
	oneShotOnce.Do(func() {
		p := testjvm.Start(tb, testjvm.JDK17(tb), "ManyThreads", "2000", "21")
		s, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: time.Second, Count: 1,
			JVM: sample.JVMOptions{PauseBudget: sample.DefaultPauseBudget}})
		if err != nil {
			oneShot.err = err
			return
		}
		defer s.Close()
		if _, err := s.Run(context.Background(), func(snap *snapshot.Snapshot) { oneShot.snap = snap }); err != nil {
			oneShot.err = err
		}
	})
	require.NoError(tb, oneShot.err)
	require.NotNil(tb, oneShot.snap)
	require.NotNil(tb, oneShot.snap.Dump, "the one-shot took no thread dump")
	require.GreaterOrEqual(tb, len(oneShot.snap.Dump.Threads), 2000)
	return oneShot.snap
}

// BenchmarkOneShotAggregate2000Threads is what a one-shot spends between
// the parsed dump and the report: a fresh Aggregator's Add of the snapshot
// and its Summary, on the critical path of ctprof attach --count 1.
//
//	go test ./internal/analysis -run '^$' -bench OneShotAggregate2000Threads -benchmem -count 5
func BenchmarkOneShotAggregate2000Threads(b *testing.B) {
	snap := oneShotSnapshot(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a := New()
		a.Add(snap)
		_ = a.Summary()
	}
}
