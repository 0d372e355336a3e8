package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// findingKind returns the summary's first finding of kind.
func findingKind(s *Summary, kind string) *Finding {
	for i := range s.Findings {
		if s.Findings[i].Kind == kind {
			return &s.Findings[i]
		}
	}
	return nil
}

func jvmSnap(i int, threads []procfs.Thread) *snapshot.Snapshot {
	s := liveSnap(i, threads)
	s.Target.Kind = snapshot.KindJVM
	return s
}

// The live tests (internal/cli hung_test.go) check these findings against
// real JVMs; here the wording and the choice between them, on what the
// sampler records: the threads' states, the running threads' CPU, and
// hsperfdata's collection in progress.
func TestHungFindings(t *testing.T) {
	stopped := []procfs.Thread{thread(1, "java", 'T', 0, 0, 0), thread(2, "worker-1", 't', 0, 0, 0)}
	t.Run("stopped by a debugger", func(t *testing.T) {
		a := New()
		for i := 0; i < 3; i++ {
			s := jvmSnap(i, stopped)
			s.Stopped = &snapshot.Stopped{Tracer: 777, TracerName: "gdb"}
			a.Add(s)
		}
		f := findingKind(a.Summary(), FindingStopped)
		require.NotNil(t, f)
		assert.Equal(t, SeverityCritical, f.Severity)
		assert.Equal(t, "The process is stopped (SIGSTOP or a debugger: tracer PID 777 (gdb)); none of its threads ran for 2.0 s.", f.Summary)
		assert.Contains(t, f.Evidence[0], "(1 in state T (stopped), 1 in state t (stopped by a tracer)) in 3 samples")
	})
	t.Run("stopped, then continued", func(t *testing.T) {
		a := New()
		s := jvmSnap(0, stopped)
		s.Stopped = &snapshot.Stopped{}
		a.Add(s)
		a.Add(jvmSnap(1, []procfs.Thread{thread(1, "java", 'S', 0, 0, 0)}))
		f := findingKind(a.Summary(), FindingStopped)
		require.NotNil(t, f)
		assert.Equal(t, SeverityWarning, f.Severity)
		assert.Contains(t, f.Summary, "The process was stopped (SIGSTOP or a debugger: no tracer is attached")
	})

	running := []procfs.Thread{thread(10, "matcher-3", 'R', 0, 0, 0), thread(11, "allocator-1", 'S', 0, 0, 0), thread(12, "VM Thread", 'S', 0, 0, 0)}
	noAnswer := func(gc time.Duration, rs ...snapshot.RunningThread) *snapshot.NoAnswer {
		return &snapshot.NoAnswer{Request: "thread dump", Since: t0, For: 12 * time.Second, Waited: 5 * time.Second,
			Running: rs, JavaThreads: 2, GCRunning: gc, GCKnown: true, VMThreadWakeups: 950}
	}
	t.Run("a thread keeps the JVM from a safepoint", func(t *testing.T) {
		a := New()
		s := jvmSnap(0, running)
		s.NoAnswer = noAnswer(0, snapshot.RunningThread{TID: 10, Name: "matcher-3", CPU: 0.99, Queued: 0, Window: 5 * time.Second})
		a.Add(s)
		sum := a.Summary()
		f := findingKind(sum, FindingSafepointStall)
		require.NotNil(t, f)
		assert.Equal(t, `The JVM has not reached a safepoint for 12 s; thread "matcher-3" keeps running (99 % of a CPU; likely a loop without safepoint polls); every other Java thread waits.`, f.Summary)
		assert.Nil(t, findingKind(sum, FindingGCPause))
		assert.Equal(t, f, &sum.Findings[0], "the first finding")
	})
	t.Run("a loaded host, not a stall", func(t *testing.T) {
		// A thread runs while the request goes unanswered, but the VM
		// Thread is not polling for a safepoint: the JVM may just not have
		// had the CPU to start its attach listener.
		a := New()
		s := jvmSnap(0, running)
		s.NoAnswer = noAnswer(0, snapshot.RunningThread{TID: 10, Name: "matcher-3", CPU: 0.3, Queued: 0.7, Window: 5 * time.Second})
		s.NoAnswer.VMThreadWakeups = 12
		a.Add(s)
		assert.Nil(t, findingKind(a.Summary(), FindingSafepointStall))
	})
	t.Run("a long collection", func(t *testing.T) {
		a := New()
		s := jvmSnap(0, running)
		s.NoAnswer = noAnswer(7*time.Second, snapshot.RunningThread{TID: 12, Name: "VM Thread", CPU: 0.9, Queued: -1, Window: 5 * time.Second, Internal: true, GC: true})
		a.Add(s)
		sum := a.Summary()
		f := findingKind(sum, FindingGCPause)
		require.NotNil(t, f)
		assert.Equal(t, `A garbage collection has kept the JVM stopped for 7.0 s; every Java thread waits for it (running: "VM Thread", 90 % of a CPU).`, f.Summary)
		assert.Nil(t, findingKind(sum, FindingSafepointStall))
	})
	t.Run("the JVM answers again", func(t *testing.T) {
		a := New()
		s := jvmSnap(0, running)
		s.NoAnswer = noAnswer(0, snapshot.RunningThread{TID: 10, Name: "matcher-3", CPU: 0.5, Queued: 0.5, Window: 5 * time.Second})
		a.Add(s)
		s = jvmSnap(20, running)
		s.DumpCost = &snapshot.DumpCost{Method: "attach"}
		a.Add(s)
		f := findingKind(a.Summary(), FindingSafepointStall)
		require.NotNil(t, f)
		assert.Equal(t, SeverityWarning, f.Severity)
		assert.Contains(t, f.Summary, `The JVM did not reach a safepoint for 12 s from 10:00:00; thread "matcher-3" kept running (50 % of a CPU, and waiting for one 50 % of the time`)
	})
}
