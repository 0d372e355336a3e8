package scale

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowSink takes delay for every write it gets, as ctprof does when the
// workload keeps the CPUs busy, and keeps what it got.
type slowSink struct {
	delay time.Duration
	mu    sync.Mutex
	got   strings.Builder
}

func (s *slowSink) Write(p []byte) (int, error) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(p)
}

func (s *slowSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.String()
}

// Sync returns only once what the workload wrote before it reached the
// sink: the lines of a measurement window are counted in it however late
// they are read.
func TestWorkloadOutputSync(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	sink := &slowSink{delay: 20 * time.Millisecond}
	out := readOutput(r, sink)
	defer out.Close()
	var want strings.Builder
	for k := range 8 {
		line := "throughput " + strings.Repeat("9", k+1) + " ops/s\n"
		want.WriteString(line)
		_, err := w.WriteString(line)
		require.NoError(t, err)
		time.Sleep(time.Millisecond) // separate reads, each slow
	}
	out.Sync(5 * time.Second)
	assert.Equal(t, want.String(), sink.String())

	// Nothing waiting: at once.
	start := time.Now()
	out.Sync(5 * time.Second)
	assert.Less(t, time.Since(start), time.Second)

	// The output ended: what was left is read, and Sync does not wait for
	// more.
	_, err = w.WriteString("last\n")
	require.NoError(t, err)
	w.Close()
	out.Sync(5 * time.Second)
	assert.True(t, strings.HasSuffix(sink.String(), "last\n"), sink.String())
}

// The race of a plain Read: the reader took the bytes from the pipe but
// had not counted them when Sync asked, so they were in neither figure and
// Sync returned before they reached the sink. It needs the reader
// descheduled in that gap, so it is tried many times, each with a fresh
// pipe; on a quiet machine the old reader failed in half of the runs of
// 2,000 rounds.
func TestWorkloadOutputSyncCountsWhatTheReaderHolds(t *testing.T) {
	for round := range 2000 {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		sink := &slowSink{}
		out := readOutput(r, sink)
		_, err = w.WriteString("last\n")
		require.NoError(t, err)
		if round%2 == 0 {
			w.Close() // the workload ended
		}
		out.Sync(5 * time.Second)
		got := sink.String()
		w.Close()
		out.Close()
		require.Equal(t, "last\n", got, "round %d", round)
	}
}
