package sample

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// A Sampler with a recording puts the JVM's own wait measurements on
// Snapshot.Waits: monitor enters with their previous owner, the
// Object.wait with its notifier, parks on the ReentrantLock; their OS
// thread ids are the /proc threads of the same snapshots. The recording
// is gone when Run returns.
func TestSamplerJFRWaitsOnSnapshots(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "JfrLocks")
	s, err := NewSampler(Options{PID: p.PID, Interval: 200 * time.Millisecond, Duration: 4 * time.Second, JVM: JVMOptions{
		NoDumps: true,
		JFR:     JFRLiveOptions{Enabled: true, Threshold: time.Millisecond, ReadEvery: time.Second},
	}})
	require.NoError(t, err)
	defer s.Close()
	var waits []snapshot.WaitEvent
	tids := map[int64]bool{}
	name := ""
	var reads, paused int
	reason, err := s.Run(context.Background(), func(snap *snapshot.Snapshot) {
		if name == "" {
			name = s.JFRRecording()
		}
		assert.Empty(t, snap.Errors)
		waits = append(waits, snap.Waits...)
		if snap.Waits != nil {
			reads++
			if snap.JFRPause > 0 {
				paused++
			}
		}
		for _, th := range snap.Threads {
			tids[int64(th.TID)] = true
		}
	})
	require.NoError(t, err)
	assert.Equal(t, StopDone, reason)
	assert.Empty(t, s.JFRRecording(), "stopped with the run")
	require.NotEmpty(t, name)
	check := string(p.Jcmd(t, "JFR.check"))
	assert.NotContains(t, check, name)

	byKind := map[string]int{}
	joined := 0
	for _, w := range waits {
		byKind[w.Kind]++
		assert.GreaterOrEqual(t, w.Duration, time.Millisecond)
		if tids[w.OSThreadID] {
			joined++
		}
		switch w.Kind {
		case "monitor":
			assert.Equal(t, "JfrLocks$Monitor", w.Class)
			assert.True(t, strings.HasPrefix(w.Thread, "monitor-"), w.Thread)
			assert.True(t, strings.HasPrefix(w.Other, "monitor-"), "previous owner %q", w.Other)
			require.NotEmpty(t, w.Stack)
			assert.Equal(t, "enterMonitor", w.Stack[0].Method)
		case "wait":
			assert.Equal(t, "JfrLocks$Signal", w.Class)
			assert.Equal(t, "waiter", w.Thread)
			assert.Equal(t, "notifier", w.Other)
		case "synchronizer":
			assert.Equal(t, "java.util.concurrent.locks.ReentrantLock$NonfairSync", w.Class)
		}
	}
	assert.Positive(t, byKind["monitor"], "%v", byKind)
	assert.Positive(t, byKind["wait"], "%v", byKind)
	assert.Positive(t, byKind["synchronizer"], "%v", byKind)
	assert.Equal(t, len(waits), joined, "every waiter is a /proc thread of the run")
	// Each read is a JFR.dump, which closes a chunk at a safepoint: the
	// pause is measured and counted as ctprof's (no dumps in this run).
	require.Positive(t, reads)
	assert.Equal(t, reads, paused, "every read's pause is known")
}

// The JVM records an event once for all its recordings, at the lowest
// threshold any asked for. A user's own recording of every monitor enter
// must not put waits under ctprof's threshold in ctprof's figures: they
// are left out, and the run says so once.
func TestSamplerJFRLeavesOutAnotherRecordingsShortWaits(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "JfrLocks")
	out := string(p.Jcmd(t, "JFR.start", "name=users-own", "settings=none",
		"+jdk.JavaMonitorEnter#enabled=true", "+jdk.JavaMonitorEnter#threshold=0ms",
		"+jdk.JavaMonitorWait#enabled=true", "+jdk.JavaMonitorWait#threshold=0ms"))
	require.Contains(t, out, "Started recording", out)
	defer p.Jcmd(t, "JFR.stop", "name=users-own")

	// JfrLocks' waits last a few milliseconds: at 50 ms, ctprof's own
	// settings would record hardly any.
	const threshold = 50 * time.Millisecond
	s, err := NewSampler(Options{PID: p.PID, Interval: 200 * time.Millisecond, Duration: 3 * time.Second, JVM: JVMOptions{
		NoDumps: true,
		JFR:     JFRLiveOptions{Enabled: true, Threshold: threshold, ReadEvery: time.Second},
	}})
	require.NoError(t, err)
	defer s.Close()
	notes := 0
	_, err = s.Run(context.Background(), func(snap *snapshot.Snapshot) {
		for _, w := range snap.Waits {
			assert.GreaterOrEqual(t, w.Duration+time.Microsecond, threshold, "%s of %s", w.Event, w.Thread)
		}
		for _, e := range snap.Errors {
			if strings.Contains(e, "another recording of the JVM records waits under ctprof's threshold (50ms)") {
				notes++
			}
		}
	})
	require.NoError(t, err)
	assert.Equal(t, 1, notes, "said once")
	assert.Contains(t, string(p.Jcmd(t, "JFR.check")), "users-own", "the user's recording is left running")
}
