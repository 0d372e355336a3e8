package threaddump_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// deepThreadsDump is a Thread.print of a real JVM with 2,000 threads some
// 30 frames deep (ManyThreads 2000 21): about 3.3 MB, the dump
// `ctprof attach --count 1` waits for in issue 16. Taken once per binary.
var deepThreadsDump = struct {
	once sync.Once
	b    []byte
}{}

func deepDump(t testing.TB) []byte {
	deepThreadsDump.once.Do(func() {
		p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "2000", "21")
		deepThreadsDump.b = p.WaitForDump(t, 2*dumpTimeout, func(d []byte) bool {
			return testjvm.CountLines(d, "\"conn-") >= 2000 && testjvm.CountLines(d, "\tat ManyThreads.descend(") >= 2000*21
		})
		p.Stop()
	})
	require.NotEmpty(t, deepThreadsDump.b, "the 2,000-thread dump could not be taken")
	return deepThreadsDump.b
}

// BenchmarkParse2000DeepThreads is the one-shot parse of issue 16, without
// the copy ParseBytes makes. Run with -cpu 1,2: from 2 cores the text is
// parsed in pieces (parallel.go).
func BenchmarkParse2000DeepThreads(b *testing.B) {
	in := deepDump(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := threaddump.ParseOwnedBytes(in); err != nil {
			b.Fatal(err)
		}
	}
}
