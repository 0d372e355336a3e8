package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

func fr(module, function string) symbolize.StackFrame {
	return symbolize.StackFrame{PC: 0x1000, Module: module, Function: function, Offset: 4}
}

// The wait site is the first frames of the program above the waiting
// machinery (internal/nativewait), whatever the modules are called.
func TestNativeWaitSite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack []symbolize.StackFrame
		want  string
	}{
		{"no stack", nil, ""},
		{"glibc mutex", []symbolize.StackFrame{fr("libc.so.6", "__lll_lock_wait"), fr("libc.so.6", "pthread_mutex_lock"), fr("server", "post_entry"), fr("server", "worker_loop"), fr("libc.so.6", "start_thread")}, "post_entry ← worker_loop"},
		{"a library's own wrapper counts as the program's", []symbolize.StackFrame{fr("libc.so.6", "syscall"), fr("libfoo.so.1", "foo_lock"), fr("server", "main")}, "foo_lock ← main"},
		{"stripped: module and offset", []symbolize.StackFrame{fr("libc.so.6", "__lll_lock_wait"), {PC: 9, Module: "server", Offset: 0x4d740}, {PC: 9, Module: "server", Offset: 0x4d800}}, "server+0x4d740 ← server+0x4d800"},
		{"one module (static binary)", []symbolize.StackFrame{fr("app", "__lll_lock_wait"), fr("app", "pthread_mutex_lock"), fr("app", "post_entry")}, "post_entry"},
		{"one frame", []symbolize.StackFrame{fr("libc.so.6", "epoll_wait")}, "epoll_wait"},
		{"only the caller left", []symbolize.StackFrame{fr("libc.so.6", "__lll_lock_wait"), fr("server", "main")}, "main"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, nativeWaitSite(tc.stack))
		})
	}
}

// A native target's unwound stacks: the waiters' site and the holder's
// stack in the lock table and its finding, every blocked thread's stack in
// the stack table (the flame graph, folded, pprof and speedscope), the
// lock's waiters as BLOCKED on it.
func TestNativeStacksInLocksFindingsAndStackTable(t *testing.T) {
	waiting := []symbolize.StackFrame{fr("libc.so.6", "__lll_lock_wait"), fr("libc.so.6", "pthread_mutex_lock"), fr("server", "post_entry"), fr("server", "worker_loop"), fr("libc.so.6", "start_thread")}
	holding := []symbolize.StackFrame{fr("libc.so.6", "clock_nanosleep"), fr("libc.so.6", "nanosleep"), fr("server", "slow_flush"), fr("server", "post_entry"), fr("server", "worker_loop")}
	idle := []symbolize.StackFrame{fr("libc.so.6", "epoll_wait"), fr("server", "event_loop")}
	a := New()
	for i := 0; i < 4; i++ {
		th := []procfs.Thread{
			thread(1, "worker-1", 'S', uint64(10*i), 0, time.Duration(i)*time.Millisecond),
			thread(2, "worker-2", 'S', uint64(10*i), 0, time.Duration(i)*time.Millisecond),
			thread(3, "worker-3", 'S', uint64(10*i), 0, time.Duration(i)*time.Millisecond),
			thread(4, "poller", 'S', uint64(i), 0, 0),
		}
		for k := range th {
			th[k].Syscall = 202
		}
		th[0].Stack, th[1].Stack, th[2].Stack, th[3].Stack = waiting, waiting, holding, idle
		th[2].Syscall = 230
		s := liveSnap(i, th)
		s.Futexes = []procfs.FutexWait{{
			Address: 0x55550000a040, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE", Value: 2, TIDs: []int{1, 2},
			Location: symbolize.Location{Address: 0x55550000a040, Module: "server", Offset: 0x4040, Symbol: "log_lock", SymbolSize: 40},
			Holder:   &procfs.LockHolder{Lock: "mutex", TID: 3},
		}}
		a.Add(s)
	}
	s := a.Summary()
	l := futexLockOf(s, `^log_lock$`)
	require.NotNil(t, l, "%+v", s.Locks)
	require.NotEmpty(t, l.WaitFrames)
	assert.Equal(t, FrameCount{Frame: "post_entry ← worker_loop", Samples: 8}, l.WaitFrames[0])
	require.NotNil(t, l.WaitFrame)
	assert.Equal(t, "post_entry ← worker_loop", *l.WaitFrame)
	require.NotNil(t, l.Holder)
	assert.Equal(t, []string{"clock_nanosleep", "nanosleep", "slow_flush", "post_entry", "worker_loop"}, l.Holder.Stack)
	assert.Contains(t, l.Holder.Runs, "at slow_flush ← post_entry")

	var f *Finding
	for i := range s.Findings {
		if s.Findings[i].Kind == FindingLockHotspot {
			f = &s.Findings[i]
		}
	}
	require.NotNil(t, f, "%+v", s.Findings)
	assert.Contains(t, f.Summary, "wait on futex log_lock (server+0x4040) in post_entry ← worker_loop")
	assert.Contains(t, strings.Join(f.Evidence, "\n"), "the holder's stack at that sample: clock_nanosleep ← nanosleep ← slow_flush ← post_entry ← worker_loop")
	assert.Contains(t, f.NextStep, "post_entry ← worker_loop")

	stacks := map[string]*FoldedStack{}
	for _, st := range a.Stacks() {
		stacks[strings.Join(st.Frames, ";")] = st
	}
	w := stacks["start_thread;worker_loop;post_entry;pthread_mutex_lock;__lll_lock_wait"]
	require.NotNil(t, w, "stacks: %v", stacks)
	assert.Equal(t, 8, w.Count)
	assert.Equal(t, 8, w.InState("BLOCKED"))
	assert.Equal(t, map[string]int{l.ID: 8}, w.ByLock)
	assert.Equal(t, map[string]int{"worker-1": 4, "worker-2": 4}, byThread(w), "each waiter by its own name")
	p := stacks["event_loop;epoll_wait"]
	require.NotNil(t, p)
	assert.Equal(t, 4, p.InState("WAITING"))
	assert.Empty(t, p.ByLock)
	assert.Equal(t, 4, stacks["worker_loop;post_entry;slow_flush;nanosleep;clock_nanosleep"].Count)
	assert.InDelta(t, time.Second, s.DumpInterval(), float64(time.Millisecond), "a sample stands for the interval between samples")
}
