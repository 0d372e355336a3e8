package sample

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testnative"
)

func TestRunStopsAfterCount(t *testing.T) {
	p := testnative.Start(t, "many_threads", "5")
	s, err := NewSampler(Options{PID: p.PID, Interval: 20 * time.Millisecond, Count: 5})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, snapshot.Target{PID: p.PID, Name: "many_threads", Kind: snapshot.KindNative, CPUs: s.Target().CPUs}, s.Target())
	assert.Positive(t, s.Target().CPUs)
	var snaps []*snapshot.Snapshot
	reason, err := s.Run(context.Background(), func(sn *snapshot.Snapshot) { snaps = append(snaps, sn) })
	require.NoError(t, err)
	assert.Equal(t, StopDone, reason)
	require.Len(t, snaps, 5)
	for i, sn := range snaps {
		assert.Len(t, sn.Threads, 6)
		assert.Equal(t, 20*time.Millisecond, sn.Interval)
		assert.NotNil(t, sn.Host)
		assert.NotNil(t, sn.Connections)
		assert.Positive(t, sn.Cost)
		if i > 0 {
			assert.True(t, sn.Time.After(snaps[i-1].Time))
		}
	}
}

// The first sample is taken at once and the last one at the deadline, so a
// run of 1 s at 250 ms takes 5 samples; a loaded machine may delay a tick,
// never add one.
func TestRunStopsAtDuration(t *testing.T) {
	p := testnative.Start(t, "many_threads", "2")
	s, err := NewSampler(Options{PID: p.PID, Interval: 250 * time.Millisecond, Duration: time.Second})
	require.NoError(t, err)
	defer s.Close()
	n := 0
	start := time.Now()
	reason, err := s.Run(context.Background(), func(*snapshot.Snapshot) { n++ })
	require.NoError(t, err)
	assert.Equal(t, StopDone, reason)
	assert.GreaterOrEqual(t, n, 2)
	assert.LessOrEqual(t, n, 5)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestRunInterruptedKeepsWhatWasTaken(t *testing.T) {
	p := testnative.Start(t, "many_threads", "2")
	s, err := NewSampler(Options{PID: p.PID, Interval: 10 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	reason, err := s.Run(ctx, func(*snapshot.Snapshot) {
		n++
		if n == 3 {
			cancel() // Ctrl-C
		}
	})
	require.NoError(t, err)
	assert.Equal(t, StopInterrupted, reason)
	assert.Equal(t, 3, n)
}

func TestRunEndsWhenTheTargetExits(t *testing.T) {
	p := testnative.Start(t, "many_threads", "3", "600")
	s, err := NewSampler(Options{PID: p.PID, Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	n := 0
	reason, err := s.Run(context.Background(), func(*snapshot.Snapshot) { n++ })
	require.NoError(t, err, "a target that exits is a normal end")
	assert.Equal(t, StopTargetGone, reason)
	assert.Positive(t, n)
}

// A slow sample (the callback stands in for a slow sweep) delays the next
// tick instead of causing a burst of catch-up samples.
func TestRunDoesNotBurstAfterASlowSample(t *testing.T) {
	p := testnative.Start(t, "many_threads", "2")
	s, err := NewSampler(Options{PID: p.PID, Interval: 50 * time.Millisecond, Count: 4})
	require.NoError(t, err)
	defer s.Close()
	var times []time.Time
	_, err = s.Run(context.Background(), func(sn *snapshot.Snapshot) {
		times = append(times, sn.Time)
		if len(times) == 1 {
			time.Sleep(300 * time.Millisecond)
		}
	})
	require.NoError(t, err)
	require.Len(t, times, 4)
	for i := 2; i < len(times); i++ {
		assert.GreaterOrEqual(t, times[i].Sub(times[i-1]), 30*time.Millisecond, "no burst after the slow sample")
	}
}

func TestNewSamplerErrors(t *testing.T) {
	_, err := NewSampler(Options{PID: 1 << 22})
	assert.True(t, errors.Is(err, procfs.ErrProcessGone), "%v", err)
	assert.Contains(t, err.Error(), "no process with pid")
}

// A run's last sample reads every thread, idle ones included, so that the
// totals are exact although a big process's idle threads are read one
// tick in four before it (procfs.ThreadReader.Final): for --count and for
// --duration.
func TestRunReadsEveryThreadOnItsLastSample(t *testing.T) {
	p := testnative.Start(t, "idle_pool", "1200")
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"count", Options{Count: 10}},
		{"duration", Options{Duration: 1900 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.PID, o.Interval = p.PID, 200*time.Millisecond
			s, err := NewSampler(o)
			require.NoError(t, err)
			defer s.Close()
			var skipped []int
			last := 0
			_, err = s.Run(context.Background(), func(*snapshot.Snapshot) {
				skipped = append(skipped, s.threads.Skipped()-last)
				last = s.threads.Skipped()
			})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(skipped), 8, "samples")
			assert.Greater(t, slices.Max(skipped[:len(skipped)-1]), 600, "idle threads were left unread before the last sample: %v", skipped)
			assert.Zero(t, skipped[len(skipped)-1], "the last sample read every thread: %v", skipped)
		})
	}
}
