package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// TestLiveForgedNames samples, as `ctprof attach` and `serve` do, a JVM
// whose thread names hold forged thread entries that deadlock on each other
// and a forged "Found one Java-level deadlock" report: the Sampler's own
// dumps must show no deadlock, the ten real waiters on the gate (four with
// newlines in their names), and ctprof_deadlocked_threads 0.
func TestLiveForgedNames(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "ForgedNames")
			agg, smp := sampleN(t, p.PID, 2, 100*time.Millisecond)

			// A dump read as text only (`ctprof analyze`): forger-open's
			// entries stay, marked suspect, and make no deadlock.
			offline := analysis.New()
			addDump(t, offline, smp, p.ThreadPrint(t))
			off := offline.Summary()
			assert.Empty(t, off.Deadlocks, "offline")
			assert.Contains(t, strings.Join(off.Warnings, "\n"), "the entries between may be part of it")

			s := agg.Summary()
			require.Positive(t, s.Dumps, "the sampler took thread dumps: %v", s.Warnings)
			assert.Empty(t, s.Deadlocks)
			assert.Equal(t, 10, s.States["BLOCKED"], "the ten waiters and no forged entry")
			var gate bool
			for _, l := range s.Locks {
				if l.Class == "ForgedNames$Gate" {
					gate = true
					assert.Equal(t, 10, l.Waiters)
				}
				assert.NotContains(t, l.Class, "ForgedNames$X", "a lock of a forged entry")
			}
			assert.True(t, gate, "the gate is in the lock table")
			assert.Contains(t, strings.Join(s.Warnings, "\n"), "only entries naming a thread of the target were kept")

			c := NewCollector(CollectorOptions{Version: "test", Top: 40})
			c.Register(TargetInfo{PID: p.PID, Name: "java", Kind: "jvm"}, frozen{s})
			b, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "ctprof_deadlocked_threads")
			require.NoError(t, err)
			assert.Regexp(t, `(?m)^ctprof_deadlocked_threads\{[^}]*\} 0$`, string(b))
		})
	}
}
