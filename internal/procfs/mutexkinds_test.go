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

// Every kind of glibc mutex names its holder: the recursive, the
// error-checking and the adaptive one in __owner, the robust and the PI
// one in the lock word itself. Stripped, where no symbol's size says a
// futex is a mutex, a timed lock (which waits as a condition does, with
// FUTEX_WAIT_BITSET) and a robust one (which waits for its owner's tid,
// not 2) are still locks: their memory says so.
func TestMutexKindsNameTheirHolders(t *testing.T) {
	const perKind = 3
	want := map[string]string{ // by the waiters' name prefix
		"rec": "recursive mutex",
		"chk": "error-checking mutex",
		"adp": "adaptive mutex",
		"tmd": "mutex",
		"rob": "robust mutex",
		"pi":  "PI mutex",
	}
	for _, stripped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripped=%v", stripped), func(t *testing.T) {
			p := testnative.StartWith(t, testnative.Options{Stripped: stripped}, "mutex_kinds", strconv.Itoa(perKind), "20000")
			fs := NewFS("/proc")
			r, err := fs.NewThreadReader(p.PID)
			require.NoError(t, err)
			defer r.Close()
			sym := symbolize.NewSymbolizer(fs.Target(p.PID))
			defer sym.Close()
			mem := fs.NewMemReader(p.PID)
			defer mem.Close()
			got := map[string]FutexWait{}
			names := map[int]string{}
			require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
				threads, err := r.Read(nil)
				if err != nil {
					return err
				}
				for _, th := range threads {
					names[th.TID] = th.Name
				}
				futexes := GroupFutexWaits(threads, sym)
				mem.FillHolders(futexes, threads)
				for _, fw := range futexes {
					g, _, _ := strings.Cut(names[fw.TIDs[0]], "-")
					if _, ok := want[g]; ok && fw.Holder != nil {
						got[g] = fw
					}
				}
				var missing []string
				for g := range want {
					if _, ok := got[g]; !ok {
						missing = append(missing, g)
					}
				}
				if len(missing) > 0 {
					return fmt.Errorf("no holder read yet for %v", missing)
				}
				return nil
			}))
			for g, kind := range want {
				fw := got[g]
				assert.Equal(t, FutexLock, fw.Kind, "%s: %+v", g, fw)
				assert.Equal(t, kind, fw.Holder.Lock, g)
				if n, ok := names[fw.Holder.TID]; ok {
					assert.True(t, strings.HasPrefix(n, g+"-"), "%s: holder %q", g, n)
				}
				t.Logf("%s (%s): %s, holder %s, %s", g, fw.Location, fw.Op, names[fw.Holder.TID], fw.Holder.Lock)
			}
			assert.Contains(t, got["pi"].Op, "FUTEX_LOCK_PI")
			assert.Contains(t, got["tmd"].Op, "FUTEX_WAIT_BITSET")
		})
	}
}
