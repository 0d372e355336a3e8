package sample

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// An -Xrs JVM does not catch SIGQUIT but opens its attach socket at start:
// the Sampler dumps it, without a signal, and it stays alive.
func TestSamplerDumpsXrsJVM(t *testing.T) {
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{JVMFlags: []string{"-Xrs", "-XX:+StartAttachListener"}}, "2")
	s, err := NewSampler(Options{PID: p.PID, Interval: 20 * time.Millisecond, Count: 2})
	require.NoError(t, err)
	defer s.Close()
	var dumps int
	_, err = s.Run(context.Background(), func(sn *snapshot.Snapshot) {
		assert.Empty(t, sn.Errors)
		if sn.Dump != nil {
			dumps++
			assert.NotEmpty(t, sn.Dump.Threads)
		}
	})
	require.NoError(t, err)
	assert.Positive(t, dumps, "the -Xrs JVM was dumped")
	assert.False(t, p.Exited())
	assert.NotContains(t, string(p.Log()), "Full thread dump", "no SIGQUIT reached the JVM")
}
