package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// A mutex held across its holder's own idle wait for input is a gate: a
// prefork server's children queue on the accept mutex while one of them
// polls the listening sockets with it held. Its waiters are idle; a mutex
// whose holder was not seen so (no Across), was seen elsewhere than where
// its idle stack was read, waits inside its work, or waits on a condition
// (which lets the mutex go) stays a lock.
func TestNativeGateMutex(t *testing.T) {
	bottom := []string{"srv:main", "libc.so.6:__libc_start_call_main", "libc.so.6:__libc_start_main", "srv:_start"}
	stack := func(items ...string) []string { return append(items, bottom...) }
	lockWait := stack("libc.so.6:__pthread_mutex_lock_full", "srv:accept_loop")
	const word, sp, pc = 0x7f00aa000000, 0x7ffd0000, 0x7f0011223344
	tests := []struct {
		name    string
		holder  []string // the holder's stack
		syscall int
		across  *procfs.HeldAcross // nil: the holder was not seen blocked with it held
		gate    bool
	}{
		{"held across the loop's wait for a connection", stack("libc.so.6:epoll_wait", "srv:accept_loop"), unix.SYS_EPOLL_WAIT,
			&procfs.HeldAcross{Syscall: unix.SYS_EPOLL_WAIT, SP: sp, PC: pc}, true},
		{"a poll of the one listening socket", stack("libc.so.6:poll", "srv:accept_loop"), unix.SYS_POLL,
			&procfs.HeldAcross{Syscall: unix.SYS_POLL, SP: sp, PC: pc}, true},
		{"not seen blocked with the mutex held", stack("libc.so.6:epoll_wait", "srv:accept_loop"), unix.SYS_EPOLL_WAIT, nil, false},
		{"seen blocked at another place than its idle stack's", stack("libc.so.6:epoll_wait", "srv:accept_loop"), unix.SYS_EPOLL_WAIT,
			&procfs.HeldAcross{Syscall: unix.SYS_EPOLL_WAIT, SP: sp + 0x40, PC: pc}, false},
		{"held while reading inside its work", stack("libc.so.6:read", "srv:read_map", "srv:lookup", "srv:handle", "srv:accept_loop"), unix.SYS_READ,
			&procfs.HeldAcross{Syscall: unix.SYS_READ, SP: sp, PC: pc}, false},
		{"a condition's wait, which lets the mutex go", stack("libc.so.6:", "libc.so.6:pthread_cond_wait", "srv:accept_loop"), unix.SYS_FUTEX,
			&procfs.HeldAcross{Syscall: unix.SYS_FUTEX, SP: sp, PC: pc}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New()
			for i := 0; i < 4; i++ {
				h := thread(10, "srv", 'S', uint64(i), 0, 0)
				h.Syscall, h.SyscallSP, h.SyscallPC, h.Stack = tc.syscall, sp, pc, nframes(tc.holder...)
				h.SyscallArgs = [5]uint64{3, 0x7ffe0000, 1, ^uint64(0)}
				if tc.syscall == unix.SYS_FUTEX {
					h.SyscallArgs = [5]uint64{0x7f00bb000000, 0x189, 0, 0}
				}
				threads := []procfs.Thread{h}
				var tids []int
				for w := 0; w < 4; w++ {
					th := thread(20+w, "srv", 'S', uint64(i), 0, 0)
					th.Syscall, th.SyscallArgs, th.SyscallSP, th.Stack = unix.SYS_FUTEX, [5]uint64{word, 6}, 0x7ffc0000, nframes(lockWait...)
					threads = append(threads, th)
					tids = append(tids, th.TID)
				}
				snap := liveSnap(i, threads)
				snap.Futexes = []procfs.FutexWait{{Address: word, Kind: procfs.FutexLock, Op: "FUTEX_LOCK_PI", TIDs: tids,
					Holder: &procfs.LockHolder{Lock: "PI mutex", TID: 10, Across: tc.across}}}
				a.Add(snap)
			}
			s := a.Summary()
			waiters := map[string]int{}
			for _, w := range s.Waits {
				if w.TID >= 20 {
					waiters[w.Verdict]++
				}
			}
			if !tc.gate {
				assert.Equal(t, map[string]int{VerdictContention: 4}, waiters)
				require.NotEmpty(t, s.ContentionSites)
				assert.Equal(t, "mutex|srv|accept_loop ← main", s.ContentionSites[0].ID)
				assert.NotEmpty(t, s.Locks)
				return
			}
			assert.Equal(t, map[string]int{VerdictIdle: 4}, waiters)
			for _, w := range s.Waits {
				if w.TID >= 20 {
					assert.Contains(t, w.Reason, "a gate in front of the wait for work")
				}
			}
			assert.Empty(t, s.ContentionSites)
			assert.Empty(t, s.Locks)
			for _, f := range s.Findings {
				assert.NotContains(t, f.Summary, "accept_loop", f.Kind)
			}
		})
	}
}

// A binary whose names arrive mid-run (debuginfod answers in the
// background): its first samples name a wait site by module and offset,
// the later ones by function, at the same program counters. It is one
// resource, under the better name, with every sample's waiters; a thread
// whose stack was not read again since keeps counting there too.
func TestNativeSiteNamedMidRun(t *testing.T) {
	frames := func(named bool) []symbolize.StackFrame {
		st := []symbolize.StackFrame{
			{PC: 0x7f0000001000, Module: "libc.so.6", Function: "__lll_lock_wait", Offset: 0x20},
			{PC: 0x7f0000002000, Module: "libc.so.6", Function: "pthread_mutex_lock", Offset: 0x90},
			{PC: 0x555500014d40, Module: "srv", Offset: 0x14d40},
			{PC: 0x555500015e10, Module: "srv", Offset: 0x15e10},
			{PC: 0x555500016f00, Module: "srv", Offset: 0x16f00},
			{PC: 0x555500017000, Module: "srv", Offset: 0x17000},
			{PC: 0x7f0000003000, Module: "libc.so.6", Function: "start_thread", Offset: 0x10},
			{PC: 0x7f0000004000, Module: "libc.so.6", Function: "clone3", Offset: 0x10},
		}
		if named {
			for i, fn := range []string{"append_log", "commit", "handle", "worker_main"} {
				st[2+i].Function, st[2+i].Offset = fn, 0x40
			}
		}
		return st
	}
	unnamed, named := frames(false), frames(true)
	a := New()
	for i := 0; i < 6; i++ {
		var threads []procfs.Thread
		var tids []int
		for w := 0; w < 3; w++ {
			th := thread(20+w, "srv", 'S', uint64(i), 0, 0)
			th.Syscall, th.SyscallArgs = unix.SYS_FUTEX, [5]uint64{0x555500100040, 0x80, 2}
			th.Stack = unnamed
			if i >= 3 && w > 0 {
				th.Stack = named // thread 20, first in the sample, was not read again
			}
			threads = append(threads, th)
			tids = append(tids, th.TID)
		}
		snap := liveSnap(i, threads)
		snap.Futexes = []procfs.FutexWait{{Address: 0x555500100040, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE", Value: 2, TIDs: tids}}
		a.Add(snap)
	}
	s := a.Summary()
	require.Len(t, s.ContentionSites, 1, "%+v", s.ContentionSites)
	cs := s.ContentionSites[0]
	assert.Equal(t, "mutex|srv|append_log ← commit", cs.ID)
	assert.Equal(t, 3, cs.Waiters)
	assert.InDelta(t, 3, cs.AvgWaiters, 1e-9, "every sample's waiters, before and after the names")
	for _, w := range s.Waits {
		assert.Equal(t, "append_log ← commit", w.Frame, "thread %d's wait site by the better names", w.TID)
		assert.NotContains(t, w.Reason, "+0x", "thread %d", w.TID)
	}

	// The kernel's trace copied a waiter's stack before the names arrived
	// and before any sample saw a thread wait there; the samples after see
	// it named. Its exact waits count at the named resource.
	a = New()
	for i := 0; i < 3; i++ {
		th := thread(20, "srv", 'S', uint64(i), 0, 0)
		if i > 0 {
			th.Syscall, th.SyscallArgs = unix.SYS_FUTEX, [5]uint64{0x555500100040, 0x80, 2}
			th.Stack = named
		}
		snap := liveSnap(i, []procfs.Thread{th})
		if i == 0 {
			snap.FutexTrace = &snapshot.FutexTrace{Elapsed: time.Second, Calls: 50, Exact: true, Traced: 50, TracedShare: 1,
				Futexes: []snapshot.TracedFutex{{Address: 0x555500100040, Kind: snapshot.FutexLock, Op: "FUTEX_WAIT_PRIVATE", Waits: 50, Traced: 50,
					Total: 200 * time.Millisecond, TIDs: []int{20}, Stacks: [][]symbolize.StackFrame{unnamed}}}}
		} else {
			snap.Futexes = []procfs.FutexWait{{Address: 0x555500100040, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE", Value: 2, TIDs: []int{20}}}
		}
		a.Add(snap)
	}
	s = a.Summary()
	require.Len(t, s.ContentionSites, 1, "%+v", s.ContentionSites)
	cs = s.ContentionSites[0]
	assert.Equal(t, "mutex|srv|append_log ← commit", cs.ID)
	require.NotNil(t, cs.Exact)
	assert.InDelta(t, 50, cs.Exact.Waits, 1e-9, "the waits traced before the names")
}
