package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// hungRun is a JVM run that met both kinds of hang: stopped (a debugger
// holding it) for two ticks, then a request left unanswered while one
// thread kept running; its first dump was the early one.
func hungRun() []*snapshot.Snapshot {
	t0 := time.Unix(1_800_000_000, 0)
	target := snapshot.Target{PID: 4242, Name: "Matcher", Kind: snapshot.KindJVM, CPUs: 2}
	var run []*snapshot.Snapshot
	for i := 0; i < 5; i++ {
		s := &snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Target: target, Source: "live", Interval: time.Second,
			Host: &snapshot.Host{CPUs: 2}}
		switch {
		case i < 2:
			s.Threads = []procfs.Thread{{TID: 1, Name: "java", State: 't', Syscall: procfs.SyscallNone}, {TID: 2, Name: "matcher-3", State: 'T', Syscall: procfs.SyscallNone}}
			s.Stopped = &snapshot.Stopped{Tracer: 777, TracerName: "gdb"}
		default:
			s.Threads = []procfs.Thread{{TID: 1, Name: "java", State: 'S', Syscall: 202}, {TID: 2, Name: "matcher-3", State: 'R', Syscall: procfs.SyscallRunning},
				{TID: 3, Name: "VM Thread", State: 'S', Syscall: 202}}
			s.NoAnswer = &snapshot.NoAnswer{Request: "thread dump", Since: t0.Add(2 * time.Second), For: time.Duration(i-1) * time.Second, Waited: time.Second,
				Running:     []snapshot.RunningThread{{TID: 2, Name: "matcher-3", CPU: 0.98, Queued: 0.01, Window: time.Second}},
				JavaThreads: 2, GCKnown: true, VMThreadWakeups: 960}
		}
		if i == 0 {
			s.DumpCost = &snapshot.DumpCost{Method: "attach", Wall: 30 * time.Millisecond, Pause: 2 * time.Millisecond, Early: true}
		}
		run = append(run, s)
	}
	return run
}

// Version 7 keeps what a tick said of a target that did not answer, so
// `report` repeats the live run's process-stopped and safepoint-stall
// findings; a version 6 file replays without them.
func TestHungTicksRoundTripAndVersion6(t *testing.T) {
	run := hungRun()
	live := analysis.New()
	for _, s := range run {
		live.Add(s)
	}
	want := live.Summary()
	for _, version := range []byte{6, FormatVersion} {
		got, r := recordAtVersion(t, version, run...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, len(run))
		replay := analysis.New()
		for _, s := range got {
			replay.Add(s)
		}
		kinds := map[string]string{}
		for _, f := range replay.Summary().Findings {
			kinds[f.Kind] = f.Summary
		}
		if version < 7 {
			assert.Nil(t, got[0].Stopped)
			assert.Nil(t, got[4].NoAnswer)
			assert.False(t, got[0].DumpCost.Early)
			assert.NotContains(t, kinds, analysis.FindingStopped)
			continue
		}
		for i := range run {
			assert.Equal(t, run[i].Stopped, got[i].Stopped, "tick %d", i)
			if run[i].NoAnswer != nil && assert.NotNil(t, got[i].NoAnswer, "tick %d", i) {
				assert.True(t, run[i].NoAnswer.Since.Equal(got[i].NoAnswer.Since))
				g := *got[i].NoAnswer
				g.Since = run[i].NoAnswer.Since
				assert.Equal(t, *run[i].NoAnswer, g, "tick %d", i)
			} else {
				assert.Nil(t, got[i].NoAnswer, "tick %d", i)
			}
		}
		assert.True(t, got[0].DumpCost.Early)
		for _, f := range want.Findings {
			if f.Kind == analysis.FindingStopped || f.Kind == analysis.FindingSafepointStall {
				assert.Equal(t, f.Summary, kinds[f.Kind], "the replay's %s finding", f.Kind)
			}
		}
		assert.Contains(t, kinds, analysis.FindingStopped)
		assert.Contains(t, kinds, analysis.FindingSafepointStall)
	}
}
