package jfr_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/jfr"
)

// fixturePath is a small recording of our own JfrLocks workload on JDK 17,
// written by `go test -run TestFixture -update ./pkg/jfr`. It seeds the fuzz
// target and the damage tests, which must not need a JVM.
var fixturePath = filepath.Join("testdata", "locks-jdk17.jfr")

const maxFixtureSize = 200 << 10

func fixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(fixturePath)
	require.NoError(t, err, "run `go test -run TestFixture -update ./pkg/jfr` to record it")
	return b
}

func TestFixture(t *testing.T) {
	if *update {
		f := recording(t, testjvm.JDK17(t), 1, 500*time.Millisecond, false)[0]
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Less(t, len(b), maxFixtureSize, "fixture too large to commit")
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(fixturePath, b, 0o644))
	}
	data := fixture(t)
	require.Less(t, len(data), maxFixtureSize)
	evs, chunks := readAll(t, data, nil)
	require.Len(t, chunks, 1)
	counts := countTypes(evs)
	for _, typ := range lockTypes {
		require.Positive(t, counts[typ], typ)
	}
}

// drain reads r to the end or the first error, never more than limit events.
func drain(r *jfr.Reader, limit int) (int, error) {
	n := 0
	for ; n < limit; n++ {
		ev, err := r.Next()
		if err != nil {
			return n, err
		}
		// Exercise the lazy resolution too.
		for _, name := range ev.Fields() {
			ev.Value(name)
			ev.String(name)
			ev.DurationField(name)
			ev.Time(name)
		}
		ev.MonitorEnter()
		ev.MonitorWait()
		ev.ThreadPark()
	}
	return n, nil
}

func TestDamagedInput(t *testing.T) {
	data := fixture(t)
	full, err := drain(jfr.NewReader(bytes.NewReader(data), jfr.Options{}), 1<<30)
	require.ErrorIs(t, err, io.EOF)
	require.Positive(t, full)

	t.Run("not jfr", func(t *testing.T) {
		for _, in := range []string{"", "hello", "FLR", "Full thread dump OpenJDK"} {
			_, err := jfr.NewReader(bytes.NewReader([]byte(in)), jfr.Options{}).Next()
			require.ErrorIs(t, err, jfr.ErrNotJFR, "%q", in)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		for cut := 1; cut < len(data); cut += 1009 {
			n, err := drain(jfr.NewReader(bytes.NewReader(data[:cut]), jfr.Options{}), 1<<30)
			require.Error(t, err)
			require.NotErrorIs(t, err, io.EOF, "cut at %d", cut)
			require.LessOrEqual(t, n, full)
			var fe *jfr.FormatError
			if !errors.Is(err, jfr.ErrNotJFR) {
				require.ErrorAs(t, err, &fe, "cut at %d: %v", cut, err)
				require.LessOrEqual(t, fe.Offset, int64(cut))
			}
		}
	})
	t.Run("trailing garbage keeps what came before", func(t *testing.T) {
		in := append(append(append([]byte{}, data...), data...), "garbage after the chunks"...)
		r := jfr.NewReader(bytes.NewReader(in), jfr.Options{})
		n, err := drain(r, 1<<30)
		require.Equal(t, 2*full, n)
		var fe *jfr.FormatError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, int64(2*len(data)), fe.Offset)
		require.Contains(t, err.Error(), "offset")
	})
	t.Run("chunk over the limit", func(t *testing.T) {
		_, err := jfr.NewReader(bytes.NewReader(data), jfr.Options{MaxChunkSize: int64(len(data) - 1)}).Next()
		require.ErrorContains(t, err, "exceeds")
	})
	t.Run("flipped bytes", func(t *testing.T) {
		for pos := 0; pos < len(data); pos += 211 {
			in := append([]byte{}, data...)
			in[pos] ^= 0xa5
			// Anything but a panic or a hang is acceptable.
			_, _ = drain(jfr.NewReader(bytes.NewReader(in), jfr.Options{}), 1<<30)
		}
	})
}

func FuzzReader(f *testing.F) {
	data := fixture(f)
	f.Add(data)
	f.Add(data[:headerSizeForTests])
	f.Add(data[:len(data)/2])
	f.Add([]byte("FLR\x00\x00\x02\x00\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := jfr.NewReader(bytes.NewReader(in), jfr.Options{MaxChunkSize: 4 << 20})
		_, _ = drain(r, 1<<20)
	})
}

const headerSizeForTests = 68

var (
	benchOnce sync.Once
	benchData []byte
)

// BenchmarkReadLockEvents reads a recording of the JfrLocks workload
// (JDK 17, lock events at threshold 0, about 3 s) selecting the three lock
// event types, as ctprof analyze does. "cold" parses the metadata event in
// every pass, as for the first recording of a JVM; "warm" finds it in the
// process-wide cache, as when re-reading chunks of the same JVM.
func BenchmarkReadLockEvents(b *testing.B) {
	benchOnce.Do(func() {
		f := recording(b, testjvm.JDK17(b), 1, 3*time.Second, false)[0]
		var err error
		benchData, err = os.ReadFile(f)
		require.NoError(b, err)
	})
	require.NotEmpty(b, benchData, "recording failed in an earlier run")
	for _, warm := range []bool{false, true} {
		name := map[bool]string{false: "cold", true: "warm"}[warm]
		b.Run(name, func(b *testing.B) {
			jfr.SetMetadataCache(warm)
			defer jfr.SetMetadataCache(true)
			benchRead(b, benchData)
		})
	}
}

// BenchmarkReadLockEventsLong is the cold case on a 20 s recording: a
// file a user carries is larger than the 3 s one above, and the metadata
// event (about 96 KB a chunk) is a smaller share of it.
func BenchmarkReadLockEventsLong(b *testing.B) {
	longOnce.Do(func() {
		f := recording(b, testjvm.JDK17(b), 1, 20*time.Second, false)[0]
		var err error
		longData, err = os.ReadFile(f)
		require.NoError(b, err)
	})
	require.NotEmpty(b, longData, "recording failed in an earlier run")
	jfr.SetMetadataCache(false)
	defer jfr.SetMetadataCache(true)
	benchRead(b, longData)
}

var (
	longOnce sync.Once
	longData []byte
)

func benchRead(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	// The shared test machine is often loaded far beyond its two cores, so
	// wall-clock MB/s understates the reader; CPU time is reported too.
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := jfr.NewReader(bytes.NewReader(data), jfr.Options{EventTypes: lockTypes})
		n := 0
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if ev.Thread != nil && ev.Stack != nil {
				n++
			}
		}
		if n == 0 {
			b.Fatal("no lock events")
		}
	}
	b.StopTimer()
	if used := (cpuTime() - cpu0).Seconds(); used > 0 {
		b.ReportMetric(float64(len(data))*float64(b.N)/1e6/used, "MB/cpu-s")
	}
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
