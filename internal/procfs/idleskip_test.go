package procfs

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// In a process of idleSkipThreads threads or more, a thread idle on its
// last reads is read one sweep in idleStride. What the sweeps report must
// stay true: carried-over values equal what a fresh reader sees, a thread
// that runs shows its new counters within idleStride sweeps (at once in a
// Final sweep), a thread that exits leaves the result at once, and a
// process below the threshold has every thread read on every sweep.
func TestIdleThreadsReadLessOftenStayExact(t *testing.T) {
	const sleepers = idleSkipThreads + 200
	p := testnative.Start(t, "idle_pool", strconv.Itoa(sleepers))
	waker, err := strconv.Atoi(p.Value("WAKER"))
	require.NoError(t, err)
	leaver, err := strconv.Atoi(p.Value("LEAVER"))
	require.NoError(t, err)

	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	find := func(threads []Thread, tid int) (Thread, bool) {
		for _, th := range threads {
			if th.TID == tid {
				return th, true
			}
		}
		return Thread{}, false
	}

	// Idle threads are left out once idle on idleSkipAfter reads: then
	// each sweep leaves out about (idleStride-1)/idleStride of them.
	var threads []Thread
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		before := r.Skipped()
		threads, err = r.Read(threads[:0])
		if err != nil {
			return err
		}
		if n := r.Skipped() - before; n < sleepers/2 {
			return fmt.Errorf("%d of %d idle threads left out", n, sleepers)
		}
		return nil
	}))
	assert.Len(t, threads, sleepers+3, "every thread is in the result, read or not")

	// What was carried over equals what a fresh reader sees, for every
	// thread that did not run between the two.
	fresh := readThreads(t, p.PID)
	byTID := map[int]Thread{}
	for _, th := range fresh {
		byTID[th.TID] = th
	}
	same := 0
	for _, c := range threads {
		f, ok := byTID[c.TID]
		if !ok || f.Timeslices != c.Timeslices || f.RunTime != c.RunTime {
			continue
		}
		same++
		assert.Equal(t, f, c, "tid %d", c.TID)
	}
	assert.Greater(t, same, sleepers*9/10)

	// settled is the waker as a fresh reader sees it once it sleeps again
	// in read(2) (after printing WOKE it still runs for a moment): two
	// fresh reads in a row agree.
	settled := func() Thread {
		t.Helper()
		var last Thread
		require.NoError(t, testnative.PollUntil(10*time.Second, func() error {
			now, ok := find(readThreads(t, p.PID), waker)
			if !ok {
				return fmt.Errorf("no waker")
			}
			same := now.Sleeping() && now.Timeslices == last.Timeslices && now.Voluntary == last.Voluntary
			last = now
			if !same {
				return fmt.Errorf("the waker still runs")
			}
			return nil
		}))
		return last
	}

	// The waker runs (20 sleeps of 1 ms): its new counters show within
	// idleStride sweeps, and the sweep that shows them reads it in full.
	before, ok := find(threads, waker)
	require.True(t, ok)
	require.NoError(t, syscall.Kill(p.PID, syscall.SIGUSR1))
	p.WaitOutput(t, 30*time.Second, "WOKE 1")
	kernel := settled()
	require.GreaterOrEqual(t, kernel.Voluntary, before.Voluntary+20)
	sweeps := 0
	for {
		threads, err = r.Read(threads[:0])
		require.NoError(t, err)
		sweeps++
		got, ok := find(threads, waker)
		require.True(t, ok)
		if got.Voluntary != before.Voluntary {
			assert.Equal(t, kernel.Voluntary, got.Voluntary)
			assert.Equal(t, kernel.RunTime, got.RunTime)
			break
		}
		require.Less(t, sweeps, idleStride, "the waker's run did not show within %d sweeps", idleStride)
	}

	// Again, with a Final sweep: it shows at once. The waker is idle
	// again first (left out of sweeps), so the Final sweep is what reads it.
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		b := r.Skipped()
		threads, err = r.Read(threads[:0])
		if err != nil {
			return err
		}
		if r.Skipped() == b {
			return fmt.Errorf("no thread left out")
		}
		return nil
	}))
	before, _ = find(threads, waker)
	require.NoError(t, syscall.Kill(p.PID, syscall.SIGUSR1))
	p.WaitOutput(t, 30*time.Second, "WOKE 2")
	kernel = settled()
	r.Final = true
	skipped := r.Skipped()
	threads, err = r.Read(threads[:0])
	require.NoError(t, err)
	assert.Equal(t, skipped, r.Skipped(), "a Final sweep reads every thread")
	assert.False(t, r.Final, "Read turns Final off")
	got, _ := find(threads, waker)
	assert.Equal(t, kernel.Voluntary, got.Voluntary)
	assert.Greater(t, got.Voluntary, before.Voluntary)

	// The leaver exits: the thread count moves, so the next sweep reads
	// every thread and leaves it out.
	_, ok = find(threads, leaver)
	require.True(t, ok)
	require.NoError(t, syscall.Kill(p.PID, syscall.SIGUSR2))
	p.WaitOutput(t, 30*time.Second, "LEFT 1")
	require.NoError(t, testnative.PollUntil(10*time.Second, func() error {
		if _, err := NewFS("/proc").readFile(fmt.Sprintf("/proc/%d/task/%d/stat", p.PID, leaver)); err == nil {
			return fmt.Errorf("the leaver is not reaped yet")
		}
		return nil
	}))
	threads, err = r.Read(threads[:0])
	require.NoError(t, err)
	_, ok = find(threads, leaver)
	assert.False(t, ok, "an exited thread is not reported")
	assert.Len(t, threads, sleepers+2)
}

// Below idleSkipThreads threads every thread is read on every sweep.
func TestSmallProcessesHaveEveryThreadRead(t *testing.T) {
	p := testnative.Start(t, "idle_pool", "50")
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	for range 3 * idleStride {
		_, err := r.Read(nil)
		require.NoError(t, err)
	}
	assert.Greater(t, r.Reused(), 0, "idle threads are carried over")
	assert.Zero(t, r.Skipped(), "but none is left unread")
}
