package follow_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/follow"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
	"github.com/ctprof/ctprof/internal/testcorpus"
)

// changes drains a log of dumps through one Aggregator and a Tracker.
func changes(t *testing.T, log []byte) []follow.Change {
	t.Helper()
	src, err := source.Open(source.StdinName, bytes.NewReader(log))
	require.NoError(t, err)
	agg := analysis.New()
	var tr follow.Tracker
	var out []follow.Change
	_, err = agg.Drain(context.Background(), src, func(s *snapshot.Snapshot) {
		out = append(out, tr.Next(agg.Summary(), src.Name(), s.Time))
	})
	require.NoError(t, err)
	return out
}

// The same dump again changes its findings' numbers and wording ("seen in
// 1 dump" becomes 2, averages move), not what they are about: none of them
// appears again or goes; what appears is new (threads in the same stack in
// both dumps). Another program's dump brings its own findings.
func TestTrackerKnowsAFindingAgain(t *testing.T) {
	dir := testcorpus.Dir(t)
	play, err := os.ReadFile(filepath.Join(dir, "jdk8-play-devmode-monitor-contention.txt"))
	require.NoError(t, err)
	selenium, err := os.ReadFile(filepath.Join(dir, "jdk17-selenium-cdp-deadlock-parking-not-jvm-detected.txt"))
	require.NoError(t, err)
	chs := changes(t, bytes.Join([][]byte{play, play, selenium}, nil))
	require.Len(t, chs, 3)

	first := chs[0]
	assert.Equal(t, 1, first.Dump)
	require.NotNil(t, first.Time)
	assert.Equal(t, "2015-07-02 11:03:29", first.Time.Format("2006-01-02 15:04:05"))
	assert.Len(t, first.Appeared, first.Findings, "the first dump brings every finding")
	require.NotEmpty(t, first.Appeared)
	require.NotEmpty(t, first.Resources)
	assert.Equal(t, 8, first.Resources[0].CurrentWaiters)
	for i := 1; i < len(first.Resources); i++ {
		assert.GreaterOrEqual(t, first.Resources[i-1].CurrentWaiters, first.Resources[i].CurrentWaiters)
	}

	again := chs[1]
	assert.Empty(t, again.Gone)
	assert.Equal(t, first.Findings+len(again.Appeared), again.Findings)
	for _, f := range again.Appeared {
		assert.Equal(t, analysis.FindingStuck, f.Kind, "only the stuck threads are new: %s", f.Summary)
	}

	other := chs[2]
	assert.Equal(t, 86, other.Threads)
	assert.Equal(t, "org.openqa.selenium.devtools.Connection.handle(Connection.java:276)", other.Resources[0].WaitFrame)
	var fromSelenium int
	for _, f := range other.Appeared {
		if strings.Contains(f.Summary, "selenium") {
			fromSelenium++
		}
	}
	assert.Equal(t, 2, fromSelenium, "the new program's two lock findings appear")
	var stuck int
	for _, f := range other.Gone {
		if f.Kind == analysis.FindingStuck {
			stuck++
		}
	}
	assert.Equal(t, len(again.Appeared), stuck, "threads not in the last dump are no longer stuck")
}
