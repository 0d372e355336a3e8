package report

import (
	"bytes"
	"html"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// A group-commit convoy (testdata/java/GroupCommit.java) shows in the text
// and the HTML lock tables with its wait kind and the thread that releases
// the waiters, worded as the summary has it.
func TestWaitKindInTextAndHTML(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "GroupCommit", "12", "20")
	dump := p.WaitForDump(t, time.Minute, func(d []byte) bool {
		return testjvm.CountLines(d, "at GroupCommit$Log.commit(") >= 6
	})
	p.Stop()
	ds, err := threaddump.ParseBytes(dump)
	require.NoError(t, err)
	a := analysis.New()
	a.Add(&snapshot.Snapshot{Dump: ds[0]})
	s := a.Summary()
	var l *analysis.LockSummary
	for i := range s.Locks {
		if s.Locks[i].Class == "GroupCommit$Log" {
			l = &s.Locks[i]
		}
	}
	require.NotNil(t, l)
	require.NotEmpty(t, l.Kind)

	var text bytes.Buffer
	require.NoError(t, Text(&text, s, TextOptions{}))
	assert.Contains(t, text.String(), l.Kind+" on monitor GroupCommit$Log <"+l.Address+">")

	page := string(renderHTML(t, a, nil))
	assert.Contains(t, page, "<th>how threads wait</th>")
	assert.Contains(t, page, "<td>"+l.Kind)
	if l.Releaser != nil {
		assert.Contains(t, text.String(), "releaser runs")
		assert.Contains(t, page, html.EscapeString(*l.Releaser)+" runs the same code without waiting")
	}
}
