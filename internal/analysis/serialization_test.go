package analysis

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// serializationOf feeds one dump to a fresh Aggregator and returns its
// Serialization rows.
func serializationOf(t *testing.T, d *threaddump.Dump) []Serialization {
	t.Helper()
	a := New()
	a.Add(&snapshot.Snapshot{Time: d.Time, Dump: d})
	return a.Summary().Serialization
}

// A thread entering a contended monitor shows RUNNABLE without "waiting
// to lock" while HotSpot spins; it is not counted as running for that
// lock. Which threads those are, from the waiters' stacks: the same stack
// (a synchronized block), or the waiters' without their top frame (a
// synchronized method, not yet on the stack). The owner counts as running
// wherever it stands, and so does any other thread of the pool.
func TestSerializationLeavesOutThreadsEnteringTheLock(t *testing.T) {
	const (
		owner   = "\tat app.Shop.buy(Shop.java:%d)\n\t- locked <0x1> (a app.Shop)\n\tat app.Worker.run(Worker.java:10)\n"
		waiter  = "\tat app.Shop.buy(Shop.java:20)\n\t- waiting to lock <0x1> (a app.Shop)\n\tat app.Worker.run(Worker.java:10)\n"
		inBlock = "\tat app.Shop.buy(Shop.java:20)\n\tat app.Worker.run(Worker.java:10)\n"
		calling = "\tat app.Worker.run(Worker.java:10)\n"
		working = "\tat app.Ledger.post(Ledger.java:5)\n\tat app.Worker.run(Worker.java:11)\n"
	)
	tests := []struct {
		name     string
		runnable []string // stacks of the RUNNABLE threads besides the owner's
		ownerAt  int      // the owner's line in Shop.buy; -1: BLOCKED at the waiters' line
		running  float64
	}{
		{"the owner alone", nil, 25, 1},
		{"one entering a synchronized method", []string{calling}, 25, 1},
		{"one entering a synchronized block", []string{inBlock}, 25, 1},
		{"both, and a thread at other work", []string{calling, inBlock, working}, 25, 2},
		{"an owner on the waiters' own line", []string{inBlock}, 20, 1},
		{"an owner still printed BLOCKED", []string{calling}, -1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("2026-11-24 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):\n\n")
			n := 0
			thread := func(state, stack string) {
				n++
				verb := "runnable"
				if state == "BLOCKED (on object monitor)" {
					verb = "waiting for monitor entry"
				}
				fmt.Fprintf(&b, "\"worker-%d\" #%d prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x%x nid=0x%x %s  [0x0]\n   java.lang.Thread.State: %s\n%s\n", n, n+10, n, n+100, verb, state, stack)
			}
			if tc.ownerAt < 0 {
				// Taken a moment ago: "- locked" where it waited, its
				// state not yet updated.
				thread("BLOCKED (on object monitor)", fmt.Sprintf(owner, 20))
			} else {
				thread("RUNNABLE", fmt.Sprintf(owner, tc.ownerAt))
			}
			for range 3 {
				thread("BLOCKED (on object monitor)", waiter)
			}
			for _, s := range tc.runnable {
				thread("RUNNABLE", s)
			}
			ds, err := threaddump.ParseString(b.String())
			require.NoError(t, err)
			ser := serializationOf(t, ds[0])
			require.Len(t, ser, 1)
			assert.Equal(t, "worker-N", ser[0].Pool)
			assert.Equal(t, 3.0, ser[0].Queueing)
			assert.Equal(t, tc.running, ser[0].Running)
		})
	}
}

// On a real JVM, against jcmd's dumps of it: SyncSingleton's eight request
// threads serialize on one monitor, and every dump counts one running, the
// owner (the thread printed "- locked"), until one has shown more than one
// RUNNABLE (the others spin on entry). An owner that took the monitor a
// moment before the dump may still print BLOCKED: it counts all the same.
func TestSerializationOfSyncSingletonAgainstJcmd(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	runnableRE := regexp.MustCompile(`(?m)^"request-\d+".*\n\s+java.lang.Thread.State: RUNNABLE`)
	lockedRE := regexp.MustCompile(`- locked <0x[0-9a-f]+> \(a SyncSingleton\)`)
	spinning := 0
	// A dump shows a spinning thread about one time in three; under load,
	// each jcmd takes seconds.
	deadline := time.Now().Add(90 * time.Second)
	for spinning < 1 {
		require.True(t, time.Now().Before(deadline), "jcmd never showed a request thread RUNNABLE beside the owner")
		truth := p.WaitForDump(t, 20*time.Second, func(d []byte) bool { return bytes.Contains(d, []byte("waiting to lock")) })
		runnable := len(runnableRE.FindAll(truth, -1))
		owners := len(lockedRE.FindAll(truth, -1))
		require.LessOrEqual(t, owners, 1, "one thread holds the monitor")
		ser := serializationOf(t, parseDump(t, truth))
		require.Len(t, ser, 1, "%s", truth)
		assert.Equal(t, "request-N", ser[0].Pool)
		assert.Equal(t, float64(owners), ser[0].Running, "the owner runs; %d request threads RUNNABLE in jcmd's dump", runnable)
		if runnable > owners {
			spinning++
		}
	}
}
