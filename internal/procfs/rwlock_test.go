package procfs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// A glibc rwlock's waiters wait with FUTEX_WAIT_BITSET, as a condition's
// do; its symbol's size says it is an rwlock, so it is a lock, and its
// memory names the writer that holds it.
func TestRwlockWriterNamed(t *testing.T) {
	p := testnative.Start(t, "rwlock_writer", "2", "3", "20000")
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := fs.NewSymbolizer(p.PID)
	defer sym.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var seen []FutexWait
	var names map[int]string
	require.NoError(t, pollUntil(30*time.Second, func() error {
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
			if fw.Location.Symbol == "table_lock" && fw.Holder != nil && fw.Holder.TID != 0 {
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
		assert.Contains(t, []uint64{8, 12}, fw.Location.SymbolOffset, "readers wait on the phase word, writers on the writers' word")
		assert.Equal(t, "rwlock", fw.Holder.Lock)
		if n, ok := names[fw.Holder.TID]; ok {
			assert.True(t, strings.HasPrefix(n, "writer-"), "the holder %q is a writer", n)
		}
		assert.NotContains(t, fw.TIDs, fw.Holder.TID, "the writer does not wait on its own lock")
	}
}
