package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/browsertest"
	"github.com/ctprof/ctprof/internal/diff"
	"github.com/ctprof/ctprof/internal/diffinput"
)

// The comparison page of ctprof diff, from the jcmd dumps of the
// CapacityFix scenario kept in internal/diff/testdata: before, 8 workers
// queue on one Catalog monitor; after the fix, 3 workers, a shorter queue
// there and a new one at Stats.

func loadSide(t *testing.T, name string) *diff.Side {
	t.Helper()
	s, err := diffinput.Load(context.Background(), filepath.Join("..", "diff", "testdata", name), nil, diffinput.LoadOptions{})
	require.NoError(t, err)
	s.Name = name // the page shows the name; keep it the same on any machine
	return s
}

func renderDiff(t *testing.T, before, after *diff.Side) []byte {
	t.Helper()
	var buf bytes.Buffer
	doc := diff.Compare(before, after, diff.Options{})
	require.NoError(t, DiffHTML(&buf, DiffInput{Doc: doc, Before: before, After: after}))
	return buf.Bytes()
}

func TestDiffHTMLStructureGolden(t *testing.T) {
	page := renderDiff(t, loadSide(t, "before.txt"), loadSide(t, "after.txt"))
	goldenFile(t, "diff-capacity-fix.structure.txt", structure(t, page))
}

// Without stacks on one side (a JSON summary) the page says why there is
// no flame graph, and still has everything else.
func TestDiffHTMLWithoutStacks(t *testing.T) {
	before := loadSide(t, "before.txt")
	before.Stacks, before.Kind = nil, "summary"
	page := string(renderDiff(t, before, loadSide(t, "after.txt")))
	assert.Contains(t, page, "No differential flame graph")
	assert.NotContains(t, page, `id="chart-flame"`)
	assert.Contains(t, page, `id="table-diff-resources"`)
}

func TestDiffHTMLInBrowser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diff.html")
	require.NoError(t, os.WriteFile(path, renderDiff(t, loadSide(t, "before.txt"), loadSide(t, "after.txt")), 0o644))
	p := browsertest.Open(t, path)
	pixels := browsertest.CheckReport(t, p)
	assert.Contains(t, pixels, "chart-flame", "the differential flame graph is drawn")

	text := browsertest.Eval[string](t, p, `document.body.innerText`)
	assert.Contains(t, text, "CapacityFix$Stats")
	assert.Equal(t, "appeared", browsertest.Eval[string](t, p, `document.querySelector('#table-diff-resources tr[data-resource="monitor|CapacityFix$Stats|CapacityFix$Stats.record"]').dataset.status`))

	// The after run's view is first: the frames under Stats.record grew
	// (red), the Catalog monitor's queue shrank (blue).
	assert.Equal(t, "after:all", browsertest.Flame(t, p).View)
	checkDiffColours(t, p, "CapacityFix$Stats.record", "CapacityFix$Catalog.lookup")
	browsertest.CheckFlameZoom(t, p)
	browsertest.CheckFlameSearch(t, p, "CapacityFix")

	// The before run's view draws what shrank with its width.
	browsertest.Eval[bool](t, p, `(function () { var s = document.getElementById("flame-view"); s.value = "before:all"; s.dispatchEvent(new Event("change")); return true })()`)
	assert.Equal(t, "before:all", browsertest.Flame(t, p).View)
	checkDiffColours(t, p, "", "CapacityFix$Catalog.lookup")
	pixels = browsertest.CheckReport(t, p)
	assert.Greater(t, pixels["chart-flame"], 100)
	t.Log("screenshot:", p.Screenshot(t, artifacts()))
}

// checkDiffColours asserts the current view's frames named grew and shrank
// are drawn red and blue (report.js's diffColor: hue 0 and 215).
func checkDiffColours(t *testing.T, p *browsertest.Page, grew, shrank string) {
	t.Helper()
	type node struct {
		Name   string
		Fill   string
		Change float64
	}
	nodes := browsertest.Eval[[]node](t, p, `(function () {
		var d = JSON.parse(document.getElementById("ctprof-data").textContent).flame;
		var id = window.ctprofReport.flame.state().view, view;
		d.views.forEach(function (v) { if (v.id === id) view = v; });
		var fills = window.ctprofReport.flame.fills();
		return view.nodes.map(function (n, i) { return { name: d.names[n[3]], fill: fills[i], change: view.change[i] }; });
	})()`)
	require.NotEmpty(t, nodes)
	found := map[string]bool{}
	for _, n := range nodes {
		switch {
		case grew != "" && n.Name == grew:
			found["grew"] = true
			assert.Greater(t, n.Change, 0.0, "%s grew", n.Name)
			assert.True(t, strings.HasPrefix(n.Fill, "hsl(0,"), "%s is red: %s", n.Name, n.Fill)
		case n.Name == shrank:
			found["shrank"] = true
			assert.Less(t, n.Change, 0.0, "%s shrank", n.Name)
			assert.True(t, strings.HasPrefix(n.Fill, "hsl(215,"), "%s is blue: %s", n.Name, n.Fill)
		}
	}
	if grew != "" {
		assert.True(t, found["grew"], "no %s frame", grew)
	}
	assert.True(t, found["shrank"], "no %s frame", shrank)
}

// Names from the dumps reach the page as text, never as markup, in the
// comparison's tables, findings, side-by-side columns and flame graph.
func TestDiffHTMLInBrowserHostileNames(t *testing.T) {
	before := loadSide(t, "before.txt")
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			a := hostileAggregator(t, c)
			after := &diff.Side{Name: c.thread + ".txt", Kind: "profile", Summary: a.Summary(), Stacks: a.Stacks()}
			path := filepath.Join(t.TempDir(), "diff.html")
			require.NoError(t, os.WriteFile(path, renderDiff(t, before, after), 0o644))
			p := browsertest.Open(t, path)
			browsertest.CheckReport(t, p)
			assert.False(t, browsertest.Eval[bool](t, p, `typeof window.__pwned !== "undefined"`), "a hostile name ran script")
			assert.Equal(t, 3, browsertest.Eval[int](t, p, `document.scripts.length`))
			assert.Equal(t, 0, browsertest.Eval[int](t, p, `document.querySelectorAll("body img, body svg, body iframe").length`))
			text := browsertest.Eval[string](t, p, `document.body.innerText`)
			assert.Contains(t, text, c.lock, "the appeared resource shows the class as it is")
			assert.Contains(t, text, c.thread+".txt", "the header names the run")
			browsertest.CheckFlameSearch(t, p, c.frame)
			assert.Equal(t, "after:all", browsertest.Flame(t, p).View)
			t.Log("screenshot "+strconv.Quote(c.name)+":", p.Screenshot(t, artifacts()))
		})
	}
}

// With a recording on a side, the resource table has the recorded waits,
// their total and p99.
func TestDiffHTMLJFRColumns(t *testing.T) {
	rec, err := diffinput.Load(context.Background(), filepath.Join("..", "cli", "testdata", "jfr", "jfrlocks-jdk17.jfr"), nil, diffinput.LoadOptions{})
	require.NoError(t, err)
	page := string(renderDiff(t, loadSide(t, "before.txt"), rec))
	for _, h := range []string{"JFR waits", "JFR wait s", "JFR p99 ms"} {
		assert.Contains(t, page, "<th data-type=\"num\">"+h+"</th>")
	}
	assert.Contains(t, page, `data-resource="monitor|JfrLocks$Monitor|JfrLocks.enterMonitor"`)
}
