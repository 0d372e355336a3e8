package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/outfile"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/testcorpus"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExport50Targets is the OTLP export's cost for 50 targets every
// 15 s: each op is one target's export (its pprof profile built from the
// Aggregator, the delta, the conversion, the encoding and the HTTP
// request to a local endpoint), on the Aggregator of a production JVM's
// dumps (../shared/dumps, jdk21-cardano-rosetta-production.txt). The
// budget is 1 % of one CPU: 50 exports per 15 s within 150 ms of CPU.
//
//	go test -run '^$' -bench Export50Targets -benchtime 200x -count 3 ./internal/otlp/
func BenchmarkExport50Targets(b *testing.B) {
	src, err := source.Open(filepath.Join(testcorpus.Dir(b), "jdk21-cardano-rosetta-production.txt"), nil)
	if err != nil {
		b.Fatal(err)
	}
	agg := analysis.New()
	if _, err := agg.Drain(context.Background(), src, nil); err != nil && err != io.EOF {
		b.Fatal(err)
	}
	src.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	e := New(Config{URL: srv.URL, Timeout: 10 * time.Second, Interval: time.Second}, nil)
	s := e.Stream(Resource{PID: 1, Executable: "java", Runtime: "jvm"}, "bench", func() (*profile.Profile, error) { return outfile.Pprof(agg) })
	b.ResetTimer()
	start := cpuTime()
	for i := 0; i < b.N; i++ {
		s.prev = nil // every export carries the whole profile: the worst case
		s.export(time.Now())
	}
	lost, _ := e.Close(context.Background())
	cpu := cpuTime() - start
	if lost > 0 {
		b.Fatalf("%d profiles not delivered", lost)
	}
	perExport := cpu / time.Duration(b.N)
	b.ReportMetric(float64(perExport.Microseconds()), "cpu-µs/export")
	b.ReportMetric(100*50*perExport.Seconds()/15, "%cpu-50-targets-15s")
}
