package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testcgroup"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// sampleFor feeds samples of a real process to a new Aggregator for d.
func sampleFor(t *testing.T, pid int, d time.Duration) *Summary {
	t.Helper()
	return sampleWith(t, sample.Options{PID: pid, Interval: 100 * time.Millisecond, Duration: d})
}

// sampleWith is sampleFor with the sampler's options.
func sampleWith(t *testing.T, o sample.Options) *Summary {
	t.Helper()
	smp, err := sample.NewSampler(o)
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
	t.Logf("in state R at the samples: %.3f", sc.RunnableSampledAvg)
	// Schedstat counts a wait when the thread gets a CPU: on a heavily
	// loaded host (load averages of 20 to 30 on two CPUs here) a 4 s run's
	// schedstat figures lag (three busy threads have read as 1.01
	// runnable), the threads in state R at the samples do not.
	assert.Greater(t, sc.RunnableSampledAvg, 2.5, "three busy threads are always runnable")
	assert.Greater(t, sc.RunnableSampledAvg-sc.RunningAvg, 1.5, "of three busy threads on one CPU, two wait")
	assert.Greater(t, sc.WaitingForCPUAvg, 0.5)

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

	// Three busy threads on one CPU: two wait whatever else runs, so the
	// process's own threads are the cause, and the program's doing is
	// critical.
	assert.Equal(t, CauseOwnThreads, sc.Cause)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f, "findings: %+v", s.Findings)
	want := fmt.Sprintf("The process's threads queue behind each other: %.2f runnable on average for 1 CPU, of which %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunnableAvg, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	assert.Equal(t, want, f.Summary)
	assert.Equal(t, CauseOwnThreads, f.Cause)
	assert.Equal(t, SeverityCritical, f.Severity, "two of three threads wait: over half their runnable time")
	assert.Contains(t, f.Evidence[0], "more threads are runnable than the 1 CPU the process may use: its own threads take turns on them")
	assert.Contains(t, f.NextStep, "fewer runnable threads")
	// (A busy host adds a line naming its biggest processes, which may
	// be anything, another test's cpu_queue included.)
	text := f.Summary
	for _, e := range f.Evidence {
		if !strings.HasPrefix(e, "the biggest CPU users") {
			text += "\n" + e
		}
	}
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
	assert.Equal(t, CauseNone, sc.Cause)
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
	assert.Equal(t, CauseOtherProcesses, sc.Cause)
	assert.Nil(t, sc.OtherCPUsAvg, "these snapshots, like a recording's, have no host CPU time")
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityWarning, f.Severity, "waiting for CPUs other work holds is not the program's doing")
	assert.Equal(t, "Other processes take the CPUs: the process's threads run on 0.40 of its 2 CPUs while 0.50 wait in a run queue (56 % of their runnable time).", f.Summary)
	assert.Equal(t, "its threads could run on 1.60 more of its CPUs, yet wait: other work takes them, or the waiting threads may run on fewer CPUs than the process (host load average 7.50)", f.Evidence[0])
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
	// Of 2.10 waiting, 1.00 is the runnable threads beyond the 2 CPUs,
	// 1.10 the CPUs other work held: the latter names the cause, the
	// former is said beside it.
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, CauseOtherProcesses, s.Scheduling.Cause)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Equal(t, "Other processes take the CPUs: the process's threads run on 0.90 of its 2 CPUs while 2.10 wait in a run queue (70 % of their runnable time).", f.Summary)
	assert.Contains(t, f.Evidence, "its own runnable threads (3.00) also outnumber its 2 CPUs: 1.00 of the waiting would remain on a quiet host")

	// The same process with most of its CPUs: its own threads first,
	// the neighbours' share beside.
	a = New()
	for i := 0; i <= 4; i++ {
		var threads []procfs.Thread
		for p := 0; p < 4; p++ {
			th := thread(10+p, fmt.Sprintf("spin-%d", p), 'R', 0, uint64(20*i), time.Duration(i)*350*time.Millisecond)
			th.RunQueueWait = time.Duration(i) * 650 * time.Millisecond
			threads = append(threads, th)
		}
		a.Add(liveSnap(i, threads))
	}
	s = a.Summary()
	f = findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, CauseOwnThreads, s.Scheduling.Cause)
	assert.Equal(t, SeverityCritical, f.Severity)
	assert.Equal(t, "The process's threads queue behind each other: 4.00 runnable on average for 2 CPUs, of which 2.60 wait in a run queue (65 % of their runnable time).", f.Summary)
	assert.Contains(t, f.Evidence, "other work also holds its CPUs: its threads run on only 1.40 of them")
}

// hostSnap is liveSnap with the host's CPU time: busy ticks so far, and
// the consumers of the window before it.
func hostSnap(i int, threads []procfs.Thread, busyTicks uint64, consumers ...procfs.ProcCPU) *snapshot.Snapshot {
	s := liveSnap(i, threads)
	s.Host.BusyTicks = busyTicks
	if i > 0 && consumers != nil {
		s.Host.Consumers, s.Host.ConsumersWindow = consumers, time.Second
	}
	return s
}

// The consumers of each window add up over the run, by process (a reused
// pid is another process); the rest of the host's CPU is its busy time
// less the process's own; and a name, any process's choice, is quoted in
// the evidence as thread names are.
func TestCPUSaturationNamesTheConsumers(t *testing.T) {
	a := New()
	evil := "evil\n[CRITICAL] \x1b[2J"
	for i := 0; i <= 4; i++ {
		th := thread(10, "worker", 'R', 0, uint64(20*i), time.Duration(i)*200*time.Millisecond)
		th.RunQueueWait = time.Duration(i) * 700 * time.Millisecond
		// The host's two CPUs are busy: 0.2 of them the worker's, 1.8
		// the rest's.
		a.Add(hostSnap(i, []procfs.Thread{th}, uint64(1000+200*i),
			procfs.ProcCPU{PID: 500, Start: 7, Name: "stress-ng-cpu", CPU: 900 * time.Millisecond},
			procfs.ProcCPU{PID: 501, Start: 8, Name: evil, CPU: 600 * time.Millisecond},
			procfs.ProcCPU{PID: 502, Start: uint64(9 + i%2), Name: "reused", CPU: 200 * time.Millisecond}))
	}
	s := a.Summary()
	sc := s.Scheduling
	require.NotNil(t, sc.OtherCPUsAvg)
	assert.InDelta(t, 1.8, *sc.OtherCPUsAvg, 0.001)
	assert.InDelta(t, 0.0, *sc.StealCPUsAvg, 0.001)
	assert.Equal(t, 4.0, sc.ConsumersSeconds)
	require.Len(t, sc.Consumers, 4)
	assert.Equal(t, ProcessCPU{PID: 500, Name: "stress-ng-cpu", CPUs: 0.9, CPUSeconds: 3.6}, sc.Consumers[0])
	assert.Equal(t, ProcessCPU{PID: 501, Name: evil, CPUs: 0.6, CPUSeconds: 2.4}, sc.Consumers[1])
	assert.Equal(t, ProcessCPU{PID: 502, Name: "reused", CPUs: 0.1, CPUSeconds: 0.4}, sc.Consumers[2], "two processes by one pid")
	assert.Equal(t, CauseOtherProcesses, sc.Cause)

	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Equal(t, "Other processes take the CPUs: the process's threads run on 0.20 of its 2 CPUs while 0.70 wait in a run queue (78 % of their runnable time).", f.Summary)
	assert.Equal(t, "its threads could run on 1.80 more of its CPUs, yet wait: the rest of the host used 1.80 of its 2 CPUs (host load average 0.00)", f.Evidence[0])
	assert.Equal(t, `the biggest CPU users over 4.0 s: "stress-ng-cpu" (pid 500) 0.90 CPU, "evil\n[CRITICAL] \x1b[2J" (pid 501) 0.60 CPU, "reused" (pid 502) 0.10 CPU`, f.Evidence[1])
	for _, e := range f.Evidence {
		assert.NotContains(t, e, "\n", "a name cannot start a line of its own")
		assert.NotContains(t, e, "\x1b")
	}
	assert.Contains(t, f.NextStep, "move the busy neighbours or this process")
}

// A host that stays nearly idle while the threads wait does not blame
// other processes: something else holds them back.
func TestCPUSaturationWithAnIdleHost(t *testing.T) {
	a := New()
	for i := 0; i <= 4; i++ {
		th := thread(10, "worker", 'R', 0, uint64(20*i), time.Duration(i)*200*time.Millisecond)
		th.RunQueueWait = time.Duration(i) * 700 * time.Millisecond
		a.Add(hostSnap(i, []procfs.Thread{th}, uint64(1000+21*i)))
	}
	s := a.Summary()
	assert.Equal(t, CauseUnknown, s.Scheduling.Cause)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Contains(t, f.Evidence[0], "yet they wait, though the rest of the host used only 0.01 CPUs: the waiting threads may be bound to fewer CPUs than the process")
}

// A quota that held the process back in most periods is the cause, said
// with its setting as the cgroup's files give it; of several quotas, the
// one that held it back longest.
func TestCPUSaturationByQuotaCounters(t *testing.T) {
	a := New()
	for i := 0; i <= 4; i++ {
		th := thread(10, "worker", 'R', 0, uint64(20*i), time.Duration(i)*250*time.Millisecond)
		th.RunQueueWait = time.Duration(i) * 750 * time.Millisecond
		snap := hostSnap(i, []procfs.Thread{th}, uint64(1000+30*i))
		snap.Host.Quotas = []procfs.CPUQuota{
			{Cgroup: "/kubepods/pod\"x\"/app", Version: 2, Quota: 25 * time.Millisecond, Period: 100 * time.Millisecond,
				Periods: uint64(100 + 10*i), Throttled: uint64(50 + 9*i), ThrottledTime: time.Duration(i) * 700 * time.Millisecond},
			{Cgroup: "/kubepods/pod\"x\"", Version: 2, Quota: 100 * time.Millisecond, Period: 100 * time.Millisecond,
				Periods: uint64(100 + 10*i), Throttled: 3, ThrottledTime: time.Second},
		}
		a.Add(snap)
	}
	s := a.Summary()
	sc := s.Scheduling
	require.NotNil(t, sc.Quota)
	assert.Equal(t, CPUQuota{Cgroup: "/kubepods/pod\"x\"/app", Version: 2, CPUs: 0.25, QuotaMicros: 25000, PeriodMicros: 100000,
		Periods: 40, ThrottledPeriods: 36, ThrottledShare: 0.9, ThrottledSeconds: 2.8}, *sc.Quota)
	assert.Equal(t, CauseCgroupQuota, sc.Cause)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Equal(t, "A cgroup CPU quota throttles the process: it may use 0.25 CPU and its threads run on 0.25 while 0.75 wait in a run queue (75 % of their runnable time).", f.Summary)
	assert.Equal(t, `cgroup "/kubepods/pod\"x\"/app" (cpu.max 25000 100000) held the process back in 90 % of the 40 periods it had work in, 2.80 s in all`, f.Evidence[0])
	assert.Contains(t, f.NextStep, "Raise the quota")
}

// consumerOf returns the consumer with pid, if named.
func consumerOf(sc *Scheduling, pid int) (ProcessCPU, bool) {
	for _, c := range sc.Consumers {
		if c.PID == pid {
			return c, true
		}
	}
	return ProcessCPU{}, false
}

// A process with two busy threads, no more than its two CPUs, beside twice
// as many busy threads as CPUs of another process that runs at a raised
// priority: its threads wait for CPUs the neighbour holds. The finding
// blames the neighbour, names it with its share of the CPUs, and stays a
// warning: the process is the victim.
func TestCPUSaturationByOtherProcesses(t *testing.T) {
	cpus := runtime.NumCPU()
	hog := testnative.StartWith(t, testnative.Options{Prioritized: true}, "spinners", strconv.Itoa(2*cpus))
	p := testnative.Start(t, "cpu_queue", "0", "2", "0", "1", "1000")
	s := sampleFor(t, p.PID, 5*time.Second)
	require.NotNil(t, s.Target)
	checkSchedulingAgrees(t, s, 1+2+1)
	sc := s.Scheduling
	t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f cpus %d others %s consumers %+v",
		sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare, sc.CPUs, fmtCPUs(sc.OtherCPUsAvg), sc.Consumers)
	if s.Target.CPUs < 2 {
		t.Skipf("the test runs with %d CPU; it needs two for a process that does not outnumber its CPUs", s.Target.CPUs)
	}
	assert.LessOrEqual(t, sc.RunnableAvg, float64(sc.CPUs)+0.05, "two busy threads for two CPUs")
	assert.Less(t, sc.RunningAvg, 1.0, "the neighbour holds most of the CPUs")
	require.NotNil(t, sc.OtherCPUsAvg)
	assert.Greater(t, *sc.OtherCPUsAvg, 1.0)
	assert.Equal(t, CauseOtherProcesses, sc.Cause)
	c, ok := consumerOf(sc, hog.PID)
	require.True(t, ok, "the neighbour is among the biggest consumers: %+v", sc.Consumers)
	assert.Equal(t, "spinners", c.Name)
	assert.Greater(t, c.CPUs, 1.0, "twice as many threads as CPUs, at a raised priority")
	assert.LessOrEqual(t, c.CPUs, float64(cpus)+0.05)
	assert.Greater(t, sc.ConsumersSeconds, 2.5, "windows cover most of the run")
	_, self := consumerOf(sc, p.PID)
	assert.False(t, self, "the process is not its own neighbour")

	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f, "findings: %+v", s.Findings)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Equal(t, CauseOtherProcesses, f.Cause)
	assert.Equal(t, fmt.Sprintf("Other processes take the CPUs: the process's threads run on %.2f of its 2 CPUs while %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunningAvg, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare), f.Summary)
	text := strings.Join(f.Evidence, "\n")
	assert.Contains(t, text, fmt.Sprintf("the rest of the host used %.2f of its", *sc.OtherCPUsAvg))
	assert.Contains(t, text, fmt.Sprintf(`"spinners" (pid %d) %.2f CPU`, hog.PID, c.CPUs))
	assert.NotContains(t, text, "take turns", "the process's own threads are not blamed")
	assert.Contains(t, f.NextStep, "move the busy neighbours")
}

// Three busy threads per CPU of a process at a raised priority: they
// queue behind each other whatever else runs. The finding blames the
// process's own threads, critical, and names no neighbour as the cause.
func TestCPUSaturationByOwnThreads(t *testing.T) {
	n := 3 * runtime.NumCPU()
	p := testnative.StartWith(t, testnative.Options{Prioritized: true}, "spinners", strconv.Itoa(n))
	s := sampleFor(t, p.PID, 4*time.Second)
	require.NotNil(t, s.Target)
	checkSchedulingAgrees(t, s, n+1)
	sc := s.Scheduling
	t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f cpus %d others %s consumers %+v",
		sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare, sc.CPUs, fmtCPUs(sc.OtherCPUsAvg), sc.Consumers)
	assert.Greater(t, sc.RunnableAvg, float64(sc.CPUs)+1, "three busy threads per CPU")
	assert.Equal(t, CauseOwnThreads, sc.Cause)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f, "findings: %+v", s.Findings)
	assert.Equal(t, CauseOwnThreads, f.Cause)
	if sc.RunQueueWaitShare >= saturationCriticalShare {
		assert.Equal(t, SeverityCritical, f.Severity)
	}
	assert.True(t, strings.HasPrefix(f.Summary, "The process's threads queue behind each other: "), f.Summary)
	assert.Contains(t, f.Evidence[0], fmt.Sprintf("more threads are runnable than the %s the process may use", plural(sc.CPUs, "CPU")))
	assert.Contains(t, f.NextStep, "fewer runnable threads than the process has CPUs")
}

// Two busy threads in a cgroup the test makes, with a quota of a tenth of
// a CPU (at a raised priority, so that the machine's other load does not
// keep them under it anyway): the quota is the cause, named with its
// setting and its throttling, a warning.
func TestCPUSaturationByCgroupQuota(t *testing.T) {
	cg := testcgroup.New(t, 10*time.Millisecond, 100*time.Millisecond)
	p := testnative.StartWith(t, testnative.Options{Prioritized: true}, "cpu_queue", "0", "2", "0", "1", "1000")
	cg.Add(t, p.PID)
	s := sampleFor(t, p.PID, 4*time.Second)
	require.NotNil(t, s.Target)
	checkSchedulingAgrees(t, s, 1+2+1)
	sc := s.Scheduling
	t.Logf("runnable %.3f running %.3f waiting %.3f share %.3f cpus %d others %s quota %+v",
		sc.RunnableAvg, sc.RunningAvg, sc.WaitingForCPUAvg, sc.RunQueueWaitShare, sc.CPUs, fmtCPUs(sc.OtherCPUsAvg), sc.Quota)
	require.NotNil(t, sc.Quota, "the cgroup %s (v%d) was found", cg.Path, cg.Version)
	q := sc.Quota
	assert.Equal(t, cg.Path, q.Cgroup)
	assert.Equal(t, cg.Version, q.Version)
	assert.Equal(t, 0.1, q.CPUs)
	assert.Equal(t, int64(10000), q.QuotaMicros)
	assert.Equal(t, int64(100000), q.PeriodMicros)
	assert.Greater(t, q.Periods, uint64(20), "a period every 100 ms of a 4 s run")
	// Two busy threads use up 10 ms in most periods; on a loaded host
	// (load averages of 20 on two CPUs here) in some periods they get
	// less than that anyway.
	assert.Greater(t, q.ThrottledShare, 0.3)
	assert.Greater(t, q.ThrottledSeconds, 0.2)
	assert.LessOrEqual(t, sc.RunningAvg, 0.15, "the threads run no more than the quota allows")
	assert.Equal(t, CauseCgroupQuota, sc.Cause)

	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f, "findings: %+v", s.Findings)
	assert.Equal(t, SeverityWarning, f.Severity)
	assert.Equal(t, CauseCgroupQuota, f.Cause)
	assert.True(t, strings.HasPrefix(f.Summary, "A cgroup CPU quota throttles the process: it may use 0.10 CPU and its threads run on "), f.Summary)
	setting := "cpu.max 10000 100000"
	if cg.Version == 1 {
		setting = "cpu.cfs_quota_us 10000, cpu.cfs_period_us 100000"
	}
	assert.Equal(t, fmt.Sprintf("cgroup %q (%s) held the process back in %.0f %% of the %d periods it had work in, %.2f s in all",
		cg.Path, setting, 100*q.ThrottledShare, q.Periods, q.ThrottledSeconds), f.Evidence[0])
	assert.Contains(t, f.Evidence, fmt.Sprintf("its %.2f runnable threads want more than the quota's 0.10 CPU", sc.RunnableAvg))
	assert.Contains(t, f.NextStep, "Raise the quota")
}

func fmtCPUs(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.3f", *v)
}

// On a heavily loaded host schedstat lags: it counts a wait when the
// thread gets a CPU, so three busy threads on one CPU can add up to one
// runnable over a short run (seen here at a load average of 29). The
// threads in state R at the samples say three, and the cause stays the
// process's own threads, saying why the figures differ.
func TestCPUSaturationWhenSchedstatLags(t *testing.T) {
	a := New()
	for i := 0; i <= 4; i++ {
		var threads []procfs.Thread
		for p := 0; p < 3; p++ {
			th := thread(10+p, fmt.Sprintf("busy-%d", p), 'R', 0, uint64(20*i), time.Duration(i)*40*time.Millisecond)
			th.RunQueueWait = time.Duration(i) * 290 * time.Millisecond
			th.CPUsAllowed = "0"
			threads = append(threads, th)
		}
		snap := hostSnap(i, threads, uint64(1000+190*i))
		snap.Target.CPUs = 1
		a.Add(snap)
	}
	s := a.Summary()
	sc := s.Scheduling
	assert.InDelta(t, 0.99, sc.RunnableAvg, 0.001)
	assert.Equal(t, 3.0, sc.RunnableSampledAvg)
	assert.Equal(t, CauseOwnThreads, sc.Cause)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityCritical, f.Severity)
	assert.Contains(t, f.Evidence, "the samples found 3.00 threads runnable on average (state R): schedstat counts a wait only once the thread gets a CPU, so on a loaded host its figures lag")
}
