package procfs

import (
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

	"github.com/ctprof/ctprof/internal/testnative"
)

// openTaskFiles counts this process's descriptors on the target's
// per-thread files, by file name, from /proc/self/fd: what the reader
// really holds, not its own counters.
func openTaskFiles(t *testing.T, pid int) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	prefix := "/proc/" + strconv.Itoa(pid) + "/task/"
	out := map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, prefix) {
			continue
		}
		out[target[strings.LastIndexByte(target, '/')+1:]]++
	}
	return out
}

// When threads outnumber the descriptor cap, the descriptors go to
// schedstat, which every tick reads of every thread, and the threads
// beyond the cap are still carried over while idle (their schedstat opened
// afresh), with what a fresh read finds. Before, a thread without an open
// schedstat was read in full (five opens) on every tick: 60 µs a thread
// against 2.6 for a 30,000-thread process under a 20,000 file limit.
func TestThreadsBeyondTheDescriptorCapAreCarriedOver(t *testing.T) {
	const sleepers = 300
	p := testnative.Start(t, "many_threads", strconv.Itoa(sleepers))

	tests := []struct {
		name            string
		maxOpen         int
		schedOpen       int // schedstat descriptors kept after the first sweep
		otherOpenAtMost int
	}{
		{"threads beyond the cap", 120, 120, 0},
		{"room for some other files", 400, sleepers + 1, 400 - (sleepers + 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewFS("/proc").NewThreadReader(p.PID)
			require.NoError(t, err)
			defer r.Close()
			r.maxOpen = tt.maxOpen
			first, err := r.Read(nil)
			require.NoError(t, err)
			require.Len(t, first, sleepers+1)

			files := openTaskFiles(t, p.PID)
			assert.Equal(t, tt.schedOpen, files["schedstat"], "schedstat descriptors")
			others := 0
			for name, n := range files {
				if name != "schedstat" {
					others += n
				}
			}
			assert.LessOrEqual(t, others, tt.otherOpenAtMost, "other descriptors: %v", files)
			assert.LessOrEqual(t, files["schedstat"]+others, tt.maxOpen)
			assert.Equal(t, files["schedstat"], r.schedOpen)
			assert.Equal(t, files["schedstat"]+others, r.open)

			var carried []Thread
			require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
				before := r.Reused()
				carried, err = r.Read(nil)
				if err != nil {
					return err
				}
				if n := r.Reused() - before; n < sleepers {
					return fmt.Errorf("only %d of %d idle threads carried over", n, sleepers)
				}
				return nil
			}))
			files = openTaskFiles(t, p.PID)
			assert.LessOrEqual(t, files["schedstat"], tt.maxOpen)
			assert.Equal(t, r.open, files["schedstat"], "idle threads keep only schedstat: %v", files)

			fresh := readThreads(t, p.PID)
			byTID := map[int]Thread{}
			for _, th := range fresh {
				byTID[th.TID] = th
			}
			same := 0
			for _, c := range carried {
				f, ok := byTID[c.TID]
				if !ok || f.Timeslices != c.Timeslices || f.RunTime != c.RunTime {
					continue // it ran between the two sweeps
				}
				same++
				assert.Equal(t, f, c, "tid %d", c.TID)
			}
			assert.GreaterOrEqual(t, same, sleepers-tt.schedOpen+1, "threads beyond the cap compared")
		})
	}
}

// A first sweep of many threads is split over the CPUs. What it returns
// must be what one goroutine would return: every thread once, in the
// order the task directory lists them, with the deferred waits of the
// right threads, and the descriptors it kept counted.
func TestParallelFirstSweepMatchesTheListing(t *testing.T) {
	const sleepers = 2000
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // 4 workers on any machine
	p := testnative.Start(t, "many_threads", strconv.Itoa(sleepers))

	lister, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer lister.Close()
	listed, err := lister.listTIDs()
	require.NoError(t, err)
	require.Len(t, listed, sleepers+1)

	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	r.DeferWaits = true
	threads, err := r.Read(nil)
	require.NoError(t, err)
	tids := make([]int, len(threads))
	for i, th := range threads {
		tids[i] = th.TID
		assert.NotZero(t, th.StartTime, "tid %d", th.TID)
		assert.NotEmpty(t, th.Name, "tid %d", th.TID)
		assert.NotEmpty(t, th.CPUsAllowed, "tid %d", th.TID)
		if th.Sleeping() {
			assert.Equal(t, SyscallUnknown, th.Syscall, "tid %d: left for ReadWaits", th.TID)
		} else {
			// A sleeper the loaded machine caught awake: it runs.
			assert.Equal(t, SyscallRunning, th.Syscall, "tid %d: not asleep", th.TID)
		}
	}
	require.Equal(t, listed, tids, "listing order")

	r.ReadWaits(threads, nil)
	asleep := 0
	for _, th := range threads {
		if th.Sleeping() {
			asleep++
			assert.GreaterOrEqual(t, th.Syscall, 0, "tid %d (%s): its system call is read", th.TID, th.Name)
		}
	}
	assert.GreaterOrEqual(t, asleep, sleepers*9/10)

	files := openTaskFiles(t, p.PID)
	assert.Equal(t, sleepers+1, files["schedstat"])
	assert.Equal(t, files["schedstat"], r.schedOpen)
	held := 0
	for _, n := range files {
		held += n
	}
	assert.Equal(t, held, r.open)

	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		before := r.Reused()
		again, err := r.Read(nil)
		if err != nil {
			return err
		}
		if len(again) != sleepers+1 {
			return fmt.Errorf("%d threads", len(again))
		}
		if n := r.Reused() - before; n < sleepers {
			return fmt.Errorf("only %d of %d idle threads carried over", n, sleepers)
		}
		return nil
	}))
}

// Readers of several targets (serve samples each JVM it finds) share one
// file limit: together they keep no more descriptors open than the cap,
// and what one closes another may use.
func TestReadersOfSeveralTargetsShareTheDescriptorCap(t *testing.T) {
	const sleepers, allOpen = 150, 200
	a := testnative.Start(t, "many_threads", strconv.Itoa(sleepers))
	b := testnative.Start(t, "many_threads", strconv.Itoa(sleepers))
	held := heldFDs.Load()
	ra, err := NewFS("/proc").NewThreadReader(a.PID)
	require.NoError(t, err)
	defer ra.Close()
	rb, err := NewFS("/proc").NewThreadReader(b.PID)
	require.NoError(t, err)
	defer rb.Close()
	ra.allOpen, rb.allOpen = allOpen+int(held), allOpen+int(held)

	for i := range 3 {
		ta, err := ra.Read(nil)
		require.NoError(t, err)
		require.Len(t, ta, sleepers+1)
		tb, err := rb.Read(nil)
		require.NoError(t, err)
		require.Len(t, tb, sleepers+1, "threads beyond the shared cap are still read")
		fa, fb := 0, 0
		for _, n := range openTaskFiles(t, a.PID) {
			fa += n
		}
		for _, n := range openTaskFiles(t, b.PID) {
			fb += n
		}
		assert.LessOrEqual(t, fa+fb, allOpen, "descriptors of both readers")
		assert.Equal(t, fa, ra.open)
		assert.Equal(t, fb, rb.open)
		if i > 0 {
			// The first reader's threads are idle by now and keep only
			// schedstat open.
			assert.Greater(t, fb, 0, "the second reader got what the first left")
		}
	}
	ra.Close()
	assert.Zero(t, openTaskFiles(t, a.PID)["schedstat"], "Close releases every descriptor")
	_, err = rb.Read(nil)
	require.NoError(t, err)
	fb := 0
	for _, n := range openTaskFiles(t, b.PID) {
		fb += n
	}
	assert.Greater(t, fb, allOpen-sleepers-1, "what the first reader released goes to the second")
}

// fdSize is the size of this process's descriptor table (FDSize in
// /proc/self/status).
func fdSize(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "FDSize:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no FDSize in /proc/self/status")
	return 0
}

// The descriptor table is grown in one step to what a first sweep will
// open, and the descriptor that grew it is not left open.
func TestGrowFDTableGrowsItOnceAndLeavesNothingOpen(t *testing.T) {
	before := fdSize(t)
	open, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	want := min(2*before+1, int(lim.Cur)-1) // F_DUPFD stays below the limit
	require.Greater(t, want, before, "the table is already as large as the file limit allows")
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	growFDTable(int(f.Fd()), want)
	assert.GreaterOrEqual(t, fdSize(t), want)
	after, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	assert.Len(t, after, len(open)+1, "only the file the test opened")
}

// A first sweep during a thread dump leaves the JVM one CPU to print on,
// never leaving itself none.
func TestSweepLeavesTheTargetACPU(t *testing.T) {
	for _, tt := range []struct {
		procs    int
		leaveCPU bool
		want     int
	}{
		{procs: 1, want: 1},
		{procs: 1, leaveCPU: true, want: 1},
		{procs: 2, want: 2},
		{procs: 2, leaveCPU: true, want: 1},
		{procs: 8, leaveCPU: true, want: 7},
	} {
		prev := runtime.GOMAXPROCS(tt.procs)
		assert.Equal(t, tt.want, sweepCPUs(tt.leaveCPU), "%d CPUs, leave one: %v", tt.procs, tt.leaveCPU)
		runtime.GOMAXPROCS(prev)
	}
}
