package threaddump_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// BenchmarkStream4000Threads is BenchmarkParse4000Threads through the
// streaming Reader (what `ctprof analyze` runs): 20 copies of the dump in
// one input, so the splitter's per-line cost shows. Budget: 200 MB/s, -cpu 1.
func BenchmarkStream4000Threads(b *testing.B) {
	one := bigDump(b)
	in := bytes.Repeat(one, 20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := threaddump.NewReader(bytes.NewReader(in))
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 20 {
			b.Fatalf("%d dumps, want 20", n)
		}
	}
}
