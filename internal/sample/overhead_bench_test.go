package sample

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

var throughputRE = regexp.MustCompile(`(?m)^throughput (\d+) ops/s`)

// meanThroughput averages the "throughput N ops/s" lines printed after
// byte offset from of the log.
func meanThroughput(log []byte, from int) (float64, int) {
	var sum float64
	n := 0
	for _, m := range throughputRE.FindAllSubmatch(log[from:], -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// BenchmarkOverheadOnContendedJVM measures what attaching costs a
// contended Java workload (testdata/java/ScaleWorkload contended: its
// threads serialize on one monitor, printing throughput twice a second):
// alternating windows without and with a Sampler at ctprof attach's
// defaults (1 s interval, a thread dump each tick within the 0.5 % pause
// budget), so machine noise hits both alike. The budget is at most 1 %
// lower throughput.
//
//	go test -run '^$' -bench OverheadOnContendedJVM -benchtime 1x ./internal/sample/
func BenchmarkOverheadOnContendedJVM(b *testing.B) {
	const rounds, window = 6, 5 * time.Second
	p := testjvm.Start(b, testjvm.JDK17(b), "ScaleWorkload", "contended")
	time.Sleep(3 * time.Second) // JIT warm-up, before anything is measured
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var without, with float64
		for r := 0; r < rounds; r++ {
			from := len(p.Log())
			time.Sleep(window)
			v, n := meanThroughput(p.Log(), from)
			if n == 0 {
				b.Fatalf("no throughput lines in %s: %s", window, p.Log())
			}
			without += v

			s, err := NewSampler(Options{PID: p.PID, Interval: time.Second, JVM: JVMOptions{PauseBudget: DefaultPauseBudget}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), window)
			from = len(p.Log())
			dumps := 0
			if _, err := s.Run(ctx, func(snap *snapshot.Snapshot) {
				if snap.Dump != nil {
					dumps++
				}
			}); err != nil {
				b.Fatal(err)
			}
			cancel()
			s.Close()
			if dumps == 0 {
				b.Fatal("the sampler took no thread dump: the run would not measure ctprof's defaults")
			}
			v, _ = meanThroughput(p.Log(), from)
			with += v
		}
		b.ReportMetric(without/rounds, "ops/s-without")
		b.ReportMetric(with/rounds, "ops/s-with")
		b.ReportMetric(100*(1-with/without), "overhead-%")
	}
}
