package analysis_test

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// jfrFixture is a real recording of testdata/java/JfrLocks.java (pkg/jfr's
// fixture, made by a JVM; see its README).
func jfrFixture(t *testing.T) string {
	return filepath.Join("..", "..", "pkg", "jfr", "testdata", "locks-jdk17.jfr")
}

// feedJFR streams a recording into a new Aggregator, in batches of batch
// events, and returns it with every wait read.
func feedJFR(t *testing.T, file string, batch int) (*analysis.Aggregator, []snapshot.WaitEvent) {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	agg := analysis.New()
	r := jfrsnap.NewReader(f, filepath.Base(file), jfrsnap.Options{MaxEvents: batch})
	var waits []snapshot.WaitEvent
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		waits = append(waits, s.Waits...)
		agg.Add(s)
	}
	return agg, waits
}

// TestJFRWaitsFromRecording: each lock's figures are the events' own
// (count, total, max exact; percentiles within a bucket of the exact
// ones), whatever the batch size.
func TestJFRWaitsFromRecording(t *testing.T) {
	for _, batch := range []int{1, 37, 4096} {
		agg, waits := feedJFR(t, jfrFixture(t), batch)
		s := agg.Summary()
		require.NotNil(t, s.JFR)
		require.NotEmpty(t, waits)
		byClass := map[string][]time.Duration{}
		var total time.Duration
		for _, w := range waits {
			byClass[w.Class] = append(byClass[w.Class], w.Duration)
			total += w.Duration
		}
		assert.Equal(t, int64(len(waits)), s.JFR.Events)
		assert.InDelta(t, total.Seconds(), s.JFR.WaitSeconds, 1e-5)
		seen := 0
		for _, l := range s.Locks {
			if l.JFR == nil || (l.Class != "JfrLocks$Monitor" && !strings.HasPrefix(l.Class, "java.util.concurrent.locks.ReentrantLock")) {
				continue
			}
			seen++
			ds := byClass[l.Class]
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			var sum time.Duration
			for _, d := range ds {
				sum += d
			}
			assert.Equal(t, int64(len(ds)), l.JFR.Events, l.ID)
			assert.InDelta(t, sum.Seconds(), l.JFR.WaitSeconds, 1e-5, l.ID)
			assert.InDelta(t, float64(ds[len(ds)-1])/1e6, l.JFR.MaxMs, 0.001, l.ID)
			exact := func(q float64) float64 {
				return float64(ds[int(math.Ceil(q*float64(len(ds))))-1]) / 1e6
			}
			assert.InEpsilon(t, exact(0.5), l.JFR.P50Ms, 0.07, "%s p50", l.ID)
			assert.InEpsilon(t, exact(0.99), l.JFR.P99Ms, 0.07, "%s p99", l.ID)
			var inHist int64
			for _, b := range l.JFR.Histogram {
				inHist += b.Events
			}
			assert.Equal(t, l.JFR.Events, inHist)
			require.NotEmpty(t, l.JFR.Sites)
			assert.Contains(t, l.JFR.Sites[0].Frame, "JfrLocks.")
			if l.Class == "JfrLocks$Monitor" {
				require.NotEmpty(t, l.JFR.PreviousOwners)
				assert.True(t, strings.HasPrefix(l.JFR.PreviousOwners[0].Thread, "monitor-"))
				assert.Equal(t, "monitor", l.Kind)
			} else {
				assert.Equal(t, "synchronizer", l.Kind)
			}
		}
		assert.Equal(t, 2, seen, "the monitor and the ReentrantLock, batch %d", batch)
	}
}

// TestJFROnlyLockLeadsFinding: a recording without dumps still names its
// hot monitor, with the JFR sentence.
func TestJFROnlyLockLeadsFinding(t *testing.T) {
	agg, _ := feedJFR(t, jfrFixture(t), 512)
	s := agg.Summary()
	require.NotEmpty(t, s.Findings)
	var hot *analysis.Finding
	for i := range s.Findings {
		if s.Findings[i].Kind == analysis.FindingLockHotspot {
			hot = &s.Findings[i]
			break
		}
	}
	require.NotNil(t, hot, "findings: %+v", s.Findings)
	assert.Regexp(t, `waited \d+ times .* in all, p50 [\d.]+ ms, p99 [\d.]+ ms, max [\d.]+ ms`, hot.Summary)
	stacks := agg.WaitStacks()
	require.NotEmpty(t, stacks)
	var ns int64
	for _, ws := range stacks {
		ns += ws.WaitNanos
		assert.NotEmpty(t, ws.ByLock)
	}
	assert.InDelta(t, s.JFR.WaitSeconds, float64(ns)/1e9, 1e-3, "the stacks carry every wait")
}

// TestJFRMemoryBounded: the lock table and the stacks stay within the
// Aggregator's bounds however many distinct locks arrive.
func TestJFRMemoryBounded(t *testing.T) {
	agg := analysis.NewWithOptions(analysis.Options{MaxLocks: 20, MaxStacks: 30})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b := 0; b < 50; b++ {
		var ws []snapshot.WaitEvent
		for i := 0; i < 100; i++ {
			n := b*100 + i
			ws = append(ws, snapshot.WaitEvent{
				Kind: "monitor", Event: "jdk.JavaMonitorEnter", Start: base.Add(time.Duration(n) * time.Millisecond),
				Duration: time.Duration(n%17+1) * time.Millisecond, Thread: "w", Class: "C", Address: uint64(0x1000 + n),
				Stack: []threaddump.Frame{{Class: "app.C", Method: "m" + string(rune('a'+n%40))}},
			})
		}
		agg.Add(&snapshot.Snapshot{Time: base.Add(time.Duration(b) * 100 * time.Millisecond), Waits: ws})
	}
	s := agg.Summary()
	n := 0
	for _, l := range s.Locks {
		if l.JFR != nil {
			n++
		}
	}
	assert.LessOrEqual(t, n, 20)
	assert.LessOrEqual(t, len(agg.WaitStacks()), 31)
	assert.Equal(t, int64(5000), s.JFR.Events)
}
