package sample

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// A JVM that cannot reach a safepoint: the first tick's dump is abandoned
// at --dump-timeout, the next ticks send nothing (the JVM has not ended a
// safepoint since) and still say the JVM does not answer, with the thread
// that runs; --duration holds.
func TestSamplerOnAStalledJVM(t *testing.T) {
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SafepointStall", testjvm.Options{JVMFlags: []string{"-XX:+StartAttachListener"}}, "60")
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("STALL begin")) })
	p.WaitForSafepointStall(t, time.Second, 60*time.Second)
	s, err := NewSampler(Options{PID: p.PID, Interval: 500 * time.Millisecond, Duration: 3 * time.Second, JVM: JVMOptions{DumpTimeout: time.Second}})
	require.NoError(t, err)
	defer s.Close()
	start := time.Now()
	var snaps []*snapshot.Snapshot
	_, err = s.Run(context.Background(), func(sn *snapshot.Snapshot) { snaps = append(snaps, sn) })
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "--duration 3s holds")
	require.GreaterOrEqual(t, len(snaps), 2)
	if bytes.Contains(p.Log(), []byte("STALL end")) {
		t.Skip("the loop ended during the run (its length is calibrated on a loaded machine)")
	}
	for i, sn := range snaps {
		assert.Nil(t, sn.DumpCost, "tick %d: no dump came back", i)
		require.NotNil(t, sn.NoAnswer, "tick %d", i)
		assert.Equal(t, snaps[0].NoAnswer.Since, sn.NoAnswer.Since, "one unanswered request, from the first tick")
		names := []string{}
		for _, r := range sn.NoAnswer.Running {
			names = append(names, r.Name)
		}
		assert.Contains(t, names, "matcher-3", "tick %d", i)
	}
	assert.GreaterOrEqual(t, snaps[0].NoAnswer.Waited, time.Second)
	assert.Less(t, snaps[0].NoAnswer.Waited, 2*time.Second)
	assert.Contains(t, snaps[0].Errors[0], "did not answer in time")
	for _, sn := range snaps[1:] {
		assert.Empty(t, sn.Errors, "no other request was sent")
	}
}
