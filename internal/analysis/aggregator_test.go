package analysis

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// liveSnap builds a /proc snapshot at second i of a run with a 1 s interval.
func liveSnap(i int, threads []procfs.Thread) *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Time:     t0.Add(time.Duration(i) * time.Second),
		Interval: time.Second,
		Target:   snapshot.Target{PID: 42, Name: "app", Kind: snapshot.KindNative, CPUs: 2},
		Threads:  threads,
		Host:     &procfs.Host{ContextSwitches: uint64(1000 * i), CPUs: 2},
	}
}

func thread(tid int, name string, state byte, vol, invol uint64, cpu time.Duration) procfs.Thread {
	return procfs.Thread{TID: tid, StartTime: uint64(tid), Name: name, State: state, Voluntary: vol, Involuntary: invol,
		RunTime: cpu, UserCPU: cpu, Syscall: procfs.SyscallUnknown, CPUsAllowed: "0-1"}
}

func TestTotalsNeverGoDownWhenThreadsExit(t *testing.T) {
	a := New()
	// Thread 1 lives throughout; thread 2 exits after second 2; thread 3
	// is born at second 3 (its counters count from zero).
	a.Add(liveSnap(0, []procfs.Thread{thread(1, "main", 'S', 100, 10, time.Second), thread(2, "worker", 'S', 50, 5, time.Second)}))
	a.Add(liveSnap(1, []procfs.Thread{thread(1, "main", 'S', 110, 11, 2*time.Second), thread(2, "worker", 'S', 70, 6, 3*time.Second)}))
	a.Add(liveSnap(2, []procfs.Thread{thread(1, "main", 'S', 120, 12, 3*time.Second), thread(2, "worker", 'S', 90, 7, 4*time.Second)}))
	prev := a.Summary().Totals
	a.Add(liveSnap(3, []procfs.Thread{thread(1, "main", 'S', 130, 13, 4*time.Second), thread(3, "late", 'S', 5, 1, time.Second)}))
	s := a.Summary()
	tot := s.Totals
	require.NotNil(t, tot)
	assert.GreaterOrEqual(t, tot.VoluntarySwitches, prev.VoluntarySwitches, "totals never decrease")
	// main: 30, worker: 40 (kept after it exited), late: 5 since birth.
	assert.Equal(t, uint64(75), tot.VoluntarySwitches)
	assert.Equal(t, uint64(3+2+1), tot.InvoluntarySwitches)
	assert.InDelta(t, 3+3+1, tot.CPUSeconds, 1e-9)
	assert.InDelta(t, 75.0/3, s.ContextSwitches.VoluntaryPerSecond, 0.05)
	assert.Equal(t, 2, s.Threads)
	assert.Equal(t, uint64(3000), tot.HostSwitches)
	assert.Equal(t, 4, s.Samples)
}

func TestReusedTIDIsANewThread(t *testing.T) {
	a := New()
	a.Add(liveSnap(0, []procfs.Thread{thread(7, "old", 'S', 100, 0, 0)}))
	a.Add(liveSnap(1, []procfs.Thread{thread(7, "old", 'S', 150, 0, 0)}))
	reused := thread(7, "new", 'S', 3, 0, 0)
	reused.StartTime = 999 // same tid, a later thread
	a.Add(liveSnap(2, []procfs.Thread{reused}))
	assert.Equal(t, uint64(50+3), a.Summary().Totals.VoluntarySwitches)
}

func TestLockMergedAcrossAddressesBySite(t *testing.T) {
	// The same monitor, moved by the GC between two dumps: one lock with
	// two addresses.
	dump := func(addr string, at time.Time) *threaddump.Dump {
		text := fmt.Sprintf(`%s
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):

"owner" #10 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x10 runnable  [0x0]
   java.lang.Thread.State: RUNNABLE
	at app.Cache.refresh(Cache.java:40)
	- locked <%s> (a app.Cache)
	at app.Worker.run(Worker.java:10)

"w-1" #11 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x2 nid=0x11 waiting for monitor entry  [0x0]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at app.Cache.get(Cache.java:20)
	- waiting to lock <%s> (a app.Cache)
	at app.Worker.run(Worker.java:12)

"w-2" #12 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x3 nid=0x12 waiting for monitor entry  [0x0]
   java.lang.Thread.State: BLOCKED (on object monitor)
	at app.Cache.get(Cache.java:20)
	- waiting to lock <%s> (a app.Cache)
	at app.Worker.run(Worker.java:12)

`, at.Format("2006-01-02 15:04:05"), addr, addr, addr)
		ds, err := threaddump.ParseString(text)
		require.NoError(t, err)
		return ds[0]
	}
	a := New()
	a.Add(&snapshot.Snapshot{Dump: dump("0x00000000aaaa0000", t0)})
	a.Add(&snapshot.Snapshot{Dump: dump("0x00000000bbbb0000", t0.Add(10*time.Second))})
	s := a.Summary()
	require.Len(t, s.Locks, 1)
	l := s.Locks[0]
	assert.Equal(t, "monitor", l.Kind)
	assert.Equal(t, "app.Cache", l.Class)
	assert.Equal(t, []string{"0x00000000aaaa0000", "0x00000000bbbb0000"}, l.Addresses)
	assert.Equal(t, 2, l.Waiters)
	assert.Equal(t, 1.0, l.BlockedShare)
	assert.Equal(t, 2.0, l.AvgWaiters)
	// The second dump stands for the 10 s since the first: 2 waiters × 10 s.
	assert.Equal(t, 20.0, l.BlockedThreadSeconds)
	require.NotNil(t, l.WaitFrame)
	assert.Equal(t, "app.Cache.get(Cache.java:20)", *l.WaitFrame)
	assert.Equal(t, []FrameCount{{Frame: "app.Cache.refresh(Cache.java:40)", Samples: 2}}, l.OwnerFrames)
	// The ID is the address the lock was first seen at.
	assert.Equal(t, "monitor|app.Cache|0x00000000aaaa0000", l.ID)

	// The waiters' stacks carry the lock's ID, for its flame graph.
	var byLock int
	for _, st := range a.Stacks() {
		byLock += st.ByLock[l.ID]
	}
	assert.Equal(t, 4, byLock)
}

func TestThreadsPerConnectionSlope(t *testing.T) {
	a := New()
	// 1 main thread, an acceptor, and 21 threads per connected user, as in
	// the market-data server that ran 2,100 threads for 100 users.
	for i, users := range []int{1, 2, 4, 5, 8, 10, 10, 12} {
		threads := []procfs.Thread{thread(1, "main", 'S', 0, 0, 0), thread(2, "acceptor", 'S', 0, 0, 0)}
		for u := 0; u < users; u++ {
			for c := 0; c < 21; c++ {
				tid := 1000 + 100*u + c
				threads = append(threads, thread(tid, fmt.Sprintf("session-%d-chan-%d", u, c), 'S', 0, 0, 0))
			}
		}
		snap := liveSnap(i, threads)
		snap.Connections = &procfs.Connections{Established: users, ByLocalPort: map[int]int{7000: users}, Listening: []int{7000}}
		a.Add(snap)
	}
	s := a.Summary()
	tpc := s.ThreadsPerConnection
	require.NotNil(t, tpc)
	require.NotNil(t, tpc.Slope)
	assert.InDelta(t, 21, *tpc.Slope, 1e-6)
	assert.InDelta(t, 2, *tpc.Intercept, 1e-6)
	assert.InDelta(t, 1, *tpc.R2, 1e-9)
	assert.Equal(t, 1, tpc.MinConnections)
	assert.Equal(t, 12, tpc.MaxConnections)
	require.NotEmpty(t, tpc.GrowingPools)
	assert.Equal(t, "session-N-chan-N", tpc.GrowingPools[0].Pool)
	assert.InDelta(t, 21, tpc.GrowingPools[0].Slope, 1e-6)
	for _, g := range tpc.GrowingPools {
		assert.NotEqual(t, "main", g.Pool, "a pool that does not grow is not listed")
	}
	f := findKind(s, FindingThreadPerConnection)
	require.NotNil(t, f)
	assert.Equal(t, `21.0 threads per connection: pool "session-N-chan-N" grows with connections (21.0 per connection, R² 1.00).`, f.Summary)
	assert.Equal(t, SeverityWarning, f.Severity)
}

func TestWakeupStormOfPollingThreads(t *testing.T) {
	a := New()
	const pollers = 100
	for i := 0; i <= 10; i++ {
		var threads []procfs.Thread
		for p := 0; p < pollers; p++ {
			th := thread(100+p, fmt.Sprintf("md-poll-%d", p), 'S', uint64(20*i), 0, time.Duration(i)*time.Millisecond)
			th.Syscall = unix.SYS_CLOCK_NANOSLEEP // usleep(50 ms) in a loop
			threads = append(threads, th)
		}
		// A lock waiter that wakes as often is not a poller.
		w := thread(7, "locker", 'S', uint64(20*i), 0, 0)
		w.Syscall, w.SyscallArgs = unix.SYS_FUTEX, [5]uint64{0x1000, 128, 2, 0}
		threads = append(threads, w)
		snap := liveSnap(i, threads)
		snap.Host.ContextSwitches = uint64(2500 * i)
		a.Add(snap)
	}
	s := a.Summary()
	require.Len(t, s.Wakeups, 1)
	w := s.Wakeups[0]
	assert.Equal(t, "md-poll-N", w.Pool)
	assert.Equal(t, pollers, w.Threads)
	assert.InDelta(t, 50, w.PeriodMillis, 0.1)
	assert.InDelta(t, 2000, w.PerSecond, 0.1)
	assert.InDelta(t, 0.8, w.HostShare, 0.001)
	f := findKind(s, FindingWakeupStorm)
	require.NotNil(t, f)
	assert.Contains(t, f.Summary, "100 threads of pool \"md-poll-N\" wake every 50 ms")
	assert.Contains(t, f.Summary, "80 % of the host's context switches")
}

func TestCPUSaturation(t *testing.T) {
	a := New()
	for i := 0; i <= 5; i++ {
		var threads []procfs.Thread
		for p := 0; p < 6; p++ {
			th := thread(10+p, fmt.Sprintf("spin-%d", p), 'R', 0, uint64(50*i), time.Duration(i)*300*time.Millisecond)
			th.RunQueueWait = time.Duration(i) * 700 * time.Millisecond // runnable throughout, waiting 70 % of it
			threads = append(threads, th)
		}
		a.Add(liveSnap(i, threads))
	}
	s := a.Summary()
	sc := s.Scheduling
	require.NotNil(t, sc)
	assert.Equal(t, 6.0, sc.RunnableAvg)
	assert.InDelta(t, 1.8, sc.RunningAvg, 0.001)
	assert.InDelta(t, 0.7, sc.RunQueueWaitShare, 0.001)
	assert.InDelta(t, 4.2, sc.WaitingForCPUAvg, 0.001)
	assert.Len(t, sc.Suffering, 5)
	f := findKind(s, FindingCPUSaturation)
	require.NotNil(t, f)
	assert.Equal(t, SeverityCritical, f.Severity)
	assert.Contains(t, f.Summary, "6.00 runnable on average for 2 CPUs, of which 4.20 wait in a run queue (70 % of their runnable time)")
	assert.Equal(t, 0.9, s.CPUUse.ShareOfAllowed)
}

func TestFutexLocksAndConditions(t *testing.T) {
	a := New()
	loc := symbolize.Location{Module: "app", Symbol: "big_lock", SymbolSize: 40, Offset: 0x4040}
	for i := 0; i < 4; i++ {
		snap := liveSnap(i, []procfs.Thread{thread(1, "w-1", 'S', 0, 0, 0), thread(2, "w-2", 'S', 0, 0, 0), thread(3, "w-3", 'R', 0, 0, 0)})
		snap.Futexes = []procfs.FutexWait{
			{Address: 0x5000, Location: symbolize.Location{Module: "app", Symbol: "cv", SymbolSize: 48, SymbolOffset: 8}, Kind: procfs.FutexCondition, TIDs: []int{9, 10}},
		}
		if i%2 == 0 {
			snap.Futexes = append(snap.Futexes, procfs.FutexWait{Address: 0x4040, Location: loc, Kind: procfs.FutexLock, TIDs: []int{1, 2}})
		}
		a.Add(snap)
	}
	s := a.Summary()
	require.Len(t, s.Locks, 1)
	l := s.Locks[0]
	assert.Equal(t, "futex", l.Kind)
	assert.Equal(t, "big_lock", l.Class)
	assert.Equal(t, "big_lock (app+0x4040)", *l.Symbol)
	assert.Equal(t, 0.5, l.BlockedShare)
	assert.Equal(t, 1.0, l.AvgWaiters)
	// Two waiters asleep (no CPU time) through the 1 s before the third
	// sample; the first sample has no interval measured before it.
	assert.Equal(t, 2.0, l.BlockedThreadSeconds)
	assert.Equal(t, []string{"w-1 (tid 1)", "w-2 (tid 2)"}, l.WaiterThreads)
	require.Len(t, s.FutexWaits, 1)
	assert.Equal(t, "condition", s.FutexWaits[0].Kind)
	require.Len(t, s.Serialization, 1)
	sr := s.Serialization[0]
	assert.Equal(t, "w-N", sr.Pool)
	assert.Equal(t, 3.0, sr.Threads)
	assert.Equal(t, 1.0, sr.Running)
	assert.Equal(t, 2.0, sr.Queueing)
	f := findKind(s, FindingSerialization)
	require.NotNil(t, f)
	assert.Equal(t, `Futex big_lock (app+0x4040) serializes pool "w-N": of its 3 threads, 1.0 run on average while 2.0 queue for it.`, f.Summary)
}

func TestTimelinesAreDownsampledAndBounded(t *testing.T) {
	a := NewWithOptions(Options{MaxPoints: 16})
	for i := 0; i < 1000; i++ {
		a.Add(liveSnap(i, []procfs.Thread{thread(1, "main", 'S', uint64(10*i), 0, time.Duration(i)*time.Millisecond)}))
	}
	s := a.Summary()
	ids := map[string]Timeline{}
	for _, tl := range s.Timelines {
		ids[tl.ID] = tl
		for _, sr := range tl.Series {
			assert.LessOrEqual(t, len(sr.Points), 17, "%s/%s", tl.ID, sr.Name)
			assert.Greater(t, len(sr.Points), 4)
			for i := 1; i < len(sr.Points); i++ {
				assert.Greater(t, sr.Points[i].T, sr.Points[i-1].T, "points stay in time order")
			}
		}
	}
	require.Contains(t, ids, "context_switches")
	require.Contains(t, ids, "threads_by_state")
	require.Contains(t, ids, "cpu")
	// Averaging keeps the level: 10 voluntary switches per second throughout.
	for _, p := range ids["context_switches"].Series[0].Points {
		assert.InDelta(t, 10, p.V, 1e-9)
	}
	// The whole run is covered.
	pts := ids["threads_by_state"].Series[0].Points
	assert.Equal(t, t0.UnixMilli(), pts[0].T)
	assert.Greater(t, pts[len(pts)-1].T, t0.Add(900*time.Second).UnixMilli())

	b, err := json.Marshal(s.Timelines[0].Series[0].Points[:1])
	require.NoError(t, err)
	assert.Regexp(t, `^\[\[\d+,[\d.]+\]\]$`, string(b), "points are [t, v] pairs")
}

func TestTablesAreBounded(t *testing.T) {
	a := NewWithOptions(Options{MaxLocks: 10, MaxStacks: 50})
	for i := 0; i < 200; i++ {
		snap := liveSnap(i, []procfs.Thread{thread(1, "main", 'S', 0, 0, 0)})
		snap.Futexes = []procfs.FutexWait{{Address: uint64(0x1000 + i), Kind: procfs.FutexLock, TIDs: []int{1, 2}}}
		a.Add(snap)
	}
	assert.LessOrEqual(t, len(a.Summary().Locks), 10)

	var b strings.Builder
	b.WriteString("Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):\n\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "\"t-%d\" #%d prio=5 os_prio=0 tid=0x1 nid=0x%x runnable  [0x0]\n   java.lang.Thread.State: RUNNABLE\n\tat app.C.m%d(C.java:%d)\n\n", i, i+1, i+1, i, i)
	}
	ds, err := threaddump.ParseString(b.String())
	require.NoError(t, err)
	a.Add(&snapshot.Snapshot{Dump: ds[0]})
	stacks := a.Stacks()
	assert.LessOrEqual(t, len(stacks), 51)
	total := 0
	for _, st := range stacks {
		total += st.Count
	}
	assert.Equal(t, 300, total, "pruned stacks still count, as (other stacks)")
}

func TestConcurrentAddAndSummary(t *testing.T) {
	a := New()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			a.Add(liveSnap(i, []procfs.Thread{thread(1, "main", 'S', uint64(i), 0, 0)}))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			_ = a.Summary()
			_ = a.Stacks()
		}
	}()
	wg.Wait()
	assert.Equal(t, 200, a.Summary().Samples)
}

func TestDownsampled(t *testing.T) {
	d := newDownsampled(4)
	for i := 0; i < 9; i++ {
		d.add(t0.Add(time.Duration(i)*time.Second), float64(i))
	}
	pts := d.snapshot()
	assert.LessOrEqual(t, len(pts), 4)
	sum := 0.0
	for _, p := range pts {
		sum += p.V
	}
	assert.Greater(t, sum, 0.0)
	assert.Equal(t, t0.UnixMilli(), pts[0].T)
}

func TestLinearFit(t *testing.T) {
	var f linearFit
	for x := 0.0; x < 10; x++ {
		f.add(x, 3*x+1)
	}
	s, i, r2 := f.fit()
	assert.InDelta(t, 3, s, 1e-12)
	assert.InDelta(t, 1, i, 1e-12)
	assert.InDelta(t, 1, r2, 1e-12)

	var flat linearFit
	for i := 0; i < 5; i++ {
		flat.add(4, float64(i))
	}
	assert.False(t, flat.varies(), "x never moved: no line")
}

// A one-hour run at 1 Hz of a 4,000-thread process must stay flat in
// memory: per-thread state follows the live threads, series and tables are
// bounded. This feeds 300 samples (with thread churn) and checks that the
// heap does not grow between sample 100 and 300.
func TestMemoryStaysFlat(t *testing.T) {
	a := New()
	const n = 4000
	threads := make([]procfs.Thread, n)
	heapAt := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var at100 uint64
	for i := 0; i < 300; i++ {
		for k := range threads {
			tid := 10000 + k
			if k < 100 {
				tid += 100000 * (i % 7) // a churning pool: new threads every tick
			}
			threads[k] = thread(tid, fmt.Sprintf("worker-%d", k%50), 'S', uint64(i*k), uint64(i), time.Duration(i)*time.Millisecond)
			threads[k].StartTime = uint64(tid + i%7)
		}
		snap := liveSnap(i, append([]procfs.Thread(nil), threads...))
		snap.Futexes = []procfs.FutexWait{{Address: uint64(0x1000 + i), Kind: procfs.FutexLock, TIDs: []int{10001, 10002}}}
		snap.Connections = &procfs.Connections{Established: i % 17, ByLocalPort: map[int]int{80: i % 17}}
		a.Add(snap)
		if i == 100 {
			at100 = heapAt()
		}
	}
	at300 := heapAt()
	t.Logf("heap after 100 samples: %.1f MB, after 300: %.1f MB", float64(at100)/1e6, float64(at300)/1e6)
	assert.Less(t, at300, uint64(150<<20))
	assert.Less(t, float64(at300), float64(at100)*1.15+2e6, "memory grows with the run")
	_ = a.Summary()
}

func findKind(s *Summary, kind string) *Finding {
	for i := range s.Findings {
		if s.Findings[i].Kind == kind {
			return &s.Findings[i]
		}
	}
	return nil
}
