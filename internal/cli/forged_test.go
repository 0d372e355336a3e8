package cli

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// TestForgedNamesMakeNoDeadlock: thread names of testdata/java/ForgedNames
// hold forged thread entries that deadlock on each other and a forged
// "Found one Java-level deadlock" report. Neither `analyze` on its
// Thread.print nor `attach` reports a deadlock, and both count the ten real
// waiters on the gate.
func TestForgedNamesMakeNoDeadlock(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "ForgedNames")
	gateWaiters := func(t *testing.T, doc map[string]any) float64 {
		t.Helper()
		for _, l := range doc["locks"].([]any) {
			if l := l.(map[string]any); l["class"] == "ForgedNames$Gate" {
				return l["waiters"].(float64)
			}
		}
		return 0
	}

	t.Run("analyze", func(t *testing.T) {
		code, out, errOut := run(t, string(p.ThreadPrint(t)), "analyze", "-f", "json", "-")
		require.Equal(t, 0, code, errOut)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
		assert.Empty(t, doc["deadlocks"])
		assert.Equal(t, float64(10), gateWaiters(t, doc))
		assert.Contains(t, out, "the entries between may be part of it")
		// The forged entries' locks rest on suspect threads only: they
		// are not in the lock table, and no finding names them.
		for _, l := range doc["locks"].([]any) {
			class := l.(map[string]any)["class"]
			assert.NotContains(t, []any{"ForgedNames$X", "ForgedNames$Y", "Fake"}, class)
		}
		for _, f := range doc["findings"].([]any) {
			assert.NotContains(t, f.(map[string]any)["summary"], "ForgedNames$X")
			assert.NotContains(t, f.(map[string]any)["summary"], "ForgedNames$Y")
		}
	})
	t.Run("attach", func(t *testing.T) {
		doc, errOut := attachJSON(t, strconv.Itoa(p.PID), "--count", "2", "--interval", "100ms")
		assert.Empty(t, doc["deadlocks"], errOut)
		assert.Equal(t, float64(10), gateWaiters(t, doc))
		assert.Equal(t, float64(10), doc["states"].(map[string]any)["BLOCKED"])
	})
}
