package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// A group-commit convoy (testdata/java/GroupCommit.java) is exported with
// its wait kind in the lock label: writers waiting in wait() inside work
// are a lock's waiters like threads entering it.
func TestLockLabelCarriesTheWaitKind(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "GroupCommit", "12", "20")
	dump := p.WaitForDump(t, time.Minute, func(d []byte) bool {
		return testjvm.CountLines(d, "at GroupCommit$Log.commit(") >= 6
	})
	p.Stop()
	ds, err := threaddump.ParseBytes(dump)
	require.NoError(t, err)
	agg := analysis.New()
	agg.Add(&snapshot.Snapshot{Dump: ds[0]})
	var kind string
	for _, l := range agg.Summary().Locks {
		if l.Class == "GroupCommit$Log" {
			kind = l.Kind
		}
	}
	require.Contains(t, []string{"wait", "relock"}, kind)

	c := NewCollector(CollectorOptions{Top: 5})
	c.Register(TargetInfo{PID: 4242, Name: "GroupCommit", Kind: "jvm"}, agg)
	mf := gather(t, c)["ctprof_lock_blocked_threads"]
	require.NotNil(t, mf)
	found := false
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "lock" && strings.HasSuffix(lp.GetValue(), "GroupCommit$Log") {
				found = true
				assert.Equal(t, kind+" GroupCommit$Log", lp.GetValue())
				assert.GreaterOrEqual(t, m.GetGauge().GetValue(), 6.0)
			}
		}
	}
	assert.True(t, found, "the convoy's lock is exported")
}
