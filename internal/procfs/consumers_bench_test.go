package procfs

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkConsumersSweep reads every process's stat as HostReader's sweep
// does, on this host as it is ("host") and with a 2,000-thread process
// beside it ("with-2000-threads": the kernel adds up every thread's CPU
// time for a process's stat). It reports the sweep's CPU time per process
// and per sweep; the reader spaces its sweeps by 200 times the latter, at
// least a second apart.
//
//	go test -run '^$' -bench ConsumersSweep -count 3 ./internal/procfs/
func BenchmarkConsumersSweep(b *testing.B) {
	run := func(b *testing.B) {
		// The CPU clock read is the thread's: the loop stays on one.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := NewFS("/proc").NewHostReader(os.Getpid())
		r.sweep(time.Now()) // the baseline: the maps and buffers
		procs := len(r.prev)
		b.ReportAllocs()
		b.ResetTimer()
		start := threadCPU()
		for i := 0; i < b.N; i++ {
			r.sweep(time.Now())
		}
		cpu := threadCPU() - start
		b.StopTimer()
		b.ReportMetric(float64(procs), "processes")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(procs), "cpu-ns/process")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/sweep")
	}
	b.Run("host", run)
	b.Run("with-2000-threads", func(b *testing.B) {
		testnative.Start(b, "many_threads", strconv.Itoa(2000))
		run(b)
	})
}
