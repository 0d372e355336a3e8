package procfs

import (
	"testing"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// BenchmarkResolveAddresses names one address in every anonymous mapping
// of a real 2,000-thread JVM (two mappings per thread, as the parked
// threads' futexes lie in their own memory) with a fresh Symbolizer each
// time, both ways: from the maps text (read once per Symbolizer) and by
// PROCMAP_QUERY (one or two queries per address). The per-address figures
// are what queryBudget weighs, and "maps-read" is the text's fixed cost.
//
//	go test -run '^$' -bench ResolveAddresses -count 3 ./internal/procfs/
func BenchmarkResolveAddresses(b *testing.B) {
	p := testjvm.Start(b, testjvm.JDK17(b), "ManyThreads", "2000")
	fs := NewFS("/proc")
	if err := fs.eachMappedFile(p.PID, func(Mapping) bool { return false }); err == errNoProcmapQuery {
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
			defer func(q int) { queryBudget = q }(queryBudget)
			queryBudget = len(addrs) + 1 // measure the queries, not the switch
			for i := 0; i < b.N; i++ {
				s := fs.NewSymbolizer(p.PID)
				s.noQuery = way.noQuery
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
