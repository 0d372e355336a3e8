package metrics

import (
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkScrape is the cost of one /metrics scrape per target: the
// Aggregator's Summary, the Collector's formatting and the text encoding,
// for a live Aggregator of a native lock convoy (20 samples).
//
//	go test ./internal/metrics -run '^$' -bench Scrape -benchmem
func BenchmarkScrape(b *testing.B) {
	p := testnative.Start(b, "mutex_contention", "4", "3", "3000")
	agg, s := sampleN(b, p.PID, 20, 20*time.Millisecond)
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(s.Target()), agg)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ResetTimer()
	for b.Loop() {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCollectFormatting is the Collector's own share: formatting a
// ready Summary (the JVM with hostile names, 27 pools) into metrics.
//
//	go test ./internal/metrics -run '^$' -bench CollectFormatting -benchmem
func BenchmarkCollectFormatting(b *testing.B) {
	s := loadSummaryB(b, "testdata/jvm17-hostile-names.summary.json")
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfo{PID: s.Target.PID, Name: s.Target.Name, Kind: s.Target.Kind}, frozen{s})
	ch := make(chan prometheus.Metric, 1024)
	b.ResetTimer()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
}
