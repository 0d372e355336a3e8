package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/follow"
)

// Every name in a followed log's change comes from the log: none reaches
// the terminal raw.
func TestFollowTextEscapes(t *testing.T) {
	evil := "x\x1b]0;owned\x07\x1b[2J\u202e"
	ch := follow.Change{
		Dump: 2, Source: "app" + evil + ".log", Threads: 3,
		States:    map[string]int{"BLOCKED": 2, "ODD" + evil: 1},
		Appeared:  []analysis.Finding{{Severity: "warning", Summary: "2 threads queue on monitor " + evil}},
		Gone:      []analysis.Finding{{Severity: "info", Summary: "Thread \"" + evil + "\" is stuck"}},
		Resources: []follow.Resource{{Kind: "monitor", Class: "com." + evil, WaitFrame: "a.B.c" + evil + "(B.java:1)", CurrentWaiters: 2, AvgWaiters: 1.5}},
	}
	var b bytes.Buffer
	require.NoError(t, FollowText(&b, ch))
	out := b.String()
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\x07")
	assert.NotContains(t, out, "\u202e")
	assert.Contains(t, out, `x\x1b]0;owned\a`)
	assert.Contains(t, out, "dump 2 of app")
	assert.Contains(t, out, "no timestamp")
	assert.Equal(t, 4, strings.Count(out, "\n"), "one line each, no name breaks one: %s", out)
}
