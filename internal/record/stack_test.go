package record

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Version 6 keeps the native stacks of blocked threads, across keyframes
// and delta frames, a stack that did not change as well as one that did;
// a version 5 file reads without them.
func TestStacksRoundTripAndVersion5(t *testing.T) {
	wait := []symbolize.StackFrame{
		{PC: 0x7f0000001234, Module: "libc.so.6", Function: "__lll_lock_wait", Offset: 0x34},
		{PC: 0x7f0000005678, Module: "libc.so.6", Function: "pthread_mutex_lock", Offset: 0x1a8},
		{PC: 0x55550000abcd, Module: "server", Function: "post_entry", Offset: 0x2d},
		{PC: 0x55550000bcde, Module: "server", Offset: 0x1bcde},
	}
	other := []symbolize.StackFrame{{PC: 0x7f0000009999, Module: "libc.so.6", Function: "epoll_wait", Offset: 0x9}}
	var snaps []*snapshot.Snapshot
	for i := 0; i < KeyframeEvery+3; i++ {
		s := &snapshot.Snapshot{
			Time: time.Unix(100+int64(i), 0),
			Threads: []snapshot.OSThread{
				{TID: 10, StartTime: 5, Name: "worker", State: 'S', Syscall: 202, Stack: wait},
				{TID: 11, StartTime: 5, Name: "poller", State: 'S', Syscall: 232, Stack: other},
				{TID: 12, StartTime: 6, Name: "runner", State: 'R', Syscall: procfs.SyscallRunning},
			},
		}
		if i%2 == 1 {
			s.Threads[1].Stack = wait[1:] // moved
		}
		snaps = append(snaps, s)
	}
	for _, version := range []byte{5, FormatVersion} {
		got, r := recordAtVersion(t, version, snaps...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, len(snaps))
		for i, g := range got {
			require.Len(t, g.Threads, 3)
			for k, th := range g.Threads {
				want := snaps[i].Threads[k].Stack
				if version < 6 {
					want = nil
				}
				assert.Equal(t, want, th.Stack, "version %d, snapshot %d, thread %d", version, i, th.TID)
			}
		}
	}
}

// The futex waits the kernel counted (version 6) survive the round trip,
// stacks and durations included, and so do the fast reads' sightings.
func TestFutexTraceRoundTrip(t *testing.T) {
	ft := &snapshot.FutexTrace{
		Elapsed: time.Second, Calls: 41234.5, Exact: true, Traced: 2000, TracedShare: 0.0485, Lost: 3, Cost: 7 * time.Millisecond,
		Futexes: []snapshot.TracedFutex{{
			Address: 0x55550000a040, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE",
			Location: symbolize.Location{Address: 0x55550000a040, Module: "server", ModulePath: "/srv/server", Offset: 0x4040, Symbol: "log_lock", SymbolSize: 40},
			Waits:    40000.25, Traced: 1900, TimedOut: 2, Total: 95 * time.Millisecond, Max: 3 * time.Millisecond,
			Durations: []time.Duration{time.Microsecond, 20 * time.Microsecond, 3 * time.Millisecond},
			TIDs:      []int{10, 11},
			Stacks:    [][]symbolize.StackFrame{{{PC: 1, Module: "libc.so.6", Function: "__lll_lock_wait", Offset: 4}, {PC: 2, Module: "server", Function: "post_entry"}}},
		}, {Address: 0x7f0000001000, Kind: procfs.FutexCondition, Op: "FUTEX_WAIT_BITSET_PRIVATE", Waits: 3, Traced: 3}},
	}
	snaps := []*snapshot.Snapshot{
		{Time: time.Unix(1, 0), Threads: []snapshot.OSThread{{TID: 10, Name: "w"}}},
		{Time: time.Unix(2, 0), Threads: []snapshot.OSThread{{TID: 10, Name: "w"}}, FutexTrace: ft},
		{Time: time.Unix(3, 0), Threads: []snapshot.OSThread{{TID: 10, Name: "w"}}, FastReads: &snapshot.FastReads{
			Rounds: 40, Spacing: 100 * time.Microsecond, Took: 6 * time.Millisecond, Threads: []int{10, 11}, BlocksPerSecond: []float64{41000, 39000.5},
			Futexes: []snapshot.FastFutex{{Address: 0x1000, Location: symbolize.Location{Address: 0x1000, Module: "server", Offset: 0x40}, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE", Sightings: 9, TIDs: []int{10, 11}}},
		}},
	}
	path := filepath.Join(t.TempDir(), "run.ctprof")
	writeAll(t, path, snaps)
	got, r := readAll(t, path)
	assert.Empty(t, r.Warnings())
	require.Len(t, got, 3)
	assert.Nil(t, got[0].FutexTrace)
	assert.Equal(t, ft, got[1].FutexTrace)
	assert.Nil(t, got[1].FastReads)
	assert.Equal(t, snaps[2].FastReads, got[2].FastReads)
}
