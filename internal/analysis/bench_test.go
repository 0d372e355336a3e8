package analysis

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
)

// BenchmarkHourOf4000Threads feeds one hour at 1 Hz of a 4,000-thread
// process (3,600 snapshots, a churning pool, a futex hotspot, changing
// connections) to one Aggregator, and reports the heap and the process's
// resident memory at the end, and the time per snapshot. The budget is
// 150 MB RSS.
//
//	go test -run '^$' -bench HourOf4000Threads -benchtime 1x ./internal/analysis/
func BenchmarkHourOf4000Threads(b *testing.B) {
	for i := 0; i < b.N; i++ {
		a := New()
		const n = 4000
		threads := make([]procfs.Thread, n)
		names := make([]string, n)
		for k := range names {
			names[k] = fmt.Sprintf("worker-%d", k%200)
		}
		start := time.Now()
		for sec := 0; sec < 3600; sec++ {
			for k := range threads {
				tid := 10000 + k
				if k < 100 {
					tid += 100000 * (sec % 7) // a pool whose threads come and go
				}
				threads[k] = procfs.Thread{TID: tid, StartTime: uint64(tid + sec%7), Name: names[k], State: 'S',
					Voluntary: uint64(sec * (k%9 + 1)), Involuntary: uint64(sec), RunTime: time.Duration(sec*k%1000) * time.Microsecond,
					CPUsAllowed: "0-3", Syscall: procfs.SyscallUnknown}
			}
			snap := liveSnap(sec, append([]procfs.Thread(nil), threads...))
			snap.Futexes = []procfs.FutexWait{{Address: 0x1000, Kind: procfs.FutexLock, TIDs: []int{10001, 10002, 10003}}}
			snap.Connections = &procfs.Connections{Established: 50 + sec%30, ByLocalPort: map[int]int{8080: 50 + sec%30}}
			a.Add(snap)
			if sec%600 == 0 {
				_ = a.Summary() // as a live run's scrapes would
			}
		}
		perSnap := time.Since(start) / 3600
		_ = a.Summary()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
		b.ReportMetric(float64(rssKB())/1e3, "RSS-MB")
		b.ReportMetric(float64(perSnap.Microseconds()), "µs/snapshot")
		runtime.KeepAlive(a)
	}
}

func rssKB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}
