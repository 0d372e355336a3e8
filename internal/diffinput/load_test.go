package diffinput

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/diff"
)

// The runs of internal/diff's tests: three jcmd dumps each of the
// CapacityFix scenario, before and after its fix.
const beforeFile, afterFile = "../diff/testdata/before.txt", "../diff/testdata/after.txt"

func load(t *testing.T, name string) *diff.Side {
	t.Helper()
	s, err := Load(context.Background(), name, strings.NewReader(""), LoadOptions{})
	require.NoError(t, err)
	return s
}

// TestJSONSummarySide reads a side from the JSON summary of the same dumps:
// the same figures, no stacks, and a note saying why there is no flame
// graph.
func TestJSONSummarySide(t *testing.T) {
	before := load(t, beforeFile)
	path := filepath.Join(t.TempDir(), "before.json")
	b, err := json.MarshalIndent(before.Summary, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))

	fromJSON := load(t, path)
	assert.Equal(t, "summary", fromJSON.Kind)
	assert.Empty(t, fromJSON.Stacks)
	after := load(t, afterFile)
	want, got := diff.Compare(before, after, diff.Options{}), diff.Compare(fromJSON, after, diff.Options{})
	assert.Equal(t, want.Resources, got.Resources)
	assert.Equal(t, want.Figures, got.Figures)
	wf, _ := json.Marshal(want.Findings)
	gf, _ := json.Marshal(got.Findings)
	assert.JSONEq(t, string(wf), string(gf))
	assert.Contains(t, strings.Join(got.Notes, "\n"), "no stacks in the before run")

	// From standard input too.
	s, err := Load(context.Background(), "-", bytes.NewReader(b), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "summary", s.Kind)
	assert.Equal(t, "standard input", s.Name)
	// And a dump on standard input is still a dump.
	dump, err := os.ReadFile(afterFile)
	require.NoError(t, err)
	s, err = Load(context.Background(), "-", bytes.NewReader(dump), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "profile", s.Kind)
	assert.Equal(t, 3, s.Summary.Dumps)
}

// A directory is one run: its files in name order.
func TestDirectorySide(t *testing.T) {
	b, err := os.ReadFile(beforeFile)
	require.NoError(t, err)
	dir := t.TempDir()
	parts := strings.SplitAfter(string(b), "JNI global refs")
	n := 0
	for _, p := range parts {
		if strings.Contains(p, "Full thread dump") {
			n++
			require.NoError(t, os.WriteFile(filepath.Join(dir, "dump-"+string(rune('0'+n))+".txt"), []byte(p), 0o644))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden"), []byte("not a dump"), 0o644))
	s := load(t, dir)
	assert.Equal(t, 3, s.Summary.Dumps)
	whole := load(t, beforeFile)
	assert.Equal(t, whole.Summary.ContentionSites[0].AvgWaiters, s.Summary.ContentionSites[0].AvgWaiters)
}

// A thread dump in JSON (Thread.dump_to_file) is a dump, not a summary.
func TestSniffLeavesJSONDumps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"threadDump": {"processId": "1", "time": "2026-11-26T10:00:00Z", "runtimeVersion": "21", "threadContainers": [{"container": "<root>", "parent": null, "owner": null, "threads": [{"tid": "1", "name": "main", "stack": ["A.b(A.java:1)"]}], "threadCount": "1"}]}}`), 0o644))
	doc, err := sniffDocument(path, nil)
	require.NoError(t, err)
	assert.Nil(t, doc)
	keys := topLevelKeys(strings.NewReader(`{"schema": 1, "samples": 3, "locks": [`))
	assert.True(t, keys["schema"] && keys["samples"], "a prefix is enough to tell: %v", keys)
}

// A scale document's level is a side, with its throughput.
func TestScaleDocumentSide(t *testing.T) {
	before := load(t, beforeFile)
	after := load(t, afterFile)
	doc := map[string]any{
		"vary": "concurrency", "throughput_source": "output", "fit": nil, "locks": []any{}, "findings": []any{},
		"levels":    []map[string]any{{"n": 2, "throughput": 100.0}, {"n": 8, "throughput": 250.0}},
		"summaries": []*analysis.Summary{after.Summary, before.Summary},
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "scale.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))

	s := load(t, path)
	assert.Equal(t, "scale", s.Kind)
	assert.Equal(t, 8, s.Level, "the highest level by default")
	require.NotNil(t, s.Throughput)
	assert.Equal(t, 250.0, *s.Throughput)
	s2, err := Load(context.Background(), path, nil, LoadOptions{Level: 2})
	require.NoError(t, err)
	assert.Equal(t, 100.0, *s2.Throughput)
	_, err = Load(context.Background(), path, nil, LoadOptions{Level: 3})
	assert.ErrorContains(t, err, "no level 3")

	d := diff.Compare(s2, s, diff.Options{})
	require.NotEmpty(t, d.Figures)
	tp := d.Figures[0]
	assert.Equal(t, "throughput", tp.ID)
	assert.Equal(t, "up", tp.Direction)
	assert.Equal(t, "better", tp.Verdict)
	assert.Equal(t, 150.0, *tp.ChangePercent)

	// The user's figure wins over the level's.
	u := 90.0
	d = diff.Compare(s2, s, diff.Options{AfterThroughput: &u})
	assert.Equal(t, "worse", d.Figures[0].Verdict)
}

// A summary whose keys were sorted (jq -S), its "schema" far beyond the
// first 64 KiB, is still a summary; from standard input too.
func TestSortedSummary(t *testing.T) {
	before := load(t, beforeFile)
	b, err := json.Marshal(before.Summary)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	// A key of a later schema, sorted before "schema" and "samples".
	m["added_later"] = strings.Repeat("x", 100<<10)
	sorted, err := json.Marshal(m) // encoding/json writes a map's keys sorted
	require.NoError(t, err)
	require.Greater(t, bytes.Index(sorted, []byte(`"schema"`)), 64<<10)
	path := filepath.Join(t.TempDir(), "sorted.json")
	require.NoError(t, os.WriteFile(path, sorted, 0o644))
	s := load(t, path)
	assert.Equal(t, "summary", s.Kind)
	assert.Equal(t, before.Summary.ContentionSites, s.Summary.ContentionSites)
	s, err = Load(context.Background(), "-", bytes.NewReader(sorted), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "summary", s.Kind)
}
