package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// sampleFor feeds samples of a real process to a new Aggregator for d.
func sampleFor(t *testing.T, pid int, d time.Duration) *Summary {
	t.Helper()
	smp, err := sample.NewSampler(sample.Options{PID: pid, Interval: 100 * time.Millisecond, Duration: d})
	require.NoError(t, err)
	defer smp.Close()
	a := New()
	_, err = smp.Run(context.Background(), a.Add)
	require.NoError(t, err)
	return a.Summary()
}

// checkSchedulingAgrees asserts what must hold of any Scheduling: the
// averages add up, waiting never exceeds runnable, and no more threads are
// runnable than exist.
func checkSchedulingAgrees(t *testing.T, s *Summary, threads int) {
	t.Helper()
	sc := s.Scheduling
	require.NotNil(t, sc)
	assert.InDelta(t, sc.RunningAvg+sc.WaitingForCPUAvg, sc.RunnableAvg, 0.0011, "runnable = running + waiting")
	assert.LessOrEqual(t, sc.WaitingForCPUAvg, sc.RunnableAvg)
	assert.LessOrEqual(t, sc.RunnableAvg, float64(threads)+0.05, "no more runnable threads than threads")
	if sc.CPUs > 0 {
		assert.LessOrEqual(t, sc.RunningAvg, float64(sc.CPUs)+0.05, "no more running threads than CPUs")
	}
	if sc.RunnableAvg >= 0.1 { // (3 decimals of a tiny runnable are too coarse to divide)
		assert.InDelta(t, sc.WaitingForCPUAvg/sc.RunnableAvg, sc.RunQueueWaitShare, 0.01, "the share is waiting over runnable")
	}
}

// Three threads that compute without pause, bound to one CPU, beside
// threads that wake once a second for a fraction of a millisecond (as a
// JIT compiler does) and threads that never run (an attach listener): the
// finding names the three first, never the idle ones, and its numbers
// agree with each other and with the JSON fields they come from. The
// bursty threads can wait for most of their short runnable time; by share
// they would lead the list, by time they are minor.
func TestCPUSaturationNamesTheThreadsThatWait(t *testing.T) {
	p := testnative.Start(t, "cpu_queue", "1", "3", "2", "2", "1000")
	s := sampleFor(t, p.PID, 4*time.Second)
	require.NotNil(t, s.Target)
	require.Equal(t, 1, s.Target.CPUs, "the program binds itself to one CPU")
	const threads = 1 + 3 + 2 + 2
	checkSchedulingAgrees(t, s, threads)
	sc := s.Scheduling
	t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f", sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare)
	assert.Greater(t, sc.RunnableAvg, 2.5, "three busy threads are always runnable")
	assert.Greater(t, sc.WaitingForCPUAvg, 1.5, "of three busy threads on one CPU, two wait")

	var named []string
	for _, th := range sc.Suffering {
		named = append(named, th.Thread)
		assert.GreaterOrEqual(t, th.RunQueueWaitSeconds, 0.05*s.DurationSeconds*0.9, "%s: a sufferer waited at least 5 %% of the run", th.Thread)
	}
	require.GreaterOrEqual(t, len(named), 3)
	assert.ElementsMatch(t, []string{"busy-0", "busy-1", "busy-2"}, named[:3], "the threads that wait longest come first")
	for _, th := range s.ThreadCPU {
		if strings.HasPrefix(th.Thread, "bursty-") {
			t.Logf("%s: run-queue wait share %.2f, %.3f s", th.Thread, th.RunQueueWaitShare, th.RunQueueWaitSeconds)
		}
	}
	// A thread that wakes once a second for 0.3 ms is named only if the
	// host's other work made it wait 5 % of the run (50 ms per wake-up).
	for _, n := range named[3:] {
		assert.True(t, strings.HasPrefix(n, "bursty-"), "%s named", n)
	}

	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f, "findings: %+v", s.Findings)
	want := fmt.Sprintf("Threads wait for a CPU: %.2f runnable on average for 1 CPU, of which %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunnableAvg, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	assert.Equal(t, want, f.Summary)
	assert.Contains(t, f.Evidence[0], "more threads are runnable than the 1 CPU the process may use")
	text := f.Summary + "\n" + strings.Join(f.Evidence, "\n")
	for _, idle := range []string{"idle-", "cpu_queue"} {
		assert.NotContains(t, text, idle, "the finding names only the threads that wait")
	}
	for _, busy := range []string{"busy-0", "busy-1", "busy-2"} {
		assert.Contains(t, text, fmt.Sprintf("%q", busy))
	}
}

// Threads that wake briefly and threads that never run do not saturate
// anything: no finding, no thread named.
func TestNoCPUSaturationWithoutQueueing(t *testing.T) {
	p := testnative.Start(t, "cpu_queue", "0", "0", "2", "2", "1000")
	s := sampleFor(t, p.PID, 3*time.Second)
	checkSchedulingAgrees(t, s, 1+2+2)
	sc := s.Scheduling
	t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f", sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare)
	assert.Less(t, sc.RunnableAvg, 0.5)
	assert.Empty(t, sc.Suffering)
	assert.Nil(t, findKind(s, FindingCPUSaturation), "findings: %+v", s.Findings)
}

// Fewer threads runnable than CPUs, yet waiting: the sentence does not
// blame the process's own thread count.
func TestCPUSaturationByOtherWork(t *testing.T) {
	a := New()
	for i := 0; i <= 4; i++ {
		th := thread(10, "worker", 'R', 0, uint64(20*i), time.Duration(i)*400*time.Millisecond)
		th.RunQueueWait = time.Duration(i) * 500 * time.Millisecond
		idle := thread(11, "idle", 'S', 0, 0, time.Duration(i)*time.Millisecond)
		idle.RunQueueWait = time.Duration(i) * 4 * time.Millisecond // 80 % of its runnable time, 0.4 % of the run
		snap := liveSnap(i, []procfs.Thread{th, idle})
		snap.Host.Load1 = 7.5
		a.Add(snap)
	}
	s := a.Summary()
	checkSchedulingAgrees(t, s, 2)
	sc := s.Scheduling
	assert.InDelta(t, 0.905, sc.RunnableAvg, 0.001)
	assert.InDelta(t, 0.504, sc.WaitingForCPUAvg, 0.001)
	require.Len(t, sc.Suffering, 1)
	assert.Equal(t, "worker", sc.Suffering[0].Thread)
	assert.InDelta(t, 2.0, sc.Suffering[0].RunQueueWaitSeconds, 0.001)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityCritical, f.Severity)
	assert.Equal(t, "Threads wait for a CPU: 0.91 runnable on average for 2 CPUs, of which 0.50 wait in a run queue (56 % of their runnable time).", f.Summary)
	assert.Contains(t, f.Evidence[0], "fewer threads are runnable than the 2 CPUs the process may use, yet they wait: other work takes the CPUs (host load average 7.50)")
	assert.Contains(t, f.Evidence, `"worker" (tid 10) waited 2.00 s for a CPU and ran 1.60 s; SCHED_OTHER, nice 0, rt priority 0, CPUs 0-1`)
}

// pinProcess binds every thread of pid to the first CPU it may use; threads
// it creates later inherit that.
func pinProcess(t *testing.T, pid int) {
	t.Helper()
	var allowed unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(pid, &allowed))
	first := -1
	for c := 0; c < 1024 && first < 0; c++ {
		if allowed.IsSet(c) {
			first = c
		}
	}
	require.GreaterOrEqual(t, first, 0)
	var one unix.CPUSet
	one.Set(first)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	require.NoError(t, err)
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		require.NoError(t, err)
		if err := unix.SchedSetaffinity(tid, &one); err != nil && !errors.Is(err, unix.ESRCH) {
			require.NoError(t, err, "pin tid %d", tid)
		}
	}
}

// A JVM whose three workers compute without pause on one CPU, dumped by
// ctprof twice a second: the workers are the threads that suffer; the JIT
// compilers and the attach listener that serves ctprof's dumps are not
// named, and the numbers agree.
func TestJVMCPUSaturationNamesTheWorkers(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "ScaleWorkload", "independent", "3")
			pinProcess(t, p.PID)
			smp, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: 250 * time.Millisecond, Duration: 5 * time.Second,
				JVM: sample.JVMOptions{DumpEvery: 500 * time.Millisecond, PauseBudget: 0.05}})
			require.NoError(t, err)
			defer smp.Close()
			a := New()
			_, err = smp.Run(context.Background(), a.Add)
			require.NoError(t, err)
			s := a.Summary()
			require.NotNil(t, s.Target)
			require.Equal(t, 1, s.Target.CPUs)
			require.GreaterOrEqual(t, s.Dumps, 1, "ctprof dumped the JVM")
			checkSchedulingAgrees(t, s, s.Threads)
			sc := s.Scheduling
			t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f", sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare)
			var named []string
			for _, th := range sc.Suffering {
				named = append(named, th.Thread)
				t.Logf("suffering: %q waited %.3f s, share %.2f", th.Thread, th.RunQueueWaitSeconds, th.RunQueueWaitShare)
			}
			require.GreaterOrEqual(t, len(named), 3, "suffering: %v", named)
			assert.ElementsMatch(t, []string{"worker-0", "worker-1", "worker-2"}, named[:3])
			assert.NotContains(t, named, "Attach Listener")
			f := findKind(s, FindingCPUSaturation)
			require.NotNil(t, f, "findings: %+v", s.Findings)
			assert.Contains(t, f.Summary, fmt.Sprintf("%.2f runnable on average for 1 CPU, of which %.2f wait", sc.RunnableAvg, sc.WaitingForCPUAvg))
			assert.NotContains(t, strings.Join(f.Evidence, "\n"), "Attach Listener")
		})
	}
}

// More threads runnable than CPUs, but running on fewer CPUs than the
// process may use: the sentence says both.
func TestCPUSaturationOwnThreadsAndOtherWork(t *testing.T) {
	a := New()
	for i := 0; i <= 4; i++ {
		var threads []procfs.Thread
		for p := 0; p < 3; p++ {
			th := thread(10+p, fmt.Sprintf("spin-%d", p), 'R', 0, uint64(20*i), time.Duration(i)*300*time.Millisecond)
			th.RunQueueWait = time.Duration(i) * 700 * time.Millisecond
			threads = append(threads, th)
		}
		a.Add(liveSnap(i, threads))
	}
	s := a.Summary()
	checkSchedulingAgrees(t, s, 3)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, "Threads wait for a CPU: 3.00 runnable on average for 2 CPUs, of which 2.10 wait in a run queue (70 % of their runnable time).", f.Summary)
	assert.Equal(t, "more threads are runnable than the 2 CPUs the process may use: it queues behind itself, and its threads run on only 0.90 of them: other work takes the rest (host load average 0.00)", f.Evidence[0])
}
