package procfs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/testnative"
)

func TestCPUListFormatsLikeTheKernel(t *testing.T) {
	tests := []struct {
		cpus []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 8}, "0-3,8"},
		{[]int{1, 3, 5}, "1,3,5"},
		{[]int{62, 63, 64, 65, 1023}, "62-65,1023"},
	}
	for _, tc := range tests {
		var set unix.CPUSet
		for _, c := range tc.cpus {
			set.Set(c)
		}
		assert.Equal(t, tc.want, cpuList(&set), "%v", tc.cpus)
	}
}

// A one-sample sweep reads stat and the affinity mask only; what it gives
// must be what a full sweep gives for those fields, the affinity as status
// lists it.
func TestOneSampleSweepMatchesAFullRead(t *testing.T) {
	p := testnative.Start(t, "many_threads", "50")
	full, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer full.Close()
	one, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer one.Close()
	one.OneSample = true

	want, err := full.Read(nil)
	require.NoError(t, err)
	held := openTaskFiles(t, p.PID) // the full reader's
	got, err := one.Read(nil)
	require.NoError(t, err)
	assert.False(t, one.OneSample, "the switch holds for one sweep")
	assert.Equal(t, held, openTaskFiles(t, p.PID),
		"a one-sample sweep keeps no descriptor: a one-shot would close them at exit, after its summary")
	require.Len(t, got, len(want))
	byTID := map[int]Thread{}
	for _, th := range want {
		byTID[th.TID] = th
	}
	for _, g := range got {
		w, ok := byTID[g.TID]
		require.True(t, ok, "tid %d", g.TID)
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, w.StartTime, g.StartTime)
		assert.Equal(t, w.Policy, g.Policy)
		assert.Equal(t, w.Nice, g.Nice)
		assert.NotEmpty(t, g.CPUsAllowed)
		assert.Equal(t, w.CPUsAllowed, g.CPUsAllowed, "tid %d", g.TID)
		if g.Sleeping() && w.Sleeping() {
			assert.Equal(t, w.Syscall, g.Syscall, "tid %d: sleepers' system calls are read", g.TID)
		}
		assert.Zero(t, g.Timeslices, "schedstat is not read")
	}
	// The next sweep is a full one.
	again, err := one.Read(nil)
	require.NoError(t, err)
	for _, g := range again {
		assert.NotZero(t, g.Timeslices, "tid %d: a full read after the one-sample sweep", g.TID)
	}
}

// With DeferWaits, the sweep leaves wchan and syscall to ReadWaits, which
// reads them only where asked.
func TestDeferredWaitsAreReadWhereNeeded(t *testing.T) {
	p := testnative.Start(t, "many_threads", "20")
	r, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	r.DeferWaits = true
	th, err := r.Read(nil)
	require.NoError(t, err)
	sleepers := 0
	for _, x := range th {
		if x.Sleeping() {
			sleepers++
			assert.Equal(t, SyscallUnknown, x.Syscall, "tid %d: left for ReadWaits", x.TID)
		}
	}
	require.GreaterOrEqual(t, sleepers, 10, "most of the 20 sleepers are asleep")
	skip := th[0].TID // the main thread, in pause(2)
	r.ReadWaits(th, func(x *Thread) WaitRead {
		if x.TID == skip {
			return WaitsSkip
		}
		return WaitsRecheck
	})
	for _, x := range th {
		switch {
		case x.TID == skip:
			assert.Equal(t, SyscallUnknown, x.Syscall)
		case x.Sleeping():
			assert.GreaterOrEqual(t, x.Syscall, 0, "tid %d (%s): its system call is read", x.TID, x.Name)
		}
	}
	// Carried over as read: an idle thread keeps the waits ReadWaits found.
	r.DeferWaits = false
	again, err := r.Read(nil)
	require.NoError(t, err)
	for _, x := range again {
		if x.TID != skip && x.Sleeping() {
			assert.GreaterOrEqual(t, x.Syscall, 0, "tid %d", x.TID)
		}
	}
}
