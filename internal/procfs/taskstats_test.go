package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/testnative"
)

// taskStatsOrSkip opens taskstats, or skips the test where the kernel does
// not answer this process (it needs CAP_NET_ADMIN; `make test` runs as
// root here).
func taskStatsOrSkip(t *testing.T) *taskStats {
	t.Helper()
	ts, err := openTaskStats()
	if errors.Is(err, errNoTaskStats) {
		t.Skipf("taskstats does not answer this process: %v", err)
	}
	require.NoError(t, err)
	return ts
}

// taskstats gives the same context switches as each thread's status file,
// and says ESRCH of a thread that does not exist.
func TestTaskStatsMatchesStatus(t *testing.T) {
	ts := taskStatsOrSkip(t)
	defer ts.Close()
	p := testnative.Start(t, "many_threads", "20")
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.PID))
	require.NoError(t, err)
	require.Len(t, ents, 21)
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", p.PID, tid))
		require.NoError(t, err)
		var want Thread
		parseStatus(b, &want)
		vol, invol, err := ts.switches(tid)
		require.NoError(t, err)
		assert.Equal(t, want.Voluntary, vol, "tid %d voluntary", tid)
		assert.Equal(t, want.Involuntary, invol, "tid %d involuntary", tid)
	}
	// Our own thread ran between the two reads: its counters only grow.
	self := unix.Gettid()
	v1, _, err := ts.switches(self)
	require.NoError(t, err)
	v2, _, err := ts.switches(self)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v2, v1)

	_, _, err = ts.switches(1 << 30) // above pid_max: no such thread
	assert.ErrorIs(t, err, unix.ESRCH)
}

// A reader that gets the switches from taskstats opens no status file and
// reads what a reader of status reads.
func TestThreadReaderTaskStatsAgreesWithStatus(t *testing.T) {
	taskStatsOrSkip(t).Close()
	p := testnative.Start(t, "many_threads", "30")
	viaTS, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer viaTS.Close()
	require.NotNil(t, viaTS.ts, "the reader uses taskstats where the kernel answers")
	viaStatus, err := NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(t, err)
	defer viaStatus.Close()
	viaStatus.ts.Close()
	viaStatus.ts = nil

	a, err := viaTS.Read(nil)
	require.NoError(t, err)
	assert.Zero(t, openTaskFiles(t, p.PID)["status"], "no status file open through taskstats")
	b, err := viaStatus.Read(nil)
	require.NoError(t, err)
	assert.Equal(t, 31, openTaskFiles(t, p.PID)["status"], "the other reader keeps status open")
	require.Len(t, a, len(b))
	byTID := map[int]Thread{}
	for _, th := range b {
		byTID[th.TID] = th
	}
	for _, th := range a {
		o := byTID[th.TID]
		if th.Timeslices != o.Timeslices {
			continue // it ran between the two reads
		}
		assert.Equal(t, o, th, "tid %d", th.TID)
	}
}

// Only the /proc of ctprof's own pid namespace is read with taskstats,
// which takes thread ids in that namespace: another tree's ids could name
// other threads.
func TestTaskStatsOnlyForOwnPIDNamespace(t *testing.T) {
	assert.True(t, NewFS("/proc").ownPIDNamespace())
	assert.False(t, NewFS("/proc/").ownPIDNamespace(), "another root, though the same tree")
	assert.False(t, NewFS(t.TempDir()).ownPIDNamespace())
	r, err := NewFS("/proc/").NewThreadReader(os.Getpid())
	require.NoError(t, err)
	defer r.Close()
	assert.Nil(t, r.ts)
}
