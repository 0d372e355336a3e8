package analysis

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/testnative"
)

// futexLockOf returns the futex lock whose class matches re.
func futexLockOf(s *Summary, re string) *LockSummary {
	r := regexp.MustCompile(re)
	for i := range s.Locks {
		if l := &s.Locks[i]; l.Kind == "futex" && r.MatchString(l.Class) {
			return l
		}
	}
	return nil
}

// A native lock convoy, sampled as attach samples it: each futex lock is
// named by what stays the same across runs, its holder is the thread of
// its group the mutex names (with what it runs: asleep in nanosleep, the
// lock held), top's OWNER and the findings say so, and the threads'
// queued seconds never exceed the time they spent off the CPU.
func TestNativeLocksNamedWithHoldersAndHonestTime(t *testing.T) {
	const perGroup = 3
	p := testnative.Start(t, "lock_convoy", strconv.Itoa(perGroup), "20000")
	// As root ctprof attach also counts the waits with the kernel
	// (--exact-waits auto): the futexes it counted must keep the names
	// the samples give them.
	for _, exact := range []sample.ExactWaits{sample.ExactOff, sample.ExactAuto} {
		t.Run(fmt.Sprintf("exact-waits=%d", exact), func(t *testing.T) {
			checkNativeConvoy(t, p.PID, perGroup, exact)
		})
	}
}

func checkNativeConvoy(t *testing.T, pid, perGroup int, exact sample.ExactWaits) {
	s := sampleWith(t, sample.Options{PID: pid, Interval: 100 * time.Millisecond, Duration: 3 * time.Second, ExactWaits: exact})
	require.NotEmpty(t, s.Locks)
	groups := map[string]string{
		"glob": `^global_lock$`,
		"heap": `^\[heap\]\+0x[0-9a-f]+$`,
		"shm":  `^shared memory \(anonymous\)\+0x0$`,
		"stk":  `^\[stack:[0-9]+\]\+0x[0-9a-f]+$`,
	}
	for g, re := range groups {
		l := futexLockOf(s, re)
		require.NotNil(t, l, "group %s: no futex lock named %s in %+v", g, re, s.Locks)
		assert.Equal(t, "lock", l.FutexKind, g)
		assert.NotEqual(t, l.Address, l.Class, "%s: named, not by its address", g)
		require.NotNil(t, l.Holder, "%s: the mutex named its holder", g)
		h := l.Holder
		assert.Equal(t, "mutex", h.Lock)
		assert.True(t, strings.HasPrefix(h.Thread, g+"-"), "%s: holder %q is of the group", g, h.Thread)
		assert.NotZero(t, h.TID)
		assert.Greater(t, h.Samples, l.DumpsSeen/2, "%s: most samples name a holder", g)
		require.NotNil(t, l.Owner)
		assert.Equal(t, h.Thread, *l.Owner, "the lock table's owner is the holder")
		require.NotEmpty(t, l.OwnerFrames)
		// Asleep with the lock held; on a loaded machine also runnable,
		// woken and waiting for a CPU to release it.
		asleep := false
		for _, f := range l.OwnerFrames {
			asleep = asleep || strings.Contains(f.Frame, "nanosleep")
			assert.Regexp(t, `nanosleep|^running$|^sleeping$`, f.Frame, "%s: what the holder did (sleeping: the sweep did not read its system call)", g)
		}
		assert.True(t, asleep, "%s: the holder sleeps with the lock held: %+v", g, l.OwnerFrames)
		assert.Contains(t, LockName(*l), "futex ")
		assert.NotContains(t, LockName(*l), l.Address)
	}

	// Queued thread-seconds never exceed the waiters' time off the CPU:
	// the run's wall less their time running and runnable.
	var queued, offCPU float64
	for _, l := range s.Locks {
		if l.Kind == "futex" {
			queued += l.BlockedThreadSeconds
		}
	}
	for _, th := range s.ThreadCPU {
		offCPU += max(s.DurationSeconds-th.CPUSeconds-th.RunQueueWaitSeconds, 0)
	}
	t.Logf("queued %.3f s, off CPU %.3f s over %.2f s", queued, offCPU, s.DurationSeconds)
	assert.Greater(t, queued, 0.0)
	assert.LessOrEqual(t, queued, offCPU+0.05, "queued seconds within the threads' off-CPU seconds")

	// The findings name the locks by name, with their holders (a lock's
	// own finding, or its resource's when several locks are waited for at
	// one site), never by address, and come by severity.
	var text strings.Builder
	for _, f := range s.Findings {
		if f.Kind == FindingLockHotspot {
			text.WriteString(f.Summary + "\n" + strings.Join(f.Evidence, "\n") + "\n")
			assert.NotRegexp(t, `futex 0x[0-9a-f]{6,}`, f.Summary)
		}
	}
	for g, re := range groups {
		l := futexLockOf(s, re)
		name := futexName(l.Symbol, l.Class, l.Address)
		assert.Regexp(t, regexp.QuoteMeta("futex "+name)+`.*(held it|held by "`+g+`-)`, text.String(), "%s: a finding names the lock and its holder", g)
	}
	checkSeverityOrder(t, s.Findings)
}

func checkSeverityOrder(t *testing.T, fs []Finding) {
	t.Helper()
	for i := 1; i < len(fs); i++ {
		assert.LessOrEqual(t, severityRank[fs[i-1].Severity], severityRank[fs[i].Severity],
			"finding %d (%s %q) after a less severe one", i, fs[i].Severity, fs[i].Summary)
	}
}

// A critical finding whose builder gives it less impact than a warning's
// (CPU saturation beside a lock hotspot) still comes first.
func TestFindingsSortedBySeverity(t *testing.T) {
	s := &Summary{
		Samples: 100,
		Scheduling: &Scheduling{
			CPUs: 1, RunnableAvg: 3, RunningAvg: 1, WaitingForCPUAvg: 2, RunQueueWaitShare: 0.67,
			Cause: CauseOwnThreads,
		},
		Locks: []LockSummary{{
			ID: "futex||0x1000", Kind: "futex", Resource: "futex", Class: "[heap]+0x2a0", Address: "0x1000",
			Waiters: 3, AvgWaiters: 1.5, BlockedShare: 0.9, DumpsSeen: 90, FutexKind: "lock",
		}},
	}
	fs := findings(s)
	require.Len(t, fs, 2, "%+v", fs)
	assert.Equal(t, SeverityCritical, fs[0].Severity)
	assert.Equal(t, FindingCPUSaturation, fs[0].Kind)
	assert.Equal(t, SeverityWarning, fs[1].Severity)
	assert.Contains(t, fs[1].Summary, "futex [heap]+0x2a0")
	checkSeverityOrder(t, fs)
}

// A lock with waiters in a few samples of many is sporadic: said, at
// info, not a warning.
func TestSporadicFutexLock(t *testing.T) {
	l := LockSummary{
		ID: "futex||0x1000", Kind: "futex", Resource: "futex", Class: "global_lock", Address: "0x1000",
		Waiters: 3, AvgWaiters: 0.05, BlockedShare: 0.03, DumpsSeen: 3, FutexKind: "lock",
	}
	f := futexFinding(l, 100)
	assert.Equal(t, SeverityInfo, f.Severity)
	assert.True(t, strings.HasPrefix(f.Summary, "Sporadic: up to 3 threads waited on futex global_lock, in 3 samples of 100"), f.Summary)
	l.DumpsSeen, l.BlockedShare, l.AvgWaiters = 60, 0.6, 1.2
	f = futexFinding(l, 100)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.False(t, strings.HasPrefix(f.Summary, "Sporadic"), f.Summary)
	// Every sample of a short run: a steady queue, however few samples.
	l.DumpsSeen, l.BlockedShare, l.AvgWaiters = 4, 1, 2
	f = futexFinding(l, 4)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.False(t, strings.HasPrefix(f.Summary, "Sporadic"), f.Summary)
	// 4 of 20 samples: few, and a fifth of the run.
	l.DumpsSeen, l.BlockedShare, l.AvgWaiters = 4, 0.2, 0.3
	assert.True(t, strings.HasPrefix(futexFinding(l, 20).Summary, "Sporadic"))
}

// "Adding CPUs will not help" only while the run queue does not dominate
// the threads' runnable time.
func TestSerializationAdviceFollowsTheRunQueue(t *testing.T) {
	s := &Summary{Scheduling: &Scheduling{RunQueueWaitShare: 0.1}}
	assert.Contains(t, serializationNextStep(s), "will not help")
	s.Scheduling.RunQueueWaitShare = 0.81
	assert.NotContains(t, serializationNextStep(s), "will not help")
	assert.Contains(t, serializationNextStep(s), "more CPUs will shorten the queue")
	assert.Contains(t, serializationNextStep(&Summary{}), "will not help", "no scheduling measured: the lock's hold time decides")
}

// Threads that compute nearly all the time and block on a mutex for
// microseconds between bursts are caught in futex(2) by some samples:
// each sighting counts only the time the thread was asleep since the
// sample before, so the queued seconds stay within the threads' time off
// the CPU (counted as whole intervals they exceeded it).
func TestShortWaitsQueuedWithinOffCPUTime(t *testing.T) {
	p := testnative.Start(t, "short_waits", "4", "20000", "2000")
	s := sampleFor(t, p.PID, 3*time.Second)
	var queued, offCPU, sightings float64
	for _, l := range s.Locks {
		if l.Kind == "futex" {
			queued += l.BlockedThreadSeconds
			sightings += l.AvgWaiters * float64(s.Samples)
		}
	}
	for _, th := range s.ThreadCPU {
		if strings.HasPrefix(th.Thread, "short-") {
			offCPU += max(s.DurationSeconds-th.CPUSeconds-th.RunQueueWaitSeconds, 0)
		}
	}
	t.Logf("queued %.3f s over %.0f sightings (as whole intervals %.3f s); the workers were off the CPU %.3f s in %.2f s",
		queued, sightings, sightings*0.1, offCPU, s.DurationSeconds)
	assert.LessOrEqual(t, queued, offCPU+0.02, "queued seconds within the waiters' off-CPU seconds")
}

// An idle pool waits on a glibc condition variable: the waiters /proc
// shows, and the count the condition keeps in its own memory.
func TestConditionCountsItsWaiters(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "2", "3", "3000")
	s := sampleFor(t, p.PID, time.Second)
	var cond *FutexWaitSummary
	for i := range s.FutexWaits {
		if s.FutexWaits[i].Symbol != nil && strings.HasPrefix(*s.FutexWaits[i].Symbol, "work_ready") {
			cond = &s.FutexWaits[i]
		}
	}
	require.NotNil(t, cond, "%+v", s.FutexWaits)
	assert.Equal(t, 3, cond.Waiters)
	assert.Equal(t, 3, cond.CountedWaiters, "__wrefs counts the three idle waiters")
	assert.True(t, strings.HasPrefix(cond.Name, "work_ready+0x"), cond.Name)
}
