package sample

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// BenchmarkOverheadOnContendedJVMWithJFR is BenchmarkOverheadOnContendedJVM
// with a Flight Recorder recording as `ctprof attach --jfr` makes one:
// alternating windows without ctprof and with a Sampler at attach's
// defaults plus the recording (read every 5 s), for several
// --jfr-threshold values; one JVM per threshold, so no recording's
// settings linger into the next. The budget at the default threshold is at
// most 2 % lower throughput.
//
//	go test -run '^$' -bench OverheadOnContendedJVMWithJFR -benchtime 1x -timeout 40m ./internal/sample/
func BenchmarkOverheadOnContendedJVMWithJFR(b *testing.B) {
	// Windows of three reads each, so the recording's start and stop
	// weigh in as they do in a short attach, not more.
	const rounds, window = 4, 15 * time.Second
	// Threshold 0 is the reference: attach's defaults without --jfr, in
	// the same conditions. workers=2 is the workload of BenchmarkOverheadOnContendedJVM (one per
	// CPU: a waiter waits about one 1 ms hold); workers=8 queues seven
	// behind the holder, so most waits last several ms and a threshold
	// below them records hundreds a second.
	for _, workers := range []string{"2", "8"} {
		for _, th := range []time.Duration{0, 20 * time.Millisecond, 10 * time.Millisecond, time.Millisecond} {
			benchJFROverhead(b, workers, th, rounds, window)
		}
	}
}

// benchJFROverhead measures one workload at one threshold (0: no --jfr).
func benchJFROverhead(b *testing.B, workers string, th time.Duration, rounds int, window time.Duration) {
	name := "workers=" + workers + "/threshold=" + th.String()
	if th == 0 {
		name = "workers=" + workers + "/no-jfr"
	}
	b.Run(name, func(b *testing.B) {
		p := testjvm.Start(b, testjvm.JDK17(b), "ScaleWorkload", "contended", workers)
		time.Sleep(3 * time.Second) // JIT warm-up, before anything is measured
		// The JVM's first recording loads and starts Flight Recorder
		// itself (a one-time cost of about a second of CPU): let it
		// happen before the measured windows.
		warm, err := NewSampler(Options{PID: p.PID, Interval: time.Second, JVM: JVMOptions{NoDumps: true, JFR: JFRLiveOptions{Enabled: th > 0, Threshold: th}}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = warm.Run(ctx, func(*snapshot.Snapshot) {})
		cancel()
		warm.Close()
		time.Sleep(2 * time.Second)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var without, with float64
			waits := 0
			// The machine is shared, so throughput is noisy; what the
			// JVM spends on ctprof's requests is not: CPU of the
			// threads that serve them (JFR's and the attach listener,
			// which runs the diagnostic commands) and time at
			// safepoints, per second of the windows with ctprof.
			var helperCPU, safepoints time.Duration
			for r := 0; r < rounds; r++ {
				from := len(p.Log())
				time.Sleep(window)
				v, n := meanThroughput(p.Log(), from)
				if n == 0 {
					b.Fatalf("no throughput lines in %s: %s", window, p.Log())
				}
				without += v

				s, err := NewSampler(Options{PID: p.PID, Interval: time.Second, JVM: JVMOptions{
					PauseBudget: DefaultPauseBudget,
					JFR:         JFRLiveOptions{Enabled: th > 0, Threshold: th},
				}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), window)
				from = len(p.Log())
				reads := 0
				var first, last *snapshot.Snapshot
				if _, err := s.Run(ctx, func(snap *snapshot.Snapshot) {
					if first == nil {
						first = snap
					}
					last = snap
					if snap.Waits != nil {
						reads++
						waits += len(snap.Waits)
					}
					for _, e := range snap.Errors {
						b.Errorf("sampler: %s", e)
					}
				}); err != nil {
					b.Fatal(err)
				}
				cancel()
				s.Close()
				helperCPU += helperThreadsCPU(last) - helperThreadsCPU(first)
				if first.JVM != nil && last.JVM != nil {
					safepoints += last.JVM.SafepointTime - first.JVM.SafepointTime
				}
				if reads == 0 && th > 0 {
					b.Fatal("no recording data was read: the run would not measure --jfr")
				}
				v, _ = meanThroughput(p.Log(), from)
				with += v
			}
			b.ReportMetric(without/float64(rounds), "ops/s-without")
			b.ReportMetric(with/float64(rounds), "ops/s-with")
			b.ReportMetric(100*(1-with/without), "overhead-%")
			b.ReportMetric(float64(waits)/float64(rounds), "waits/window")
			secs := float64(rounds) * window.Seconds()
			b.ReportMetric(float64(helperCPU.Milliseconds())/secs, "helper-cpu-ms/s")
			b.ReportMetric(float64(safepoints.Microseconds())/1e3/secs, "safepoint-ms/s")
		}
	})
}

// helperThreadsCPU is the CPU time of the JVM threads that serve ctprof:
// Flight Recorder's and the attach listener.
func helperThreadsCPU(snap *snapshot.Snapshot) time.Duration {
	var d time.Duration
	for i := range snap.Threads {
		th := &snap.Threads[i]
		if strings.HasPrefix(th.Name, "JFR ") || th.Name == "Attach Listener" {
			d += th.CPU()
		}
	}
	return d
}
