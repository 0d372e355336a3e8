package scale

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/testgolden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/document")

// fourLevels is a run that peaks and falls, with a lock that grows, a
// level measured without a profile and one disturbed by other load, and a
// throughput source holding an escape sequence the text must not pass on.
func fourLevels(vary Vary) *Result {
	return &Result{Vary: vary, Throughput: "output lines matching `x\x1b`",
		Levels: []Level{
			{N: 1, Throughput: 100, Normalized: 1, Summary: &analysis.Summary{CPUPercent: 98.5}, Measurements: 1},
			{N: 2, Throughput: 150, Normalized: 1.5, Summary: &analysis.Summary{CPUPercent: 180}, OtherCPUShare: 0.3, Measurements: 3},
			{N: 4, Throughput: 170, Normalized: 1.7, OtherCPUShare: 0.01, Measurements: 1},
			{N: 8, Throughput: 160, Normalized: 1.6, Summary: &analysis.Summary{CPUPercent: 390}, Measurements: 2},
		},
		Locks: []LockTrend{
			{ID: "a", Name: "monitor A", Site: "A.run", BlockedShare: []float64{0, 0.2, 0.4, 0.6}, AvgWaiters: []float64{0, 0.3, 1.2, 3}},
			{ID: "b", Name: "futex b", BlockedShare: []float64{0.01, 0.02, 0.03, 0.04}, AvgWaiters: []float64{0.01, 0.02, 0.03, 0.04}},
		},
	}
}

func documentGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testgolden.Check(t, filepath.Join("testdata", "document", name), got, *update, "go test ./internal/scale -run TestDocumentGolden -update")
}

// TestDocumentGolden pins what ctprof scale prints, in text and JSON, for
// both dimensions; the scaling tests of internal/cli need real workloads
// and check figures, not layout.
func TestDocumentGolden(t *testing.T) {
	for _, vary := range []Vary{VaryCPUs, VaryConcurrency} {
		t.Run(string(vary), func(t *testing.T) {
			doc := NewDocument(fourLevels(vary))
			var text bytes.Buffer
			require.NoError(t, WriteDocument(&text, "text", doc))
			assert.NotContains(t, text.String(), "\x1b", "nothing from the workload reaches the terminal raw")
			documentGolden(t, string(vary)+".txt", text.Bytes())

			// Each level's Summary is the analysis package's schema
			// (docs/json.md), pinned there; here only that one is kept per level.
			require.Len(t, doc.Summaries, 4)
			assert.Nil(t, doc.Summaries[2], "a level without a profile keeps its place")
			doc.Summaries = nil
			var js bytes.Buffer
			require.NoError(t, WriteDocument(&js, "json", doc))
			documentGolden(t, string(vary)+".json", js.Bytes())
		})
	}
}

func TestNewDocument(t *testing.T) {
	doc := NewDocument(fourLevels(VaryCPUs))
	require.Len(t, doc.Levels, 4)
	assert.Equal(t, 98.5, doc.Levels[0].CPUPercent)
	assert.Zero(t, doc.Levels[2].CPUPercent, "no profile, no CPU figure")
	assert.Equal(t, 3, doc.Levels[1].Measurements)
	assert.NotNil(t, doc.Fit.USL, "four levels fit the USL")
	require.Len(t, doc.Findings, 1)
	assert.Contains(t, doc.Findings[0].Summary, "monitor A at A.run takes 60 %")

	// No contended lock: the JSON still has a list.
	res := fourLevels(VaryCPUs)
	res.Locks = nil
	var js bytes.Buffer
	require.NoError(t, WriteDocument(&js, "json", NewDocument(res)))
	var m map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &m))
	assert.Equal(t, []any{}, m["locks"])
}

func TestHTMLInput(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	in := NewDocument(fourLevels(VaryCPUs)).HTMLInput([]string{"./bench", "-x"}, time.Second, 3*time.Second, at)
	assert.Equal(t, "ctprof scale: ./bench -x", in.Title)
	assert.Equal(t, "CPUs", in.Unit)
	assert.Equal(t, at, in.Generated)
	assert.Equal(t, [][2]string{{"command", "./bench -x"}, {"varied", "cpus"}, {"throughput from", "output lines matching `x\x1b`"},
		{"per level", "1s warm-up, 3s measured"}}, in.Facts)
	require.Len(t, in.Levels, 4)
	assert.Equal(t, report.ScalabilityLevel{N: 2, Throughput: 150, Speedup: 1.5, CPUPercent: 180}, in.Levels[1])
	require.Len(t, in.Locks, 2)
	assert.Equal(t, report.ScalabilityLock{Name: "monitor A", Site: "A.run", BlockedShare: []float64{0, 0.2, 0.4, 0.6}}, in.Locks[0])
	require.Len(t, in.Findings, 1)

	in = NewDocument(fourLevels(VaryConcurrency)).HTMLInput([]string{"w"}, 0, time.Second, time.Time{})
	assert.Equal(t, "N", in.Unit)
}

func TestParseLevels(t *testing.T) {
	got, err := ParseLevels(" 1, 2,4", "--cpus")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 4}, got)
	for in, msg := range map[string]string{
		"2,1":  "--cpus: levels must rise, got 2,1",
		"1,1":  "--cpus: levels must rise, got 1,1",
		"0":    `--cpus: "0" is not a positive whole number`,
		"x":    `--cpus: "x" is not a positive whole number`,
		"1,,2": `--cpus: "" is not a positive whole number`,
		"":     `--cpus: "" is not a positive whole number`,
	} {
		_, err := ParseLevels(in, "--cpus")
		assert.EqualError(t, err, msg, "%q", in)
	}
}

func TestDefaultCPULevels(t *testing.T) {
	for n, want := range map[int][]int{
		1: {1}, 2: {1, 2}, 3: {1, 2, 3}, 4: {1, 2, 4}, 6: {1, 2, 4, 6}, 8: {1, 2, 4, 8}, 9: {1, 2, 4, 8, 9},
	} {
		assert.Equal(t, want, DefaultCPULevels(n), "%d CPUs", n)
	}
}
