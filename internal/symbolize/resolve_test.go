package symbolize_test

import (
	"debug/elf"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Resolving through PROCMAP_QUERY must name every address as resolving
// from the maps text does: the start, middle and last byte of every
// mapping of a native process with data symbols (its mutex and condition
// variable, its .bss) and of a JVM (libjvm.so's data, thread stacks,
// the heap, anonymous memory).
func TestResolveByQueryMatchesTheMapsText(t *testing.T) {
	fs := procfs.NewFS("/proc")
	if _, err := fs.Target(os.Getpid()).QueryMaps(); errors.Is(err, symbolize.ErrNoMapsQuery) {
		t.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	native := testnative.Start(t, "mutex_contention", "2", "1", "3000")
	jvm := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "50")
	for _, tc := range []struct {
		name string
		pid  int
	}{{"native", native.PID}, {"JVM", jvm.PID}} {
		t.Run(tc.name, func(t *testing.T) {
			byQuery := symbolize.NewSymbolizer(fs.Target(tc.pid))
			defer byQuery.Close()
			require.NoError(t, byQuery.Prepare())
			require.True(t, byQuery.Querying(), "PROCMAP_QUERY in use")
			if tc.name == "JVM" {
				// The sampler loads libjvm.so's symbols during the dump:
				// addresses in it must then resolve as they would have.
				libs, err := fs.JVMLibraries(tc.pid)
				require.NoError(t, err)
				byQuery.Preload(libs.LibJVM)
				require.True(t, byQuery.HasModule(libs.LibJVM.Path))
			}
			fromText := symbolize.NewSymbolizer(fs.Target(tc.pid))
			fromText.QueryOff()
			require.NoError(t, fromText.Prepare())
			require.False(t, fromText.Querying())

			symbols := 0
			for _, m := range fromText.ReadMappings() {
				if m.Path == "[vsyscall]" {
					// The kernel's gate page: listed in the maps text but
					// no mapping of the process's own, read-only code no
					// futex lies in. PROCMAP_QUERY does not find it.
					continue
				}
				for _, addr := range []uint64{m.Start, m.Start + (m.End-m.Start)/2, m.End - 1} {
					want, err := fromText.Resolve(addr)
					require.NoError(t, err)
					got, err := byQuery.Resolve(addr)
					require.NoError(t, err)
					if !assert.Equal(t, want, got, "%#x in %+v", addr, m) {
						return
					}
					if got.Symbol != "" {
						symbols++
					}
				}
			}
			assert.Positive(t, symbols, "some addresses fall on data symbols")
		})
	}
}

// A target waiting on more addresses than queryBudget is served from the
// maps text from then on, with the same answers.
func TestManyAddressesTurnToTheMapsText(t *testing.T) {
	fs := procfs.NewFS("/proc")
	if _, err := fs.Target(os.Getpid()).QueryMaps(); errors.Is(err, symbolize.ErrNoMapsQuery) {
		t.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	defer symbolize.SetQueryBudget(10)()
	p := testnative.Start(t, "many_threads", "30")
	maps, err := fs.Maps(p.PID)
	require.NoError(t, err)
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	fromText := symbolize.NewSymbolizer(fs.Target(p.PID))
	fromText.QueryOff()
	n := 0
	for _, m := range maps {
		if m.Path == "[vsyscall]" {
			continue
		}
		if n == symbolize.QueryBudget() {
			assert.True(t, sym.Querying(), "queries until the budget is spent")
		}
		got, err := sym.Resolve(m.Start)
		require.NoError(t, err)
		want, err := fromText.Resolve(m.Start)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		n++
	}
	require.Greater(t, n, 2*symbolize.QueryBudget())
	assert.False(t, sym.Querying(), "the maps text serves past the budget")
	assert.True(t, sym.QueryGivenUp())
}

// BenchmarkFirstResolveLibjvm is what a one-shot of a JDK 25 JVM pays
// after the dump to name the first futex in libjvm.so (HotSpot's mutexes
// live in its data): a fresh Symbolizer, prepared as the sampler prepares
// it during the dump, resolves one address in Threads_lock's storage,
// which loads libjvm.so's symbols. The JVM is started by the benchmark.
//
//	go test -run '^$' -bench FirstResolveLibjvm -benchmem -count 3 ./internal/symbolize/
func BenchmarkFirstResolveLibjvm(b *testing.B) {
	const symbol = "_ZZ10mutex_initvE20Threads_lock_storage"
	p := testjvm.Start(b, testjvm.JDK25(b), "ManyThreads", "20")
	fs := procfs.NewFS("/proc")
	maps, err := fs.Maps(p.PID)
	if err != nil {
		b.Fatal(err)
	}
	var first symbolize.Mapping
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
	probe := symbolize.NewSymbolizer(fs.Target(p.PID))
	addr := probe.ModuleBias(first) + value + 8
	probe.Close()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := symbolize.NewSymbolizer(fs.Target(p.PID))
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

// BenchmarkResolveAddresses names one address in every anonymous mapping
// of a real 2,000-thread JVM (two mappings per thread, as the parked
// threads' futexes lie in their own memory) with a fresh Symbolizer each
// time, both ways: from the maps text (read once per Symbolizer) and by
// PROCMAP_QUERY (one or two queries per address). The per-address figures
// are what queryBudget weighs, and "maps-read" is the text's fixed cost.
//
//	go test -run '^$' -bench ResolveAddresses -count 3 ./internal/symbolize/
func BenchmarkResolveAddresses(b *testing.B) {
	p := testjvm.Start(b, testjvm.JDK17(b), "ManyThreads", "2000")
	fs := procfs.NewFS("/proc")
	if _, err := fs.Target(p.PID).QueryMaps(); errors.Is(err, symbolize.ErrNoMapsQuery) {
		b.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	maps, err := fs.Maps(p.PID)
	if err != nil {
		b.Fatal(err)
	}
	var addrs []uint64
	for _, m := range maps {
		if m.Path == "" {
			addrs = append(addrs, m.Start+8)
		}
	}
	b.Run("maps-read", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := fs.Maps(p.PID); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(maps)), "mappings")
	})
	for _, way := range []struct {
		name    string
		noQuery bool
	}{{"text", true}, {"query", false}} {
		b.Run(way.name, func(b *testing.B) {
			defer symbolize.SetQueryBudget(len(addrs) + 1)() // measure the queries, not the switch
			for i := 0; i < b.N; i++ {
				s := symbolize.NewSymbolizer(fs.Target(p.PID))
				if way.noQuery {
					s.QueryOff()
				}
				for _, a := range addrs {
					if _, err := s.Resolve(a); err != nil {
						b.Fatal(err)
					}
				}
				s.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(addrs))/1000, "µs/address")
			b.ReportMetric(float64(len(addrs)), "addresses")
		})
	}
}
