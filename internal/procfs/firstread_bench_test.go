package procfs

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testjvm"
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

// libjvms are the libjvm.so of the JDKs the tests use.
func libjvms(b *testing.B) map[string]string {
	return map[string]string{
		"jdk17": filepath.Join(testjvm.JDK17(b).Home, "lib", "server", "libjvm.so"),
		"jdk25": filepath.Join(testjvm.JDK25(b).Home, "lib", "server", "libjvm.so"),
	}
}

// BenchmarkLoadSymbols loads the data symbols of OpenJDK 17's and Temurin
// 25's libjvm.so as the symbolizer does ("lazy": the symbol table through
// a small buffer, no names), and, in the same run, the way it did before
// ("eager": both sections read whole, every name a string) and debug/elf's
// Symbols and DynamicSymbols.
//
//	go test -run '^$' -bench LoadSymbols -benchmem -count 3 ./internal/procfs/
func BenchmarkLoadSymbols(b *testing.B) {
	for _, jdk := range []string{"jdk17", "jdk25"} {
		file, err := os.Open(libjvms(b)[jdk])
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		f, err := elf.NewFile(file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(jdk+"/lazy", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				loadSymbols(file, f, false)
			}
		})
		b.Run(jdk+"/eager", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				loadSymbolsEager(f)
			}
		})
		b.Run(jdk+"/debug-elf-all", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				syms, _ := f.Symbols()
				dyn, _ := f.DynamicSymbols()
				_ = append(syms, dyn...)
			}
		})
	}
}

// BenchmarkFirstResolveLibjvm is what a one-shot of a JDK 25 JVM pays
// after the dump to name the first futex in libjvm.so (HotSpot's mutexes
// live in its data): a fresh Symbolizer, prepared as the sampler prepares
// it during the dump, resolves one address in Threads_lock's storage,
// which loads libjvm.so's symbols. The JVM is started by the benchmark.
//
//	go test -run '^$' -bench FirstResolveLibjvm -benchmem -count 3 ./internal/procfs/
func BenchmarkFirstResolveLibjvm(b *testing.B) {
	const symbol = "_ZZ10mutex_initvE20Threads_lock_storage"
	p := testjvm.Start(b, testjvm.JDK25(b), "ManyThreads", "20")
	fs := NewFS("/proc")
	maps, err := fs.Maps(p.PID)
	if err != nil {
		b.Fatal(err)
	}
	var first Mapping
	for _, m := range maps {
		if strings.HasSuffix(m.Path, "/libjvm.so") {
			first = m
			break
		}
	}
	if first.Path == "" {
		b.Fatal("no libjvm.so mapped")
	}
	file, err := os.Open(first.Path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := elf.NewFile(file)
	if err != nil {
		b.Fatal(err)
	}
	syms, err := f.Symbols()
	file.Close()
	if err != nil {
		b.Fatal(err)
	}
	var value uint64
	for _, s := range syms {
		if s.Name == symbol {
			value = s.Value
		}
	}
	if value == 0 {
		b.Fatalf("no %s in %s", symbol, first.Path)
	}
	probe := fs.NewSymbolizer(p.PID)
	addr := probe.module(first.Path, first).bias + value + 8
	probe.Close()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := fs.NewSymbolizer(p.PID)
		if err := s.Prepare(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		l, err := s.Resolve(addr)
		b.StopTimer()
		if err != nil || l.Symbol != symbol || l.SymbolOffset != 8 {
			b.Fatalf("%#x: %v %v", addr, l, err)
		}
		s.Close()
		b.StartTimer()
	}
}
