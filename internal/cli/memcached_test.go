//go:build linux && amd64

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testservers"
)

// ctprof attach on real software nobody here wrote: Debian's memcached
// (stripped, no debug symbols of its own), 8 worker threads on the
// machine's CPUs, under a load that makes its workers queue on its locks
// (testservers.StartMemcachedUnderLoad says how): "stats cachedump" holds
// a slab class's LRU lock while setters queue on it, and the setters that
// hold an item lock while they wait make the next ones queue on the item
// locks (a convoy of two levels).
//
// The test checks what ctprof says against the truth read beside it:
// /proc/<pid>/task/*/syscall every millisecond (who was blocked in futex
// on which address), and gdb's backtraces of the same threads.
func TestAttachMemcachedUnderLoad(t *testing.T) {
	// The server and its load: internal/testservers.
	mc := testservers.StartMemcachedUnderLoad(t, 8)
	truth := watchFutexes(t, mc.PID)

	// Two runs: the names are the same in both.
	type run1 struct {
		Samples  int              `json:"samples"`
		Locks    []memcachedLock  `json:"locks"`
		Futex    []memcachedFutex `json:"futex_waits"`
		Findings []struct {
			Summary string `json:"summary"`
		} `json:"findings"`
		rawLocks  string
		byAddress map[string]memcachedLock
	}
	var runs [2]run1
	for i := range runs {
		code, stdout, stderr := run(t, "", "attach", strconv.Itoa(mc.PID), "--duration", "4s", "--interval", "20ms", "--format", "json")
		require.Equal(t, 0, code, stderr)
		r := &runs[i]
		require.NoError(t, json.Unmarshal([]byte(stdout), r))
		r.byAddress = map[string]memcachedLock{}
		for _, l := range r.Locks {
			r.byAddress[l.Address] = l
		}
		raw, _ := json.Marshal(r.Locks)
		r.rawLocks = string(raw)
		t.Logf("run %d: %d samples, %d locks: %s", i+1, r.Samples, len(r.Locks), lockSummary(r.Locks))
	}
	truth.stop()
	t.Logf("truth: %d sweeps of /proc/%d/task/*/syscall, futex waits on %d addresses", truth.sweeps, mc.PID, len(truth.futex))

	// The load queues the workers on the LRU lock most of the time: every
	// run sees native locks, and one of them in many samples.
	for i, r := range runs {
		require.NotEmpty(t, r.Locks, "run %d saw no lock under load", i+1)
		hot := hottest(r.Locks)
		// Blocked in most samples; a machine loaded enough leaves ctprof
		// few samples (5 in 4 s at a load of 30 on 2 CPUs).
		assert.GreaterOrEqual(t, hot.BlockedShare, 0.25, "run %d: the hottest lock, %s, was seldom waited on", i+1, hot.Class)
		assert.GreaterOrEqual(t, hot.WaitKinds["futex"], 3, "run %d: the hottest lock, %s, was waited on in few samples", i+1, hot.Class)
	}

	// (a) Names: stable, never a bare address. A lock both runs saw (the
	// same address) has the same class in both; the hottest one was seen
	// by both.
	bare := regexp.MustCompile(`^0x[0-9a-f]+$`)
	both := 0
	for _, r := range runs {
		for _, l := range r.Locks {
			assert.Equal(t, "futex", l.Kind, "%s", l.Class)
			assert.NotRegexp(t, bare, l.Class, "a lock named by its bare address")
			assert.NotEmpty(t, l.Class)
		}
	}
	for addr, l := range runs[0].byAddress {
		if l2, ok := runs[1].byAddress[addr]; ok {
			both++
			assert.Equal(t, l.Class, l2.Class, "the lock at %s changed its name between runs", addr)
		}
	}
	assert.NotZero(t, both, "no lock was seen by both runs: %s / %s", lockSummary(runs[0].Locks), lockSummary(runs[1].Locks))
	assert.Equal(t, hottest(runs[0].Locks).Class, hottest(runs[1].Locks).Class, "the hottest lock")

	// (b) Holders and waiters, against /proc.
	confirmed, pairs := 0, 0
	for i, r := range runs {
		for _, l := range r.Locks {
			addr, err := strconv.ParseUint(strings.TrimPrefix(l.Address, "0x"), 16, 64)
			require.NoError(t, err, l.Address)
			if l.Holder != nil {
				comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", mc.PID, l.Holder.TID))
				if assert.NoError(t, err, "run %d: %s: the holder %d is no thread of memcached", i+1, l.Class, l.Holder.TID) {
					assert.Regexp(t, `^(mc-|memcached)`, strings.TrimSpace(string(comm)), "the holder's thread")
					assert.Equal(t, strings.TrimSpace(string(comm)), l.Holder.Thread, "the holder's thread name")
				}
			}
			seen := truth.futex[addr]
			for _, w := range l.WaiterThreads {
				tid := tidOf(t, w)
				pairs++
				if seen[tid] {
					confirmed++
				} else {
					t.Logf("run %d: %s (%s): /proc never showed waiter %s in futex there (a wait shorter than a sweep)", i+1, l.Class, l.Address, w)
				}
			}
			if l.Class == hottest(r.Locks).Class {
				assert.NotEmpty(t, seen, "run %d: /proc never showed a thread in futex on the hottest lock %s (%s)", i+1, l.Class, l.Address)
				for _, w := range l.WaiterThreads {
					assert.True(t, seen[tidOf(t, w)], "run %d: %s: waiter %s never seen in futex on %s by /proc", i+1, l.Class, w, l.Address)
				}
			}
		}
	}
	// Short waits (an item lock held for a few microseconds) can fall
	// between two sweeps; most are seen.
	assert.GreaterOrEqual(t, confirmed*10, pairs*8, "waiters confirmed by /proc: %d of %d", confirmed, pairs)

	// (c) Where the waiters wait: memcached's own frames (stripped: module
	// and offset) or libevent's and libc's (by symbol). The hottest lock's
	// main site always, and every other site.
	//
	// The sampler unwinds a thread some time after it read the thread's
	// system call; a waiter on memcached's hot LRU lock often wakes, runs
	// and blocks again right there in between, and a stack read while it
	// ran mixes two moments ("anonymous memory+0x… ← memcached+0x164a5": a
	// heap pointer, then the return address of the pthread_mutex_unlock
	// that followed the lock). procfs.ThreadReader.StillBlocked drops such
	// a stack (the thread's run count changed), and the unwinder ends a
	// stack at a "return address" outside executable memory: none is kept.
	frame := regexp.MustCompile(`^(memcached\+0x[0-9a-f]+|libevent[-.\w]*\+0x[0-9a-f]+|[A-Za-z_][\w.@]*)$`)
	sites := map[string]bool{}
	good, mixed := 0, 0
	for i, r := range runs {
		hot := hottest(r.Locks)
		require.NotNil(t, hot.WaitFrame, "run %d: the hottest lock %s has no wait site: %s", i+1, hot.Class, r.rawLocks)
		require.NotEmpty(t, hot.WaitFrames)
		assert.Regexp(t, `^memcached\+0x[0-9a-f]+( ← \S+)*$`, *hot.WaitFrame, "run %d: %s: the main wait site", i+1, hot.Class)
		for _, l := range r.Locks {
			for _, wf := range l.WaitFrames {
				require.NotEmpty(t, wf.Frame)
				names := strings.Split(wf.Frame, " ← ")
				ok := strings.HasPrefix(names[0], "memcached+0x")
				for _, n := range names {
					ok = ok && frame.MatchString(n)
				}
				if !ok {
					mixed += wf.Samples
					t.Logf("run %d: %s: wait site %q in %d samples: not memcached's code", i+1, l.Class, wf.Frame, wf.Samples)
					continue
				}
				good += wf.Samples
				sites[names[0]] = true
			}
		}
	}
	assert.Zero(t, mixed, "wait sites that are not memcached's code: %d samples of %d", mixed, good+mixed)

	// (d) Idle is not contention: the listener and the idle workers wait
	// in epoll_wait (libevent's loop), the maintenance threads on
	// condition variables; none of it is a lock.
	assert.NotZero(t, truth.epoll[mc.PID], "/proc never showed the listener in epoll_wait")
	// The threads /proc saw in epoll_wait and never in futex (the
	// listener at least) are no lock's waiters.
	idleOnly := map[int]bool{}
	for tid := range truth.epoll {
		idleOnly[tid] = true
	}
	for _, tids := range truth.futex {
		for tid := range tids {
			delete(idleOnly, tid)
		}
	}
	assert.NotEmpty(t, idleOnly, "no thread was only ever in epoll_wait")
	for i, r := range runs {
		for _, l := range r.Locks {
			for _, w := range l.WaiterThreads {
				assert.False(t, idleOnly[tidOf(t, w)], "run %d: %s: waiter %s was only ever seen idle in epoll_wait", i+1, l.Class, w)
			}
		}
	}
	for i, r := range runs {
		for _, l := range r.Locks {
			for _, wf := range l.WaitFrames {
				assert.NotContains(t, wf.Frame, "epoll", "run %d: %s", i+1, l.Class)
				assert.NotContains(t, wf.Frame, "event_base_loop", "run %d: %s", i+1, l.Class)
			}
		}
		conds := 0
		for _, f := range r.Futex {
			if f.Kind == "condition" {
				conds++
				_, isLock := r.byAddress[f.Address]
				assert.False(t, isLock, "run %d: the condition %s is also a lock", i+1, f.Name)
				assert.Regexp(t, `^memcached\+0x`, f.Name, "a maintenance thread's condition")
			}
		}
		assert.NotZero(t, conds, "run %d: memcached's maintenance threads wait on conditions: %+v", i+1, r.Futex)
		for _, f := range r.Findings {
			// What the waiters wait in, before what the holder did.
			waiters, _, _ := strings.Cut(f.Summary, " held it")
			assert.NotContains(t, waiters, "epoll", "run %d: a finding about an idle wait: %s", i+1, f.Summary)
		}
	}

	// The unwinder against gdb, on the same threads.
	compareWithGDB(t, mc.PID, sites)
}

// memcachedLock is what this test reads of a lock's JSON.
type memcachedLock struct {
	nativeLock
	Kind          string         `json:"kind"`
	Address       string         `json:"address"`
	WaitKinds     map[string]int `json:"wait_kinds"`
	WaiterThreads []string       `json:"waiter_threads"`
	BlockedShare  float64        `json:"blocked_share"`
}

type memcachedFutex struct {
	Address string `json:"address"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
}

func hottest(locks []memcachedLock) memcachedLock {
	var best memcachedLock
	for _, l := range locks {
		if l.BlockedShare > best.BlockedShare || best.Class == "" {
			best = l
		}
	}
	return best
}

func lockSummary(locks []memcachedLock) string {
	var b strings.Builder
	for i, l := range locks {
		if i == 8 {
			fmt.Fprintf(&b, "… %d more", len(locks)-i)
			break
		}
		site := ""
		if l.WaitFrame != nil {
			site = " in " + *l.WaitFrame
		}
		holder := ""
		if l.Holder != nil {
			holder = fmt.Sprintf(", held by %s %d", l.Holder.Thread, l.Holder.TID)
		}
		fmt.Fprintf(&b, "[%s %s %.0f%%%s%s] ", l.Class, l.Address, 100*l.BlockedShare, site, holder)
	}
	return b.String()
}

var tidRE = regexp.MustCompile(`\(tid (\d+)\)$`)

func tidOf(t *testing.T, waiter string) int {
	t.Helper()
	m := tidRE.FindStringSubmatch(waiter)
	require.NotNil(t, m, "waiter %q names no tid", waiter)
	tid, _ := strconv.Atoi(m[1])
	return tid
}

// futexTruth is what /proc/<pid>/task/*/syscall showed during the runs.
type futexTruth struct {
	mu     sync.Mutex
	futex  map[uint64]map[int]bool // address → threads seen in futex(2) on it
	epoll  map[int]int             // thread → sweeps it was in epoll_wait
	sweeps int
	done   chan struct{}
	cancel context.CancelFunc
}

func (f *futexTruth) stop() {
	f.cancel()
	<-f.done
}

// watchFutexes sweeps pid's threads' /proc/<tid>/syscall every
// millisecond until stopped (at the latest when the test ends).
func watchFutexes(t *testing.T, pid int) *futexTruth {
	ctx, cancel := context.WithCancel(context.Background())
	f := &futexTruth{futex: map[uint64]map[int]bool{}, epoll: map[int]int{}, done: make(chan struct{}), cancel: cancel}
	t.Cleanup(f.stop)
	go func() {
		defer close(f.done)
		// Its own thread, ahead of the test's load and ctprof where the
		// machine lets it (root): a sweep late by a few milliseconds
		// misses the short waits.
		runtime.LockOSThread()
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10)
		var tids []int
		listed := time.Time{}
		for ctx.Err() == nil {
			if time.Since(listed) > 100*time.Millisecond {
				tids = taskIDs(pid)
				listed = time.Now()
			}
			for _, tid := range tids {
				nr, args, _, _, ok := readSyscall(pid, tid)
				if !ok {
					continue
				}
				switch nr {
				case 202: // futex
					if f.futex[args[0]] == nil {
						f.futex[args[0]] = map[int]bool{}
					}
					f.futex[args[0]][tid] = true
				case 232, 281: // epoll_wait, epoll_pwait
					f.epoll[tid]++
				}
			}
			f.sweeps++
			time.Sleep(time.Millisecond)
		}
	}()
	return f
}

func taskIDs(pid int) []int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// readSyscall reads /proc/<pid>/task/<tid>/syscall: the system call a
// thread is blocked in, its arguments, its stack pointer and program
// counter; ok false when the thread runs (or is gone).
func readSyscall(pid, tid int) (nr int, args [6]uint64, sp, pc uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		return 0, args, 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 9 {
		return 0, args, 0, 0, false // "running", or "-1 sp pc"
	}
	nr, err = strconv.Atoi(f[0])
	if err != nil || nr < 0 {
		return 0, args, 0, 0, false
	}
	var v [8]uint64
	for i := range v {
		v[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64)
		if err != nil {
			return 0, args, 0, 0, false
		}
	}
	copy(args[:], v[:6])
	return nr, args, v[6], v[7], true
}

// gdbFrame is one physical frame of gdb's backtrace: its program counter
// (0 for the innermost when gdb printed none) and the names gdb gave it
// (several where functions were inlined into it).
type gdbFrame struct {
	pc    uint64
	names []string
	from  string
}

var (
	gdbThreadRE = regexp.MustCompile(`^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)`)
	gdbFrameRE  = regexp.MustCompile(`^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+) \(.*?\)(?: (?:from|at) (\S+))?`)
)

// gdbThread is one thread of gdb's output: its physical frames and the
// registers it was stopped at.
type gdbThread struct {
	frames  []gdbFrame
	rip     uint64
	rsp     uint64
	haveRIP bool
	haveRSP bool
}

var gdbRegRE = regexp.MustCompile(`^(rip|rsp)\s+0x([0-9a-f]+)`)

// parseGDB reads the output of `thread apply all bt` and `thread apply
// all info registers rip rsp`: each thread's physical frames and
// registers by tid.
func parseGDB(out string) map[int]*gdbThread {
	threads := map[int]*gdbThread{}
	var cur *gdbThread
	for _, line := range strings.Split(out, "\n") {
		if m := gdbThreadRE.FindStringSubmatch(line); m != nil {
			tid, _ := strconv.Atoi(m[1])
			if threads[tid] == nil {
				threads[tid] = &gdbThread{}
			}
			cur = threads[tid]
			continue
		}
		if cur == nil {
			continue
		}
		if m := gdbRegRE.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseUint(m[2], 16, 64)
			if m[1] == "rip" {
				cur.rip, cur.haveRIP = v, true
			} else {
				cur.rsp, cur.haveRSP = v, true
			}
			continue
		}
		m := gdbFrameRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		var pc uint64
		if m[2] != "" {
			pc, _ = strconv.ParseUint(strings.TrimPrefix(m[2], "0x"), 16, 64)
		}
		// A frame without an address past the first is a function inlined
		// into the frame before it (gdb prints the address once).
		if n == 0 || pc != 0 || len(cur.frames) == 0 {
			cur.frames = append(cur.frames, gdbFrame{pc: pc, from: m[4]})
		}
		f := &cur.frames[len(cur.frames)-1]
		f.names = append(f.names, m[3])
	}
	return threads
}

// dropTailCalls removes the frames gdb made up from libc's debug
// information for tail calls (DW_TAG_call_site): their "return address"
// follows a jmp, not a call, and no such address is on the stack (e.g.
// __futex_abstimed_wait_cancelable64's jmp to __futex_abstimed_wait_common).
func dropTailCalls(frames []gdbFrame, mem *procfs.MemReader) []gdbFrame {
	var out []gdbFrame
	for i, f := range frames {
		if i > 0 && f.pc > 5 {
			var b [5]byte
			if mem.ReadStack(f.pc-5, b[:]) && (b[0] == 0xe9 || b[3] == 0xeb) {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// compareWithGDB compares procfs's unwinder (as ctprof's sampler uses it)
// with gdb's backtraces of the same moment: gdb stops every thread, prints
// their backtraces and registers into a file, and holds them stopped
// while this test unwinds each thread that sat in a system call from the
// registers gdb read, with the same memory. Comparing two moments instead
// would be a race: a waiter on a hot lock leaves and comes back to the
// same futex call at the same stack pointer from another call site.
// Tried up to 6 times, until a lock waiter (in pthread_mutex_lock) and an
// idle worker (in epoll_wait under event_base_loop) were both compared,
// and a waiter's first frame in memcached was a wait site ctprof reported.
func compareWithGDB(t *testing.T, pid int, sites map[string]bool) {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Fatalf("gdb is not installed: apt-get install gdb")
	}
	fs := procfs.NewFS("/proc")
	base := moduleBase(t, pid, "memcached")
	var waiter, idle bool
	compared, matched := 0, 0
	siteSeen := false
	for attempt := 1; attempt <= 6 && !(waiter && idle && siteSeen); attempt++ {
		g := stopWithGDB(t, pid)
		u := symbolize.NewUnwinder(fs.Target(pid))
		mem := fs.NewMemReader(pid)
		for tid, th := range g.threads {
			var insn [2]byte
			// Only threads stopped in a system call (the instruction
			// before rip is `syscall`): the sampler unwinds no other.
			if !th.haveRIP || !th.haveRSP || th.rip < 2 || !mem.ReadStack(th.rip-2, insn[:]) || insn != [2]byte{0x0f, 0x05} {
				continue
			}
			st := u.Unwind(symbolize.Regs{PC: th.rip, SP: th.rsp}, mem, symbolize.MaxStackFrames)
			frames := dropTailCalls(th.frames, mem)
			compared++
			if diff := diffStacks(st, frames, th.rip); diff != "" {
				t.Errorf("attempt %d: thread %d (stopped at sp %#x pc %#x): the unwinder and gdb disagree: %s\nours: %s\ngdb:  %s", attempt, tid, th.rsp, th.rip, diff, frameNames(st), gdbNames(th.frames))
				continue
			}
			matched++
			names := frameNames(st)
			if strings.Contains(names, "pthread_mutex_lock") {
				waiter = true
				// The first frame in memcached is a wait site ctprof
				// reported (for a waiter on a lock it saw).
				for _, f := range st {
					if f.Module == "memcached" {
						if sites[fmt.Sprintf("memcached+%#x", f.PC-base)] {
							siteSeen = true
						}
						break
					}
				}
			}
			if strings.Contains(names, "epoll_wait") && strings.Contains(names, "event_base_loop") {
				idle = true
			}
		}
		_ = mem.Close()
		_ = u.Close()
		g.release()
		t.Logf("gdb attempt %d: %d threads compared so far, %d the same; a lock waiter compared: %v, an idle worker: %v, a reported wait site confirmed: %v", attempt, compared, matched, waiter, idle, siteSeen)
	}
	assert.NotZero(t, compared, "gdb stopped no thread in a system call")
	assert.True(t, waiter, "no thread waiting in pthread_mutex_lock was compared with gdb")
	assert.True(t, idle, "no idle worker in epoll_wait was compared with gdb")
	assert.True(t, siteSeen, "no waiter compared with gdb waited at a site ctprof reported (%v)", sites)
}

// gdbStop is a process gdb holds stopped, and what gdb printed of it.
type gdbStop struct {
	threads map[int]*gdbThread
	release func()
}

// stopWithGDB attaches gdb to pid, has it write every thread's backtrace
// and registers into a file, and returns while gdb still holds the
// process stopped (in a `shell` command that waits for a file to
// appear); release lets gdb detach and waits for it to exit.
func stopWithGDB(t *testing.T, pid int) gdbStop {
	t.Helper()
	dir := t.TempDir()
	logFile, ready, goOn := filepath.Join(dir, "gdb.log"), filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(ctx, "gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p", strconv.Itoa(pid),
		"-ex", "set logging file "+logFile, "-ex", "set logging overwrite on", "-ex", "set logging redirect on",
		"-ex", "set logging enabled on",
		"-ex", "thread apply all bt", "-ex", "thread apply all info registers rip rsp",
		"-ex", "set logging enabled off",
		"-ex", fmt.Sprintf("shell touch %s; while [ ! -e %s ]; do sleep 0.05; done", ready, goOn))
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	release := func() {
		_ = os.WriteFile(goOn, nil, 0o600)
		err := <-exited
		cancel()
		require.NoError(t, err, "gdb: %s", out.String())
	}
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-exited:
			cancel()
			t.Fatalf("gdb exited (%v) before it had stopped the process: %s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		release()
		require.NoError(t, err)
	}
	threads := parseGDB(string(b))
	if len(threads) == 0 {
		release()
		t.Fatalf("gdb printed no backtrace: %s", b)
	}
	return gdbStop{threads: threads, release: release}
}

// moduleBase is the load address of pid's mapping of the named binary
// (the start of its first mapping, at file offset 0).
func moduleBase(t *testing.T, pid int, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && filepath.Base(f[5]) == name && f[2] == "00000000" {
			start, _, _ := strings.Cut(f[0], "-")
			v, err := strconv.ParseUint(start, 16, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no mapping of %s in /proc/%d/maps", name, pid)
	return 0
}

// diffStacks says how the unwinder's stack differs from gdb's ("" when
// they agree): the same number of frames, the same program counter at
// each depth (gdb's innermost may have none printed), and where the
// unwinder names a function, gdb names it too (libc's debug symbols give
// gdb its internal names, "__GI___nanosleep" for "nanosleep"; a stripped
// memcached gives it "??").
func diffStacks(ours []symbolize.StackFrame, gdb []gdbFrame, pc uint64) string {
	if len(ours) == 0 {
		return "no frames unwound"
	}
	if len(ours) != len(gdb) {
		return fmt.Sprintf("%d frames, gdb %d", len(ours), len(gdb))
	}
	for i, g := range gdb {
		f := ours[i]
		want := g.pc
		if i == 0 && want == 0 {
			want = pc
		}
		if f.PC != want {
			return fmt.Sprintf("frame %d: pc %#x, gdb %#x", i, f.PC, want)
		}
		if f.Function != "" {
			short := strings.TrimLeft(f.Function, "_")
			found := false
			for _, n := range g.names {
				if strings.Contains(n, short) {
					found = true
				}
			}
			if !found {
				return fmt.Sprintf("frame %d at %#x: %s, gdb %v", i, f.PC, f.Function, g.names)
			}
		} else if f.Module != "memcached" && !strings.HasPrefix(f.Module, "lib") {
			return fmt.Sprintf("frame %d at %#x: module %q", i, f.PC, f.Module)
		}
	}
	return ""
}

func frameNames(st []symbolize.StackFrame) string {
	var n []string
	for _, f := range st {
		n = append(n, fmt.Sprintf("%s@%#x", f.Name(), f.PC))
	}
	return strings.Join(n, " ")
}

func gdbNames(st []gdbFrame) string {
	var n []string
	for _, f := range st {
		n = append(n, fmt.Sprintf("%s@%#x", strings.Join(f.names, "/"), f.pc))
	}
	return strings.Join(n, " ")
}
