package procfs

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/load"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

func readThreads(t *testing.T, pid int) []Thread {
	t.Helper()
	r, err := NewFS("/proc").NewThreadReader(pid)
	require.NoError(t, err)
	defer r.Close()
	threads, err := r.Read(nil)
	require.NoError(t, err)
	return threads
}

func TestFutexHotspotNamesTheMutexAndSetsConditionsApart(t *testing.T) {
	const contenders, idle = 4, 3
	p := testnative.Start(t, "mutex_contention", strconv.Itoa(contenders), strconv.Itoa(idle), "3000")
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))

	var lock, cond *FutexWait
	err = testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		lock, cond = nil, nil
		for _, fw := range GroupFutexWaits(threads, sym) {
			switch fw.Location.Symbol {
			case "contended_mutex":
				lock = &fw
			case "work_ready":
				cond = &fw
			}
		}
		// One contender holds the mutex (sleeping in nanosleep); the
		// others queue. Under load one may be between lock calls.
		if lock == nil || len(lock.TIDs) < contenders-2 || cond == nil || len(cond.TIDs) != idle {
			return fmt.Errorf("lock %+v cond %+v", lock, cond)
		}
		return nil
	})
	require.NoError(t, err)

	assert.Equal(t, FutexLock, lock.Kind, "a contended mutex is a lock")
	assert.Equal(t, "FUTEX_WAIT_PRIVATE", lock.Op)
	assert.Equal(t, "mutex_contention", lock.Location.Module)
	assert.Zero(t, lock.Location.SymbolOffset, "the futex word is the mutex's first field")
	assert.Regexp(t, `^contended_mutex \(mutex_contention\+0x[0-9a-f]+\)$`, lock.Location.String())

	assert.Equal(t, FutexCondition, cond.Kind, "idle workers wait for a signal: not contention")
	assert.NotZero(t, cond.Location.SymbolOffset, "glibc waits on a word inside pthread_cond_t")

	// The waiters are the contender threads, by name.
	names := map[int]string{}
	for _, th := range readThreads(t, p.PID) {
		names[th.TID] = th.Name
	}
	for _, tid := range lock.TIDs {
		if n, ok := names[tid]; ok { // a waiter may have moved on meanwhile
			assert.True(t, strings.HasPrefix(n, "contender-"), n)
		}
	}
}

func TestThreadReaderSeesThousandsOfThreads(t *testing.T) {
	const n = 2000
	p := testnative.Start(t, "many_threads", strconv.Itoa(n))
	// READY comes once every thread started; on a loaded machine some may
	// not have reached their sleep yet: wait until they all have.
	var threads []Thread
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads = readThreads(t, p.PID)
		for _, th := range threads {
			if strings.HasPrefix(th.Name, "sleeper-") && !th.Sleeping() {
				return fmt.Errorf("%s state %c", th.Name, th.State)
			}
		}
		return nil
	}))
	require.Len(t, threads, n+1)
	seen := map[int]bool{}
	sleepers := 0
	for _, th := range threads {
		assert.False(t, seen[th.TID], "tid %d twice", th.TID)
		seen[th.TID] = true
		assert.NotZero(t, th.StartTime)
		assert.NotEmpty(t, th.CPUsAllowed)
		if strings.HasPrefix(th.Name, "sleeper-") {
			sleepers++
			assert.True(t, th.Sleeping(), "%s state %c", th.Name, th.State)
			assert.NotEqual(t, SyscallUnknown, th.Syscall, "root may read syscall")
		}
	}
	assert.Equal(t, n, sleepers)
}

func TestThreadReaderUnderChurn(t *testing.T) {
	p := testnative.Start(t, "thread_churn")
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	ephemeral := 0
	for i := 0; i < 200; i++ {
		threads, err := r.Read(nil)
		require.NoError(t, err, "threads exiting mid-sweep are normal")
		require.NotEmpty(t, threads)
		for _, th := range threads {
			require.NotZero(t, th.TID)
			require.NotEmpty(t, th.Name)
			if th.Name == "ephemeral" {
				ephemeral++
			}
		}
	}
	assert.Positive(t, ephemeral, "the sweeps caught short-lived threads")
}

// The reader lists the task directory only when the thread count says a
// thread is new: a process whose threads stay put is listed once, and a
// thread started between two sweeps is in the second.
func TestThreadReaderListsOnlyWhenThreadsAreNew(t *testing.T) {
	idle := testnative.Start(t, "many_threads", "50")
	r, err := NewFS("/proc").NewThreadReader(idle.PID)
	require.NoError(t, err)
	defer r.Close()
	for i := 0; i < 5; i++ {
		threads, err := r.Read(nil)
		require.NoError(t, err)
		require.Len(t, threads, 51)
	}
	assert.Equal(t, 1, r.lists, "a stable process is listed once")

	// New threads in this test process: a goroutine locked to its OS
	// thread keeps that thread to itself, so each one needs a new thread.
	self, err := NewFS("/proc").NewThreadReader(os.Getpid())
	require.NoError(t, err)
	defer self.Close()
	before, err := self.Read(nil)
	require.NoError(t, err)
	known := map[int]bool{}
	for _, th := range before {
		known[th.TID] = true
	}
	const extra = 16
	tids := make(chan int)
	release := make(chan struct{})
	defer close(release)
	for i := 0; i < extra; i++ {
		go func() {
			runtime.LockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	started, fresh := map[int]bool{}, 0
	for i := 0; i < extra; i++ {
		tid := <-tids
		started[tid] = true
		if !known[tid] {
			fresh++
		}
	}
	require.Positive(t, fresh, "the runtime had to start threads")
	threads, err := self.Read(nil)
	require.NoError(t, err)
	for _, th := range threads {
		delete(started, th.TID)
	}
	assert.Empty(t, started, "threads started since the last sweep are read")
}

func TestThreadReaderReportsProcessGone(t *testing.T) {
	p := testnative.Start(t, "many_threads", "10")
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Read(nil)
	require.NoError(t, err)
	p.Stop()
	_, err = r.Read(nil)
	assert.True(t, errors.Is(err, ErrProcessGone), "got %v", err)

	_, err = NewFS("/proc").NewThreadReader(p.PID)
	assert.True(t, errors.Is(err, ErrProcessGone), "got %v", err)
}

func TestConnectionsOfALoopbackServer(t *testing.T) {
	p := testnative.Start(t, "tcp_server", "1")
	port, err := strconv.Atoi(p.Value("PORT"))
	require.NoError(t, err)
	const clients = 5
	for i := 0; i < clients; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	fs := NewFS("/proc")
	var c *Connections
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		c, err = fs.Connections(p.PID, 0)
		if err != nil {
			return err
		}
		if c.Established != clients {
			return fmt.Errorf("%d established", c.Established)
		}
		return nil
	}))
	assert.Equal(t, map[int]int{port: clients}, c.ByLocalPort)
	assert.Equal(t, []int{port}, c.Listening)
	assert.Equal(t, clients, c.Inbound)
	assert.Equal(t, 1, c.Peers, "all clients come from 127.0.0.1")

	other, err := fs.Connections(p.PID, port+1)
	require.NoError(t, err)
	assert.Zero(t, other.Established, "--port counts only clients of that port")
	assert.Equal(t, []int{port}, other.Listening)

	_, err = fs.Connections(1<<22+1, 0)
	assert.True(t, errors.Is(err, ErrProcessGone), "got %v", err)
}

func TestProcessAndJVMDetection(t *testing.T) {
	p := testnative.Start(t, "many_threads", "3")
	info, err := NewFS("/proc").Process(p.PID)
	require.NoError(t, err)
	assert.Equal(t, "many_threads", info.Name)
	assert.Equal(t, 4, info.Threads)
	assert.Positive(t, info.CPUs)
	assert.Contains(t, info.Cmdline, "many_threads")
	assert.False(t, NewFS("/proc").IsJVM(p.PID))
}

func TestHost(t *testing.T) {
	h1, err := NewFS("/proc").Host()
	require.NoError(t, err)
	assert.Positive(t, h1.CPUs)
	assert.Positive(t, h1.ContextSwitches)
	// The load averages as gopsutil reads them (two reads may straddle
	// the kernel's update, every 5 s).
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		h, err := NewFS("/proc").Host()
		if err != nil {
			return err
		}
		avg, err := load.Avg()
		if err != nil {
			return err
		}
		if got, want := [3]float64{h.Load1, h.Load5, h.Load15}, [3]float64{avg.Load1, avg.Load5, avg.Load15}; got != want {
			return fmt.Errorf("load averages %v, gopsutil %v", got, want)
		}
		return nil
	}))
	require.NoError(t, testnative.PollUntil(10*time.Second, func() error {
		h2, err := NewFS("/proc").Host()
		if err != nil {
			return err
		}
		if h2.ContextSwitches <= h1.ContextSwitches {
			return fmt.Errorf("host context switches did not grow")
		}
		return nil
	}))
}

// The reader re-reads cached descriptors with pread: the kernel must hand
// out fresh content each time, so counters of a busy thread advance.
func TestCountersAdvanceThroughCachedFiles(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "3", "0", "1000")
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	first, err := r.Read(nil)
	require.NoError(t, err)
	before := map[int]Thread{}
	for _, th := range first {
		before[th.TID] = th
	}
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		now, err := r.Read(nil)
		if err != nil {
			return err
		}
		for _, th := range now {
			b, ok := before[th.TID]
			if !ok || !strings.HasPrefix(th.Name, "contender-") {
				continue
			}
			if th.Voluntary < b.Voluntary || th.RunTime < b.RunTime {
				return fmt.Errorf("counter went down: %+v -> %+v", b, th)
			}
			if th.Voluntary > b.Voluntary && th.RunTime > b.RunTime && th.Timeslices > b.Timeslices {
				return nil
			}
		}
		return fmt.Errorf("no contender's counters advanced yet")
	}))
	assert.Positive(t, r.open, "descriptors are cached between sweeps")
}

// The netlink path and the /proc path must agree on the same process.
func TestConnectionsNetlinkAgreesWithProc(t *testing.T) {
	p := testnative.Start(t, "tcp_server", "1")
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p.Value("PORT")))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	fs := NewFS("/proc")
	require.True(t, fs.sameNetNS(p.PID))
	var viaNetlink *Connections
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		var err error
		viaNetlink, err = fs.Connections(p.PID, 0)
		if err != nil {
			return err
		}
		if viaNetlink.Established != 3 {
			return fmt.Errorf("%d established", viaNetlink.Established)
		}
		return nil
	}))
	// A root other than "/proc" never uses netlink: same machine, /proc path.
	viaProc, err := NewFS("/proc/").Connections(p.PID, 0)
	require.NoError(t, err)
	assert.Equal(t, viaNetlink.Established, viaProc.Established)
	assert.Equal(t, viaNetlink.ByLocalPort, viaProc.ByLocalPort)
	assert.Equal(t, viaNetlink.Listening, viaProc.Listening)
	assert.Equal(t, viaNetlink.Peers, viaProc.Peers)
	assert.Equal(t, viaNetlink.Inbound, viaProc.Inbound)
}

// A sleeping thread that has not run since the previous sweep keeps its
// state, counters, system call and wait channel: the reader carries them
// over from the last full read when schedstat has not moved, instead of
// reading four more files. What it carries over must equal what a fresh
// reader (which reads everything) sees; a thread that woke in between is
// read again.
func TestIdleThreadsAreCarriedOverExactly(t *testing.T) {
	idle := testnative.Start(t, "many_threads", "50")
	r, err := NewFS("/proc").NewThreadReader(idle.PID)
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Read(nil)
	require.NoError(t, err)
	require.Zero(t, r.Reused(), "the first sweep reads every file")

	var carried []Thread
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		before := r.Reused()
		carried, err = r.Read(nil)
		if err != nil {
			return err
		}
		if n := r.Reused() - before; n < 50 {
			return fmt.Errorf("only %d of 50 idle threads carried over", n)
		}
		return nil
	}))
	fresh := readThreads(t, idle.PID)
	byTID := map[int]Thread{}
	for _, th := range fresh {
		byTID[th.TID] = th
	}
	same := 0
	for _, c := range carried {
		f, ok := byTID[c.TID]
		if !ok || f.Timeslices != c.Timeslices || f.RunTime != c.RunTime || f.RunQueueWait != c.RunQueueWait {
			// It ran between the two sweeps, or woke and waits for a CPU
			// (a thread still starting on a loaded machine): nothing to
			// compare.
			continue
		}
		same++
		assert.Equal(t, f, c, "tid %d", c.TID)
	}
	assert.GreaterOrEqual(t, same, 50, "idle threads compared")

	// Pollers wake every 50 ms: every sweep reads them again.
	busy := testnative.Start(t, "tcp_server", "4")
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", busy.Value("PORT")))
	require.NoError(t, err)
	defer c.Close()
	rb, err := NewFS("/proc").NewThreadReader(busy.PID)
	require.NoError(t, err)
	defer rb.Close()
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		th, err := rb.Read(nil)
		if err != nil {
			return err
		}
		polls := 0
		for _, x := range th {
			if x.Name == "session-poll" {
				polls++
			}
		}
		if polls < 3 {
			return fmt.Errorf("%d pollers so far", polls)
		}
		return nil
	}))
	for i := 0; i < 3; i++ {
		time.Sleep(200 * time.Millisecond)
		before := rb.Reused()
		th, err := rb.Read(nil)
		require.NoError(t, err)
		// The idle ones (main, the acceptor, the client's reader) may be
		// carried over; the 3 pollers, which woke 4 times since, may not.
		assert.LessOrEqual(t, rb.Reused()-before, len(th)-3, "pollers are read afresh")
	}
}
