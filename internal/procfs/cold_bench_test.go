package procfs

import (
	"strconv"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testnative"
)

// coldThreads is the size of the native process the cold-sweep benchmark
// reads (issue 16: a 30,000-thread process sampled at 1 Hz).
const coldThreads = 30000

// BenchmarkColdSweep reads a real 30,000-thread C process (started by the
// benchmark) with a new ThreadReader each time: the first sweep of a run,
// which opens every file. "first-tick" reads what the first tick of a
// continuing run reads (schedstat, stat, status, and wchan and syscall of
// every sleeper: a native target has no dump to say which waits matter);
// "one-sample" what a one-shot reads (stat and the affinity mask, then
// the sleepers' system calls); "warm" is a later tick of the same reader,
// idle threads carried over. Goal: the first summary within 1 s at 1 Hz,
// and later ticks within the 10 µs per thread-file budget.
//
//	go test -run '^$' -bench ColdSweep -benchmem -count 3 ./internal/procfs/
func BenchmarkColdSweep(b *testing.B) {
	p := testnative.Start(b, "many_threads", strconv.Itoa(coldThreads))
	fs := NewFS("/proc")
	cold := func(oneSample bool) func(b *testing.B) {
		return func(b *testing.B) {
			var buf []Thread
			n := 0
			for i := 0; i < b.N; i++ {
				r, err := fs.NewThreadReader(p.PID)
				if err != nil {
					b.Fatal(err)
				}
				r.OneSample = oneSample
				buf, err = r.Read(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				n += len(buf)
				b.StopTimer() // closing 30,000 descriptors is not the sweep
				r.Close()
				b.StartTimer()
			}
			if n < b.N*coldThreads {
				b.Fatalf("read %d threads per sweep, want %d", n/b.N, coldThreads)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/thread")
			b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/sweep")
		}
	}
	b.Run("first-tick", cold(false))
	b.Run("one-sample", cold(true))
	// A later tick of one reader: "warm" as ticks run (idle threads read
	// one tick in idleStride once idle for idleSkipAfter reads), and
	// "warm-every-thread" with every thread read (a run's last tick).
	warm := func(everyThread bool) func(b *testing.B) {
		return func(b *testing.B) {
			r, err := fs.NewThreadReader(p.PID)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			buf, err := r.Read(nil)
			if err != nil {
				b.Fatal(err)
			}
			// Idle threads are left out once idle on idleSkipAfter reads.
			for range idleSkipAfter {
				if buf, err = r.Read(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := 0; i < b.N; i++ {
				r.Final = everyThread
				if buf, err = r.Read(buf[:0]); err != nil {
					b.Fatal(err)
				}
				n += len(buf)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/thread")
			b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/sweep")
		}
	}
	b.Run("warm", warm(false))
	b.Run("warm-every-thread", warm(true))
}
