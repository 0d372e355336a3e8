package procfs

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testnative"
)

// cpuTime is this process's user + system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkThreadFiles measures what reading one file of each thread for
// the first time costs (open, read, close), file by file, on a real
// 4,000-thread process, and a taskstats query, which a full read asks
// instead of status where the kernel answers (root).
//
//	go test -run '^$' -bench ThreadFiles -count 3 ./internal/procfs/
func BenchmarkThreadFiles(b *testing.B) {
	p := testnative.Start(b, "many_threads", strconv.Itoa(benchThreads))
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	tids, err := r.listTIDs()
	if err != nil {
		b.Fatal(err)
	}
	tids = append([]int(nil), tids...)
	buf := make([]byte, 4096)
	for _, name := range threadFileNames {
		b.Run(name, func(b *testing.B) {
			var openT, readT time.Duration
			for i := 0; i < b.N; i++ {
				for _, tid := range tids {
					path := []byte(strconv.Itoa(tid) + "/" + name + "\x00")
					t0 := time.Now()
					fd, err := openat(r.taskFD, path)
					t1 := time.Now()
					if err != nil {
						continue
					}
					preadRaw(fd, buf)
					t2 := time.Now()
					syscall.Close(fd)
					openT, readT = openT+t1.Sub(t0), readT+t2.Sub(t1)
				}
			}
			n := float64(b.N * len(tids))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/thread")
			b.ReportMetric(float64(openT.Nanoseconds())/n, "open-ns/thread")
			b.ReportMetric(float64(readT.Nanoseconds())/n, "read-ns/thread")
		})
	}
	b.Run("taskstats", func(b *testing.B) {
		ts, err := openTaskStats()
		if err != nil {
			b.Skipf("taskstats does not answer: %v", err)
		}
		defer ts.Close()
		for i := 0; i < b.N; i++ {
			for _, tid := range tids {
				ts.switches(tid)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tids)), "ns/thread")
	})
}

// BenchmarkFirstSweep is a live run's first sweep (every thread read in
// full, system calls left to the dump as a JVM target's are) of a real
// 4,000-thread process, a new reader each time, with the context switches
// from taskstats (root) and from status. "cpu-ns/thread" is the process's
// CPU over the sweeps.
//
//	go test -run '^$' -bench FirstSweep -count 3 ./internal/procfs/
func BenchmarkFirstSweep(b *testing.B) {
	p := testnative.Start(b, "many_threads", strconv.Itoa(benchThreads))
	for _, name := range []string{"taskstats", "status"} {
		b.Run(name, func(b *testing.B) {
			var buf []Thread
			var cpu time.Duration
			n := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r, err := NewFS("/proc").NewThreadReader(p.PID)
				if err != nil {
					b.Fatal(err)
				}
				if name == "status" && r.ts != nil {
					r.ts.Close()
					r.ts = nil
				}
				if name == "taskstats" && r.ts == nil {
					r.Close()
					b.Skip("taskstats does not answer this process")
				}
				r.DeferWaits = true
				b.StartTimer()
				c0 := cpuTime()
				if buf, err = r.Read(buf[:0]); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				n += len(buf)
				b.StopTimer()
				r.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/thread")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/thread")
		})
	}
}
