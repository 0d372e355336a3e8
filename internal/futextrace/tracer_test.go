package futextrace

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

// requestCounts asks counted_waits for its counters (SIGUSR1) and reads
// its COUNTS line.
func requestCounts(t *testing.T, p *testnative.Process) map[string]uint64 {
	t.Helper()
	return p.Request(t, syscall.SIGUSR1, "COUNTS")
}

func hexValue(t *testing.T, p *testnative.Process, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(p.Value(key), "0x"), 16, 64)
	require.NoError(t, err, "%s in %q", key, p.Output())
	return v
}

// threadByName is the tid of the target's thread called comm.
func threadByName(t *testing.T, pid int, comm string) int {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			tid, _ := strconv.Atoi(e.Name())
			return tid
		}
	}
	t.Fatalf("no thread %q in %d", comm, pid)
	return 0
}

// merge adds b's futexes to the running totals by address.
func merge(into map[uint64]*Futex, b Batch) {
	for _, f := range b.Futexes {
		m := into[f.Addr]
		if m == nil {
			c := f
			c.Durations = append([]time.Duration(nil), f.Durations...)
			into[f.Addr] = &c
			continue
		}
		m.Waits += f.Waits
		m.Again += f.Again
		m.Traced += f.Traced
		m.Woken += f.Woken
		m.AgainTraced += f.AgainTraced
		m.TimedOut += f.TimedOut
		m.Timed += f.Timed
		m.Interrupted += f.Interrupted
		m.Failed += f.Failed
		m.Total += f.Total
		m.Max = max(m.Max, f.Max)
		m.Durations = append(m.Durations, f.Durations...)
		m.TIDs = append(m.TIDs, f.TIDs...)
		m.Stacks = append(m.Stacks, f.Stacks...)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the exact futex tracer needs root or CAP_PERFMON; this test runs as root (make test does)")
	}
}

func TestCountedWaits(t *testing.T) {
	requireRoot(t)
	p := testnative.Start(t, "counted_waits")
	counted, timed, global, heap := hexValue(t, p, "COUNTED"), hexValue(t, p, "TIMED"), hexValue(t, p, "GLOBAL"), hexValue(t, p, "HEAP")
	waiter := threadByName(t, p.PID, "waiter")

	tr, err := Open(p.PID, Options{StackEvery: 20})
	require.NoError(t, err)
	defer tr.Close()

	tr.Read() // what came before the first COUNTS line is not compared
	c1 := requestCounts(t, p)
	all := map[uint64]*Futex{}
	var calls float64
	var traced, lost uint64
	var cost, elapsed time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		b := tr.Read()
		merge(all, b)
		calls, traced, lost, cost, elapsed = calls+b.Calls, traced+b.Traced, lost+b.Lost, cost+b.Cost, elapsed+b.Elapsed
		if f := all[counted]; f != nil && f.Traced >= 1500 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the counted futex was not traced 1500 times in 30 s: %+v", all[counted])
	}
	c2 := requestCounts(t, p)
	b := tr.Read()
	merge(all, b)
	calls, traced, lost, cost, elapsed = calls+b.Calls, traced+b.Traced, lost+b.Lost, cost+b.Cost, elapsed+b.Elapsed
	t.Logf("%.0f blocking calls, %d traced, %d lost, tracer CPU %v in %v", calls, traced, lost, cost, elapsed)

	f := all[counted]
	require.NotNil(t, f, "no waits on the counted word %#x", counted)
	progCalls := c2["calls"] - c1["calls"]
	progWoken := c2["woken"] - c1["woken"]
	progMean := time.Duration((c2["total_ns"] - c1["total_ns"]) / max(progWoken, 1))
	t.Logf("program: %d calls (%d woken, %d EAGAIN), mean %v, max %v", progCalls, progWoken, c2["again"]-c1["again"], progMean, time.Duration(c2["max_ns"]))
	t.Logf("tracer: %.0f waits + %.0f EAGAIN (%d traced, %d woken), p50 %v, p99 %v, max %v, mean %v", f.Waits, f.Again, f.Traced, f.Woken, Quantile(sortedCopy(f.Durations), 0.5), Quantile(sortedCopy(f.Durations), 0.99), f.Max, f.Total/time.Duration(max(f.Woken+f.TimedOut, 1)))

	assert.Equal(t, flagPrivate|OpWait, f.Op, "FUTEX_WAIT_PRIVATE")
	assert.Contains(t, f.TIDs, waiter)
	assert.InEpsilon(t, float64(progCalls), f.Waits+f.Again, 0.10, "the tracer's calls on the counted word vs the program's own count")
	// A call's time in the kernel is less than the program's clock around
	// it, by the clock reads and the syscall's entry: the tracer's mean is
	// at most the program's, and most of it on a loaded machine.
	mean := f.Total / time.Duration(max(f.Woken+f.TimedOut+f.Interrupted+f.Failed, 1))
	assert.LessOrEqual(t, mean, progMean+progMean/20)
	assert.GreaterOrEqual(t, mean, progMean/2)
	// The waker sleeps 1 ms between wakes (never less), and a median is
	// no more than a few times the mean of a distribution skewed right.
	p50 := Quantile(sortedCopy(f.Durations), 0.5)
	assert.Greater(t, p50, 500*time.Microsecond)
	assert.Less(t, p50, 3*progMean)
	assert.LessOrEqual(t, f.Max, time.Duration(c2["max_ns"]), "a traced wait outlasted the longest the program timed")

	// Every call on the timed word ends by its 5 ms timeout.
	if tf := all[timed]; assert.NotNil(t, tf, "no waits on the timed word %#x", timed) {
		progTimeouts := c2["timeouts"] - c1["timeouts"]
		t.Logf("timed word: program %d timeouts, tracer %.0f waits, %d traced, %d timed out, p50 %v", progTimeouts, tf.Waits, tf.Traced, tf.TimedOut, Quantile(sortedCopy(tf.Durations), 0.5))
		assert.InEpsilon(t, float64(progTimeouts), tf.Waits, 0.10)
		assert.Equal(t, tf.Traced, tf.TimedOut)
		assert.Equal(t, tf.Traced, tf.Timed, "every call had a timeout")
		assert.GreaterOrEqual(t, Quantile(sortedCopy(tf.Durations), 0.5), 5*time.Millisecond)
	}
	for name, addr := range map[string]uint64{"global": global, "heap": heap} {
		m := all[addr]
		if assert.NotNil(t, m, "no waits on the %s mutex %#x", name, addr) {
			assert.Greater(t, m.Waits, 0.0)
			assert.Equal(t, flagPrivate|OpWait, m.Op, name)
		}
	}
	checkStacks(t, p.PID, f)
}

func sortedCopy(d []time.Duration) []time.Duration {
	c := append([]time.Duration(nil), d...)
	sortDurations(c)
	return c
}

// checkStacks looks at the counted futex's stack samples: registers in
// the process's mappings, a copy readable at SP and nowhere below it, and
// the unwinder's frames once it unwinds.
func checkStacks(t *testing.T, pid int, f *Futex) {
	t.Helper()
	require.NotEmpty(t, f.Stacks, "no stack sample on the counted word")
	maps := readMaps(t, pid)
	u := symbolize.NewUnwinder(procfs.NewFS("/proc").Target(pid))
	defer u.Close()
	for i, s := range f.Stacks {
		assert.True(t, maps.exec(s.Regs.PC), "PC %#x in no executable mapping", s.Regs.PC)
		assert.True(t, maps.in(s.Regs.SP), "SP %#x in no mapping", s.Regs.SP)
		var w [8]byte
		assert.True(t, s.Memory.ReadStack(s.Regs.SP, w[:]))
		assert.False(t, s.Memory.ReadStack(s.Regs.SP-8, w[:]))
		assert.False(t, s.Memory.ReadStack(s.Regs.SP+uint64(len(s.Memory.Data))-4, w[:]))
		frames := u.Unwind(s.Regs, s.Memory, symbolize.MaxStackFrames)
		if len(frames) == 0 {
			t.Logf("the unwinder gave no frames (not landed yet?)")
			continue
		}
		names := make([]string, len(frames))
		for i, fr := range frames {
			names[i] = fr.Name()
		}
		if i == 0 {
			t.Logf("a waiter's stack from a sample: %v", names)
		}
		assert.Contains(t, strings.Join(names, " "), "counted_wait", "the waiter's stack: %v", names)
	}
}

type mapping struct {
	lo, hi uint64
	exec   bool
}

type mappings []mapping

func readMaps(t *testing.T, pid int) mappings {
	t.Helper()
	fh, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "maps"))
	require.NoError(t, err)
	defer fh.Close()
	var ms mappings
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		lo, hi, _ := strings.Cut(fs[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		ms = append(ms, mapping{lo: l, hi: h, exec: strings.Contains(fs[1], "x")})
	}
	return ms
}

func (ms mappings) in(a uint64) bool {
	for _, m := range ms {
		if a >= m.lo && a < m.hi {
			return true
		}
	}
	return false
}

func (ms mappings) exec(a uint64) bool {
	for _, m := range ms {
		if a >= m.lo && a < m.hi {
			return m.exec
		}
	}
	return false
}

// TestCountedWaitsSampled forces the sampling windows (a rate far above
// MaxTracedRate): the counted word's calls, estimated from the windows,
// are still close to the program's own count, and the traced durations
// are still the program's.
func TestCountedWaitsSampled(t *testing.T) {
	requireRoot(t)
	p := testnative.Start(t, "counted_waits", "20", "2")
	counted := hexValue(t, p, "COUNTED")
	tr, err := Open(p.PID, Options{MaxTracedRate: 300, Period: 50 * time.Millisecond})
	require.NoError(t, err)
	defer tr.Close()

	// The program's counts are taken on both sides of the tracer's first
	// and last reads: the calls of the tracer's span lie between the
	// inner and the outer difference, whatever the signal's latency.
	c0 := requestCounts(t, p)
	tr.Read()
	c1 := requestCounts(t, p)
	all := map[uint64]*Futex{}
	var calls float64
	var traced uint64
	exact := true
	start := time.Now()
	for time.Since(start) < 3*time.Second {
		time.Sleep(100 * time.Millisecond)
		b := tr.Read()
		merge(all, b)
		calls, traced, exact = calls+b.Calls, traced+b.Traced, exact && b.Exact
	}
	c2 := requestCounts(t, p)
	b := tr.Read()
	c3 := requestCounts(t, p)
	merge(all, b)
	calls, traced, exact = calls+b.Calls, traced+b.Traced, exact && b.Exact
	f := all[counted]
	require.NotNil(t, f)
	inner, outer := float64(c2["calls"]-c1["calls"]), float64(c3["calls"]-c0["calls"])
	progWoken := c2["woken"] - c1["woken"]
	est := f.Waits + f.Again
	t.Logf("%.0f calls estimated, %d traced (%.1f%%); counted word: program %.0f to %.0f calls (%d woken), tracer %.0f + %.0f EAGAIN from %d traced", calls, traced, 100*float64(traced)/calls, inner, outer, progWoken, f.Waits, f.Again, f.Traced)
	assert.False(t, exact, "the counts were scaled from windows")
	assert.Less(t, float64(traced), calls/2, "most calls untraced")
	assert.Greater(t, f.Traced, 50)
	// The windows sample a twentieth to a tenth of the time, so the
	// estimate follows the rate's swings on a loaded machine: 0.89-1.15
	// of the program's count over twelve runs here, idle and with three
	// CPU hogs; 1.27 once in a make test beside three busy loops;
	// 1.01-1.38 over ten runs beside seven (yes > /dev/null), on
	// 2026-12-03, and 0.70-1.55 beside six for a variant that timed the
	// windows at the middle of their ioctls. Without the scaling it would
	// be a tenth or less; counted twice, twice.
	assert.GreaterOrEqual(t, est, 0.5*inner, "the estimate of the counted word's calls")
	assert.LessOrEqual(t, est, 1.8*outer, "the estimate of the counted word's calls")
	if f.Woken > 20 && progWoken > 0 {
		progMean := time.Duration((c2["total_ns"] - c1["total_ns"]) / progWoken)
		mean := f.Total / time.Duration(f.Woken+f.TimedOut+f.Interrupted+f.Failed)
		t.Logf("mean wait: program %v, tracer %v", progMean, mean)
		assert.Less(t, mean, 2*progMean)
	}
}

// TestSync traces the threads it is given and no others.
func TestSync(t *testing.T) {
	requireRoot(t)
	p := testnative.Start(t, "counted_waits")
	tids, err := listTasks(p.PID)
	require.NoError(t, err)
	require.Greater(t, len(tids), 3)
	tr, err := Open(p.PID, Options{})
	require.NoError(t, err)
	defer tr.Close()
	assert.Equal(t, len(tids), tr.Read().Threads)

	waiter := threadByName(t, p.PID, "waiter")
	others := []int{}
	for _, tid := range tids {
		if tid != waiter {
			others = append(others, tid)
		}
	}
	require.NoError(t, tr.Sync(others))
	tr.Read()
	// Until the timer thread's timed-out waits (every 5 ms) show up, the
	// waiter's (every millisecond) must not.
	timer := threadByName(t, p.PID, "timer")
	deadline := time.Now().Add(10 * time.Second)
	for seen := 0; seen < 20; {
		require.True(t, time.Now().Before(deadline), "the timer thread's waits were not traced")
		time.Sleep(20 * time.Millisecond)
		b := tr.Read()
		assert.Equal(t, len(others), b.Threads)
		for _, f := range b.Futexes {
			assert.NotContains(t, f.TIDs, waiter, "the waiter is no longer traced")
			if slicesContains(f.TIDs, timer) {
				seen += f.Traced
			}
		}
	}
	require.NoError(t, tr.Sync(append(others, waiter, 1<<22-1))) // and a thread that does not exist
	deadline = time.Now().Add(10 * time.Second)
	for {
		b := tr.Read()
		assert.Equal(t, len(tids), b.Threads)
		found := false
		for _, f := range b.Futexes {
			found = found || slicesContains(f.TIDs, waiter)
		}
		if found {
			break
		}
		require.True(t, time.Now().Before(deadline), "the waiter's waits were not traced again")
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, tr.Close())
	assert.Error(t, tr.Sync(tids), "closed")
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestThousandThreads traces a process of a thousand threads: four events
// and one ring each, the rings' memory within tens of megabytes.
func TestThousandThreads(t *testing.T) {
	requireRoot(t)
	p := testnative.Start(t, "many_threads", "1000")
	start := time.Now()
	tr, err := Open(p.PID, Options{})
	require.NoError(t, err)
	opened := time.Since(start)
	defer tr.Close()
	b := tr.Read()
	assert.Equal(t, 1001, b.Threads)
	mapped := mappedPerf(t)
	t.Logf("1001 threads: Open took %v, %.1f MB of perf rings mapped, %v of the tracer's CPU", opened, float64(mapped)/1e6, b.Cost)
	assert.Less(t, mapped, int64(64<<20))
	require.NoError(t, tr.Close())
	assert.Zero(t, mappedPerf(t), "Close unmaps every ring")
}

// mappedPerf is the bytes of perf rings this process maps.
func mappedPerf(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	var sum int64
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "[perf_event]") && !strings.HasSuffix(l, "anon_inode:[perf_event]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(l)[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		z, _ := strconv.ParseUint(hi, 16, 64)
		sum += int64(z - a)
	}
	return sum
}
