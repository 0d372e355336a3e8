package sample_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// sampleSummary samples pid with a dump at every tick the pause budget
// allows (a generous one: the point is many dumps) and aggregates. raw is
// the same run with every futex wait the /proc sweep grouped, before the
// Sampler's JVM rules: what ctprof reported before them.
func sampleSummary(t *testing.T, pid, count int) (s, raw *analysis.Summary) {
	t.Helper()
	smp, err := sample.NewSampler(sample.Options{PID: pid, Interval: 30 * time.Millisecond, Count: count, JVM: sample.JVMOptions{PauseBudget: 0.9}})
	require.NoError(t, err)
	defer smp.Close()
	sym := symbolize.NewSymbolizer(procfs.NewFS("").Target(pid))
	agg, rawAgg := analysis.New(), analysis.New()
	dumps := 0
	_, err = smp.Run(context.Background(), func(snap *snapshot.Snapshot) {
		if snap.Dump != nil {
			dumps++
		}
		agg.Add(snap)
		rawSnap := *snap
		rawSnap.Futexes = procfs.GroupFutexWaits(snap.Threads, sym)
		rawAgg.Add(&rawSnap)
	})
	require.NoError(t, err)
	if smp.Target().Kind == snapshot.KindJVM {
		require.Greater(t, dumps, count/2, "the run took too few dumps to test anything")
	}
	return agg.Summary(), rawAgg.Summary()
}

func futexLocks(s *analysis.Summary) []string {
	var out []string
	for _, l := range s.Locks {
		if l.Kind == "futex" {
			out = append(out, l.Class+" "+l.Address)
		}
	}
	return out
}

// JVMs under frequent dumps: a contended monitor (ScaleWorkload) and a
// program that only allocates, so the JVM stops for a collection every few
// milliseconds (AllocationChurn). The Java monitor is found; no futex of the
// JVM (its safepoint barrier, Heap_lock and other HotSpot locks, JIT and VM
// threads, ctprof's own dump) becomes a lock or a finding.
func TestJVMUnderFrequentDumpsHasNoFutexLocks(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name+"/ScaleWorkload", func(t *testing.T) {
			p := testjvm.Start(t, j, "ScaleWorkload", "contended", "4")
			s, _ := sampleSummary(t, p.PID, 60)
			assert.Empty(t, futexLocks(s))
			monitor := false
			for _, l := range s.Locks {
				if l.Kind == "monitor" && l.Class == "ScaleWorkload$SharedCounter" {
					monitor = true
				}
			}
			assert.True(t, monitor, "the Java monitor is still found: %+v", s.Locks)
			for _, f := range s.Findings {
				assert.NotContains(t, f.Summary, "futex", "finding: %s", f.Summary)
			}
		})
		t.Run(j.Name+"/AllocationChurn", func(t *testing.T) {
			p := testjvm.Start(t, j, "AllocationChurn", "4")
			s, raw := sampleSummary(t, p.PID, 60)
			// The artefact is there to be dropped: threads queue on the
			// JVM's Heap_lock (or its barrier) while it collects.
			require.NotEmpty(t, futexLocks(raw), "the sweeps never caught the JVM's own futexes; the test proves nothing")
			assert.Empty(t, futexLocks(s))
			for _, f := range s.Findings {
				assert.NotContains(t, f.Summary, "futex", "finding: %s", f.Summary)
				assert.NotEqual(t, "lock-hotspot", f.Kind, "finding: %s", f.Summary)
			}
		})
	}
}

// A native program's pthread mutex convoy keeps its futex lock and finding.
func TestNativeMutexConvoyKeepsItsFutexLock(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	var lock *analysis.LockSummary
	var s *analysis.Summary
	// Bounded retries: one short run may catch the contenders between
	// lock calls on a loaded machine.
	for attempt := 0; attempt < 5 && lock == nil; attempt++ {
		s, _ = sampleSummary(t, p.PID, 6)
		for i := range s.Locks {
			if l := &s.Locks[i]; l.Kind == "futex" && l.Class == "contended_mutex" {
				lock = l
			}
		}
	}
	require.NotNil(t, lock, "no futex lock on contended_mutex: %+v", s.Locks)
	assert.Equal(t, "lock", lock.FutexKind)
	found := false
	for _, f := range s.Findings {
		if strings.Contains(f.Summary, "contended_mutex") {
			found = true
		}
	}
	assert.True(t, found, "findings: %+v", s.Findings)
}
