package browsertest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ArtifactsDir is where screenshots are kept, relative to the repository
// root (make test prints it; CI may upload it).
const ArtifactsDir = "bin/test-artifacts"

// chartPixelsJS counts the painted pixels of each chart's canvas (-1: no
// canvas): a chart that failed to draw leaves its canvas transparent.
const chartPixelsJS = `(function () {
  var out = {};
  document.querySelectorAll(".chart").forEach(function (el) {
    var c = el.querySelector("canvas");
    if (!c || !c.width || !c.height) { out[el.id] = -1; return; }
    var d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data, n = 0;
    for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
    out[el.id] = n;
  });
  return out;
})()`

// CheckReport asserts what every ctprof report must be in a browser:
// nothing left the page, nothing failed or opened a dialog, and every chart
// drew something. It returns the painted pixels per chart id.
func CheckReport(t *testing.T, p *Page) map[string]int {
	t.Helper()
	assert.Empty(t, p.ForeignRequests(), "the report made network requests")
	assert.Empty(t, p.Exceptions(), "JavaScript exceptions")
	for _, c := range p.Console() {
		assert.NotRegexp(t, `^(error|assert|warning):`, c, "console message")
	}
	for _, l := range p.Logs() {
		assert.NotRegexp(t, `^error:`, l, "browser log entry (a CSP violation or a failed load)")
	}
	assert.Empty(t, p.Dialogs(), "the report opened a dialog")
	pixels := Eval[map[string]int](t, p, chartPixelsJS)
	require.NotEmpty(t, pixels, "the report has no charts")
	for id, n := range pixels {
		assert.Greater(t, n, 100, "chart %s is not drawn (painted pixels: %d)", id, n)
	}
	return pixels
}

// FlameState is the flame graph's view state (window.ctprofReport.flame.state()).
type FlameState struct {
	Min, Max float64
	View     string
	Matches  int
	Path     []string
}

// Flame returns the flame graph's state.
func Flame(t *testing.T, p *Page) FlameState {
	t.Helper()
	return Eval[FlameState](t, p, `window.ctprofReport.flame.state()`)
}

// CheckFlameZoom clicks the widest frame below the root, as a user would,
// and asserts the graph zoomed to exactly that frame; then Reset zoom
// restores the whole view.
func CheckFlameZoom(t *testing.T, p *Page) {
	t.Helper()
	before := Flame(t, p)
	nodes := Eval[[][6]float64](t, p, `window.ctprofReport.flame.nodes()`)
	// The widest frame below the root that is narrower than the view: a
	// click on it must change the range. With one stack only, any frame
	// spans the view and only the zoom path can change.
	best := -1
	for i, n := range nodes {
		if n[2] >= 1 && n[1]-n[0] < before.Max-before.Min && (best < 0 || n[1]-n[0] > nodes[best][1]-nodes[best][0]) {
			best = i
		}
	}
	if best < 0 {
		for i, n := range nodes {
			if n[2] == 1 {
				best = i
				break
			}
		}
	}
	require.GreaterOrEqual(t, best, 0, "the flame graph has no frame below its root")
	target := nodes[best]
	Eval[bool](t, p, `(document.getElementById("chart-flame").scrollIntoView({block: "start"}), true)`)
	xy := Eval[[2]float64](t, p, "window.ctprofReport.flame.pixel("+strconv.Itoa(best)+")")
	p.Click(t, xy[0], xy[1])
	after := Flame(t, p)
	assert.Equal(t, target[0], after.Min, "a click zooms to the frame's left edge")
	assert.Equal(t, target[1], after.Max, "a click zooms to the frame's right edge")
	assert.Len(t, after.Path, 1, "the zoom path names the clicked frame")

	Eval[bool](t, p, `(document.getElementById("flame-reset").click(), true)`)
	reset := Flame(t, p)
	assert.Equal(t, before.Min, reset.Min)
	assert.Equal(t, before.Max, reset.Max)
	assert.Empty(t, reset.Path)
}

// CheckFlameSearch types term into the search box and asserts frames match.
func CheckFlameSearch(t *testing.T, p *Page, term string) {
	t.Helper()
	p.Type(t, "flame-search", term)
	assert.Greater(t, Flame(t, p).Matches, 0, "searching %q matches no frame", term)
}
