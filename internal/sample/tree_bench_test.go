package sample

import (
	"context"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkTreeSample500Processes compares the steady cost of one sample
// of a server made of 500 processes (testdata/c/forked_workers.c: 500
// forked workers blocked on one shared semaphore inside their work, each
// sampled with its stack) with one of a process of 10,000 threads
// (testdata/c/stacks.c: 5,000 waiters on each of two mutexes), in the same
// run, at the defaults of attach (exact waits where the privilege allows).
// "cpu-ms" is ctprof's CPU time (user and system, every goroutine) per
// sample, the median of 10 samples after 3 of warm-up; "ratio" is the
// tree's over the threads'. Issue 35's budget: a tree of 500 processes
// within the per-sample budget of 10,000 threads, a ratio of at most 1.
//
//	go test ./internal/sample -run '^$' -bench TreeSample500Processes -benchtime 1x
func BenchmarkTreeSample500Processes(b *testing.B) {
	for i := 0; i < b.N; i++ {
		tree := testnative.Start(b, "forked_workers", "500", "shared")
		treeMS := sampleCPU(b, tree.PID, 501)
		tree.Stop()
		threads := testnative.Start(b, "stacks", "5000")
		threadsMS := sampleCPU(b, threads.PID, 10000)
		threads.Stop()
		b.Logf("round %d: tree of 500 processes %.1f ms of CPU a sample, 10,000 threads %.1f ms: ratio %.2f", i+1, treeMS, threadsMS, treeMS/threadsMS)
		b.ReportMetric(treeMS, "tree-cpu-ms")
		b.ReportMetric(threadsMS, "threads-cpu-ms")
		b.ReportMetric(treeMS/threadsMS, "ratio")
	}
}

// sampleCPU samples pid every 200 ms and returns the median CPU time in
// milliseconds one sample took, once the sample held want threads.
func sampleCPU(b *testing.B, pid, want int) float64 {
	b.Helper()
	s, err := NewSampler(Options{PID: pid, Interval: 200 * time.Millisecond, ExactWaits: ExactAuto})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var costs []float64
	deadline := time.Now().Add(60 * time.Second)
	for len(costs) < 10 && time.Now().Before(deadline) {
		before := selfCPU()
		snap, err := s.Next(ctx)
		used := selfCPU() - before
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Threads) < want*9/10 {
			continue // the tree is still being found, or threads starting
		}
		if s.run.taken > 3 {
			costs = append(costs, float64(used.Microseconds())/1000)
		}
	}
	if len(costs) < 10 {
		b.Fatalf("only %d samples of %d threads within 60 s", len(costs), want)
	}
	sort.Float64s(costs)
	return costs[len(costs)/2]
}

// selfCPU is this process's user and system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
