package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/nativewait"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// nframes builds a stack innermost first from "module:function" items.
func nframes(items ...string) []symbolize.StackFrame {
	out := make([]symbolize.StackFrame, len(items))
	for i, it := range items {
		m, fn, _ := strings.Cut(it, ":")
		out[i] = symbolize.StackFrame{PC: uint64(0x1000 + 0x10*i), Module: m, Function: fn, Offset: 0x10}
	}
	return out
}

// A server that names none of its threads, where every request thread
// waits for a row on a condition of its own transaction: one resource
// with many waiters (not one lock row per address), each waiter's verdict
// in waits[], the idle pool apart, threads pooled by start routine, and a
// key with no address in it.
func TestNativeResourcesGroupByWaitSite(t *testing.T) {
	rowWait := nframes("libc.so.6:__futex_abstimed_wait_common", "libc.so.6:pthread_cond_timedwait", "db:lock_wait", "db:row_search",
		"db:execute", "db:do_command", "db:handle_connection", "libc.so.6:start_thread", "libc.so.6:clone3")
	idleWorker := nframes("libc.so.6:", "libc.so.6:pthread_cond_wait", "db:worker_main", "libc.so.6:start_thread", "libc.so.6:clone3")
	a := New()
	const requests = 6
	for i := 0; i < 5; i++ {
		threads := []procfs.Thread{thread(42, "db", 'S', uint64(i), 0, 0)}
		threads[0].Syscall = unix.SYS_EPOLL_WAIT
		var futexes []procfs.FutexWait
		for r := 0; r < requests; r++ {
			th := thread(100+r, "db", 'S', uint64(i), 0, 0)
			th.Syscall, th.SyscallArgs, th.Stack = unix.SYS_FUTEX, [5]uint64{uint64(0x7f0000 + 0x100*r + 0x1000*i), 0x189, 0, 1}, rowWait
			threads = append(threads, th)
			futexes = append(futexes, procfs.FutexWait{Address: th.SyscallArgs[0], Kind: procfs.FutexCondition, Op: "FUTEX_WAIT_BITSET_PRIVATE", TIDs: []int{th.TID},
				Location: symbolize.Location{Address: th.SyscallArgs[0], Module: "anonymous memory", Offset: th.SyscallArgs[0] - 0x700000}})
		}
		for w := 0; w < 2; w++ {
			th := thread(200+w, "db", 'S', uint64(i), 0, 0)
			th.Syscall, th.SyscallArgs, th.Stack = unix.SYS_FUTEX, [5]uint64{uint64(0x9000 + 0x40*w), 0x80, 0}, idleWorker
			threads = append(threads, th)
			futexes = append(futexes, procfs.FutexWait{Address: th.SyscallArgs[0], Kind: procfs.FutexCondition, TIDs: []int{th.TID}})
		}
		snap := liveSnap(i, threads)
		snap.Futexes = futexes
		a.Add(snap)
	}
	s := a.Summary()
	require.NotEmpty(t, s.ContentionSites)
	top := s.ContentionSites[0]
	assert.Equal(t, "condition|db|lock_wait ← row_search", top.ID)
	assert.True(t, top.Native)
	assert.Equal(t, "condition", top.Kind)
	assert.Equal(t, requests, top.Waiters)
	assert.InDelta(t, requests, top.AvgWaiters, 1e-9)
	assert.Equal(t, 5*requests, top.Instances, "a condition per transaction, every one counted")
	assert.Equal(t, 1, top.MaxInstanceWaiters)
	assert.True(t, top.Ownerless)
	assert.False(t, top.Striped)
	assert.Equal(t, "handle_connection", top.Pool, "unnamed threads pool by start routine")
	assert.NotRegexp(t, `0x[0-9a-f]{5,}`, top.ID, "no address in the key")
	assert.Len(t, s.ContentionSites, 1, "the idle pool is no resource: %+v", s.ContentionSites)
	assert.Empty(t, s.Locks, "conditions are no lock rows")

	verdicts := map[string]int{}
	for _, w := range s.Waits {
		verdicts[w.Verdict]++
		if w.Verdict == VerdictContention {
			assert.Equal(t, top.ID, w.Resource)
			assert.Equal(t, "lock_wait ← row_search", w.Frame)
			assert.Contains(t, w.Reason, "inside work")
		}
	}
	assert.Equal(t, map[string]int{VerdictContention: requests, VerdictIdle: 3}, verdicts)

	f := findKind(s, FindingLockHotspot)
	require.NotNil(t, f)
	assert.Equal(t, "resource "+top.ID, f.Subject)
	assert.Contains(t, f.Summary, "lock_wait ← row_search")
	assert.Equal(t, SeverityCritical, f.Severity)
	pools := map[string]int{}
	for _, p := range s.Pools {
		pools[p.Name] = p.Threads
	}
	assert.Equal(t, requests, pools["handle_connection"])
	assert.Equal(t, 2, pools["worker_main"])
}

// A request thread that blocks on its lock and its socket between
// requests, thousands of times a second, in timed waits, does not poll:
// the wake-up finding is for threads whose waits are idle.
func TestNativeRequestThreadsAreNoPollers(t *testing.T) {
	rowWait := nframes("libc.so.6:", "libc.so.6:pthread_cond_timedwait", "db:lock_wait", "db:row_search",
		"db:execute", "db:do_command", "db:handle_connection", "libc.so.6:start_thread", "libc.so.6:clone3")
	a := New()
	for i := 0; i < 6; i++ {
		th := thread(100, "db", 'S', uint64(500*i), 0, time.Duration(i)*time.Millisecond)
		th.Syscall, th.SyscallArgs, th.Stack = unix.SYS_FUTEX, [5]uint64{0x7f0000, 0x189, 0, 1}, rowWait
		snap := liveSnap(i, []procfs.Thread{th})
		snap.Futexes = []procfs.FutexWait{{Address: 0x7f0000, Kind: procfs.FutexCondition, TIDs: []int{100}}}
		a.Add(snap)
	}
	s := a.Summary()
	assert.Empty(t, s.Wakeups)
}

// A resource's key: its kind, the module of its wait site and the site;
// without a stack, the futex word's stable name stands for the site and is
// kept whole (it is no Java frame with a line to cut off), and a module
// name's '|' (a mapped file's name is the target's to choose) cannot split
// the key.
func TestNativeSiteID(t *testing.T) {
	shm := snapshot.FutexWait{Address: 0x7f00, Location: symbolize.Location{Module: "shared memory (file /dev/shm/pool)", Offset: 0x100}}
	odd := snapshot.FutexWait{Address: 0x7e00, Location: symbolize.Location{Module: "shared memory (file /dev/shm/a|b)", Offset: 0x40}}
	for _, tc := range []struct {
		name string
		w    nativewait.Wait
		addr uint64
		want string
	}{
		{"a wait site", nativewait.Wait{Kind: nativewait.Mutex, Site: "take_slot ← serve_request", Module: "app"}, 0x7f00, "mutex|app|take_slot ← serve_request"},
		{"no stack: the word's name, whole", nativewait.Wait{Kind: nativewait.Mutex}, 0x7f00, "mutex|shared memory (file /dev/shm/pool)|futex shared memory (file /dev/shm/pool)+0x100"},
		{"no stack, no word", nativewait.Wait{Kind: nativewait.Condition}, 0x1234, "condition||futex (unnamed)"},
		{"a module with a bar", nativewait.Wait{Kind: nativewait.Mutex}, 0x7e00, "mutex|shared memory (file /dev/shm/a¦b)|futex shared memory (file /dev/shm/a|b)+0x40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nativeSiteID(tc.w, []snapshot.FutexWait{shm, odd}, tc.addr)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, strings.SplitN(tc.want, "|", 3)[1], strings.SplitN(got, "|", 3)[1], "the module part as readers split it")
		})
	}
}
