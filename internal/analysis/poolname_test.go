package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// dumpPoolNames builds pool names in a buffer and allocates each pool once:
// every thread's must still be PoolName of its name.
func TestDumpPoolNamesArePoolName(t *testing.T) {
	names := []string{
		"pool-3-thread-17", "pool-3-thread-18", "pool-12-thread-1", "main", "", "42", "a1b22c333",
		"conn-1-reader", "conn-2-writer", "conn-1999-heartbeat", "GC Thread#0", "C2 CompilerThread0",
		"worker-\u00e9-7", "\x1b[31m-9", "main",
	}
	d := &threaddump.Dump{}
	for _, n := range names {
		d.Threads = append(d.Threads, threaddump.Thread{Name: n})
	}
	a := New()
	pools := a.dumpPoolNames(d)
	assert.Len(t, pools, len(names))
	for i, n := range names {
		assert.Equal(t, PoolName(n), pools[i], n)
		assert.Equal(t, PoolName(n), string(appendPoolName([]byte("x"), n)[1:]), n)
	}
	assert.Equal(t, "pool-N-thread-N", pools[2])
	assert.Equal(t, pools, a.lastDumpPools)
}
