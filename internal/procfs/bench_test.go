package procfs

import (
	"net"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/ctprof/ctprof/internal/testnative"
)

// benchThreads is the size of the process the sweep benchmark reads: the
// budget is stated for a 4,000-thread target.
const benchThreads = 4000

// BenchmarkThreadSweep sweeps a real 4,000-thread process (started by the
// benchmark) the way every tick does, and in the same run reads the same
// process with gopsutil and prometheus/procfs, so the figures compare on
// one machine at one moment. Budget: at most 10 µs per thread per file
// sampled every tick ("ns/thread-file"), and no allocation in the loop.
//
//	go test -run '^$' -bench ThreadSweep -benchmem -count 3 ./internal/procfs/
func BenchmarkThreadSweep(b *testing.B) {
	p := testnative.Start(b, "many_threads", strconv.Itoa(benchThreads))

	// ctprof as every tick runs it: idle threads carried over. "files/thread"
	// is what a sweep actually read.
	// "ctprof" leaves threads idle on their last reads out of three sweeps
	// in four (see ThreadReader.readThread); "ctprof-every-thread" reads
	// each on every sweep (as a run's last sweep does).
	sweep := func(readAll, everyThread bool) func(b *testing.B) {
		return func(b *testing.B) {
			r, err := NewFS("/proc").NewThreadReader(p.PID)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			r.readAll = readAll
			buf, err := r.Read(nil) // warm: names, buffers, the idle cache
			if err != nil {
				b.Fatal(err)
			}
			// Idle threads are left out once idle on idleSkipAfter reads.
			for range idleSkipAfter {
				if buf, err = r.Read(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			files := 0
			for _, th := range buf {
				files += 3 // stat, status, schedstat
				if r.ts != nil {
					files-- // status: a taskstats query instead (counted as no file)
				}
				if th.Sleeping() {
					files += 2 // wchan, syscall
				}
			}
			reusedBefore, skippedBefore := r.Reused(), r.Skipped()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := 0; i < b.N; i++ {
				r.Final = everyThread
				buf, err = r.Read(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				n += len(buf)
			}
			b.StopTimer()
			// A carried-over thread (always a sleeping one) read schedstat
			// and skipped the others; one left unread read none.
			full := float64(files) / float64(len(buf))
			read := float64(files)*float64(b.N) - (full-1)*float64(r.Reused()-reusedBefore) - full*float64(r.Skipped()-skippedBefore)
			perThread := float64(b.Elapsed().Nanoseconds()) / float64(n)
			b.ReportMetric(perThread, "ns/thread")
			b.ReportMetric(read/float64(n), "files/thread")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/read, "ns/thread-file")
		}
	}
	b.Run("ctprof", sweep(false, false))
	b.Run("ctprof-every-thread", sweep(false, true))
	b.Run("ctprof-every-file", sweep(true, false))

	b.Run("gopsutil-Threads", func(b *testing.B) {
		proc, err := process.NewProcess(int32(p.PID))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		n := 0
		for i := 0; i < b.N; i++ {
			ts, err := proc.Threads()
			if err != nil {
				b.Fatal(err)
			}
			n += len(ts)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/thread")
	})

	b.Run("prometheus-procfs-AllThreads-Stat-Status", func(b *testing.B) {
		fs, err := procfs.NewFS("/proc")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		n := 0
		for i := 0; i < b.N; i++ {
			threads, err := fs.AllThreads(p.PID)
			if err != nil {
				b.Fatal(err)
			}
			for _, th := range threads {
				if _, err := th.Stat(); err != nil {
					continue // exited
				}
				if _, err := th.NewStatus(); err != nil {
					continue
				}
				n++
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/thread")
	})
}

// BenchmarkConnections reads a real loopback server's connections (its TCP
// sockets and its Unix clients) through sock_diag netlink and through
// /proc/<pid>/net/{tcp,tcp6,unix}, in one run.
//
//	go test -run '^$' -bench Connections -benchmem ./internal/procfs/
func BenchmarkConnections(b *testing.B) {
	p := testnative.Start(b, "tcp_server", "1")
	for i := 0; i < 10; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p.Value("PORT")))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
	}
	for _, tc := range []struct {
		name string
		fs   FS
	}{{"netlink", NewFS("/proc")}, {"proc-net", NewFS("/proc/")}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := tc.fs.Connections(p.PID, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
