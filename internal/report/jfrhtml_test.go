package report

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/jfrsnap"
)

// jfrAggregator reads pkg/jfr's real recording of JfrLocks.
func jfrAggregator(t *testing.T) *analysis.Aggregator {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "pkg", "jfr", "testdata", "locks-jdk17.jfr"))
	require.NoError(t, err)
	defer f.Close()
	agg := analysis.New()
	r := jfrsnap.NewReader(f, "locks.jfr", jfrsnap.Options{})
	for {
		s, err := r.Next()
		if errors.Is(err, io.EOF) {
			return agg
		}
		require.NoError(t, err)
		agg.Add(s)
	}
}

// TestHTMLJFRViews: with recording data the page has a flame view weighted
// by wait time (all waits and per lock) and a wait-duration histogram per
// hot lock, whose bars hold every wait.
func TestHTMLJFRViews(t *testing.T) {
	agg := jfrAggregator(t)
	s := agg.Summary()
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, HTMLInput{Summary: s, Stacks: agg.Stacks(), WaitStacks: agg.WaitStacks(), Sources: []string{"locks.jfr"}}))
	page := buf.String()
	assert.Contains(t, page, `<section id="jfr-waits">`)
	assert.Contains(t, page, `id="chart-jfr-hist-0"`)
	assert.Contains(t, page, `<option value="jfr">JFR: all waits, by wait time (`)
	assert.Contains(t, page, `ms waited)</option>`)

	fd := addJFRFlame(nil, s, agg.WaitStacks())
	require.NotNil(t, fd)
	require.NotEmpty(t, fd.Views)
	want := 0
	for _, ws := range agg.WaitStacks() {
		want += msCeil(ws.WaitNanos)
	}
	assert.Equal(t, want, fd.Views[0].Total, "the all-waits view is as wide as the waits")
	assert.InDelta(t, s.JFR.WaitSeconds*1000, float64(fd.Views[0].Total), float64(len(agg.WaitStacks())), "ms, rounded up per stack")
}

// TestPprofJFRValues: the export carries contentions and delay from the
// waits, summing to the recording's.
func TestPprofJFRValues(t *testing.T) {
	agg := jfrAggregator(t)
	s := agg.Summary()
	var buf bytes.Buffer
	require.NoError(t, Pprof(&buf, PprofInput{Stacks: agg.Stacks(), WaitStacks: agg.WaitStacks()}))
	p, err := profile.Parse(&buf)
	require.NoError(t, err)
	require.Len(t, p.SampleType, 4)
	assert.Equal(t, "contentions", p.SampleType[2].Type)
	assert.Equal(t, "delay", p.SampleType[3].Type)
	var n, ns int64
	for _, smp := range p.Sample {
		n += smp.Value[2]
		ns += smp.Value[3]
	}
	assert.Equal(t, s.JFR.Events, n, "the fixture records every wait with its stack")
	assert.InDelta(t, s.JFR.WaitSeconds, float64(ns)/1e9, 1e-3)
}
