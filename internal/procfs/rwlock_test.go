package procfs

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

// A glibc rwlock's waiters wait with FUTEX_WAIT_BITSET, as a condition's
// do; its symbol's size says it is an rwlock, so it is a lock, and its
// memory names the writer that holds it.
func TestRwlockWriterNamed(t *testing.T) {
	for _, stripped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripped=%v", stripped), func(t *testing.T) { testRwlockWriterNamed(t, stripped) })
	}
}

// testRwlockWriterNamed: stripped, no symbol says the futex is an
// rwlock's, and its waits (FUTEX_WAIT_BITSET) look like a condition's;
// the rwlock's own layout tells.
func testRwlockWriterNamed(t *testing.T, stripped bool) {
	p := testnative.StartWith(t, testnative.Options{Stripped: stripped}, "rwlock_writer", "2", "3", "20000")
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var seen []FutexWait
	var names map[int]string
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		names = map[int]string{}
		for _, th := range threads {
			names[th.TID] = th.Name
		}
		futexes := GroupFutexWaits(threads, sym)
		mem.FillHolders(futexes, threads)
		for _, fw := range futexes {
			if (fw.Location.Symbol == "table_lock" || stripped && strings.HasPrefix(fw.Location.String(), "rwlock_writer+0x")) && fw.Holder != nil && fw.Holder.TID != 0 {
				seen = append(seen, fw)
			}
		}
		if len(seen) < 5 {
			return fmt.Errorf("%d sightings of table_lock with a writer", len(seen))
		}
		return nil
	}))
	for _, fw := range seen {
		assert.Equal(t, FutexLock, fw.Kind, "an rwlock is a lock: %+v", fw)
		if !stripped {
			assert.Contains(t, []uint64{8, 12}, fw.Location.SymbolOffset, "readers wait on the phase word, writers on the writers' word")
		}
		assert.Equal(t, "rwlock", fw.Holder.Lock)
		if n, ok := names[fw.Holder.TID]; ok {
			assert.True(t, strings.HasPrefix(n, "writer-"), "the holder %q is a writer", n)
		}
		assert.NotContains(t, fw.TIDs, fw.Holder.TID, "the writer does not wait on its own lock")
	}
}

// Stripped, an idle pool's condition variable is still a condition: its
// memory is read for no rwlock or mutex.
func TestStrippedConditionStaysACondition(t *testing.T) {
	const idle = 3
	p := testnative.StartWith(t, testnative.Options{Stripped: true}, "mutex_contention", "2", strconv.Itoa(idle), "3000")
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var cond *FutexWait
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		names := map[int]string{}
		for _, th := range threads {
			names[th.TID] = th.Name
		}
		futexes := GroupFutexWaits(threads, sym)
		mem.FillHolders(futexes, threads)
		for i := range futexes {
			if strings.HasPrefix(names[futexes[i].TIDs[0]], "idle-") && len(futexes[i].TIDs) == idle {
				cond = &futexes[i]
				return nil
			}
		}
		return fmt.Errorf("the idle pool not seen waiting yet")
	}))
	assert.Equal(t, FutexCondition, cond.Kind, "%+v", cond)
	assert.Nil(t, cond.Holder)
}
