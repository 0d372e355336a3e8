package analysis

import (
	"encoding/json"
	"testing"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every key docs/json.md calls an array is one, also when empty: a
// consumer can index it without checking that it exists.
func TestSummaryArraysAreNeverAbsent(t *testing.T) {
	ds, err := threaddump.ParseBytes([]byte("Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):\n\n\"main\" #1 prio=5 os_prio=0 tid=0x1 nid=0x2 runnable  [0x0]\n   java.lang.Thread.State: RUNNABLE\n\tat app.Main.main(Main.java:1)\n\n"))
	require.NoError(t, err)
	a := New()
	a.Add(&snapshot.Snapshot{Dump: ds[0]})
	b, err := json.Marshal(a.Summary())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"locks", "contention_sites", "deadlocks", "pools", "findings", "warnings", "serialization", "wakeups", "futex_waits", "timelines"} {
		v, ok := m[k]
		if assert.True(t, ok, "%s is absent", k) {
			assert.IsType(t, []any{}, v, k)
		}
	}
}
