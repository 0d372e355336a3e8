package report

import (
	"fmt"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
)

// maxWaitHistograms bounds the wait-duration charts to the hottest locks a
// recording measured.
const maxWaitHistograms = 5

// waitHist is one lock's wait-duration chart on the page.
type waitHist struct {
	ID, Title string
}

// addJFRFlame adds the views weighted by wait time (JFR) to the flame
// data: every recorded wait, and the waits of each of the hottest locks a
// recording measured. Widths are milliseconds waited.
func addJFRFlame(fd *flameData, s *analysis.Summary, stacks []*analysis.WaitStack) *flameData {
	if len(stacks) == 0 {
		return fd
	}
	if fd == nil {
		fd = &flameData{}
	}
	names := &flameNames{index: map[string]int{}}
	for _, n := range fd.Names {
		names.id(n)
	}
	// buildFlameView weighs FoldedStacks; a wait stack becomes one whose
	// count is its wait time in milliseconds (at least 1 for any wait).
	folded := make([]*analysis.FoldedStack, len(stacks))
	for i, ws := range stacks {
		folded[i] = &analysis.FoldedStack{Frames: ws.Frames, Count: msCeil(ws.WaitNanos), ByLock: map[string]int{}}
		for id, ns := range ws.ByLock {
			folded[i].ByLock[id] = msCeil(ns)
		}
	}
	add := func(v flameView) {
		if v.Total > 0 {
			v.Unit = "ms waited"
			fd.Views = append(fd.Views, v)
		}
	}
	add(buildFlameView("jfr", "JFR: all waits, by wait time", folded, func(st *analysis.FoldedStack) (int, int) { return st.Count, 0 }, names))
	n := 0
	for _, l := range s.Locks {
		if l.JFR == nil || n == maxLockViews {
			continue
		}
		n++
		id := l.ID
		add(buildFlameView("jfr-lock:"+id, "JFR: waits on "+analysis.LockName(l)+", by wait time", folded, func(st *analysis.FoldedStack) (int, int) {
			return st.ByLock[id], 0
		}, names))
	}
	fd.Names = names.list
	return fd
}

func msCeil(ns int64) int {
	if ns <= 0 {
		return 0
	}
	return int((ns + 999999) / 1000000)
}

// jfrHistograms adds a wait-duration chart for each of the hottest locks a
// recording measured.
func jfrHistograms(s *analysis.Summary, data *pageData) []waitHist {
	var out []waitHist
	for _, l := range s.Locks {
		if l.JFR == nil || len(l.JFR.Histogram) == 0 {
			continue
		}
		if len(out) == maxWaitHistograms {
			break
		}
		id := fmt.Sprintf("chart-jfr-hist-%d", len(out))
		title := fmt.Sprintf("%s: %d waits, p99 %.2f ms", analysis.LockName(l), l.JFR.Events, l.JFR.P99Ms)
		data.Charts[id] = waitHistOption(title, l.JFR.Histogram)
		out = append(out, waitHist{ID: id, Title: title})
	}
	return out
}

// waitHistOption draws a lock's wait durations as bars, one per power of
// two of the duration.
func waitHistOption(title string, buckets []analysis.JFRBucket) map[string]interface{} {
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: title}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "wait up to (ms)"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "waits"}),
		charts.WithGridOpts(opts.Grid{Top: "60", Left: "60", Right: "90", Bottom: "40"}),
		charts.WithAnimation(false),
	)
	xs := make([]string, len(buckets))
	ys := make([]opts.BarData, len(buckets))
	for i, b := range buckets {
		xs[i] = strconv.FormatFloat(b.LeMs, 'g', 3, 64)
		ys[i] = opts.BarData{Value: b.Events}
	}
	bar.SetXAxis(xs).AddSeries("waits", ys)
	return chartOption(bar)
}

// addWaitSamples adds one sample per JFR wait stack with the values
// [0, 0, contentions, delay]; label "source" says "jfr".
func addWaitSamples(p *profile.Profile, stacks []*analysis.WaitStack, location func(string) *profile.Location) {
	for _, ws := range stacks {
		stack := make([]*profile.Location, len(ws.Frames))
		for i, f := range ws.Frames {
			stack[len(ws.Frames)-1-i] = location(f)
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: stack,
			Value:    []int64{0, 0, ws.Count, ws.WaitNanos},
			Label:    map[string][]string{"source": {waitSource(ws)}},
		})
	}
}

// waitSource is the "source" label of a measured wait's sample: who
// measured it ("jfr" or "futex-trace").
func waitSource(ws *analysis.WaitStack) string {
	if ws.Source == "" {
		return analysis.WaitsJFR
	}
	return ws.Source
}

// sampleValues are a thread-dump sample's values: two, or four (zero
// contentions and delay) when the profile carries JFR waits.
func sampleValues(jfr bool, n, blocked int64) []int64 {
	if jfr {
		return []int64{n, blocked, 0, 0}
	}
	return []int64{n, blocked}
}
