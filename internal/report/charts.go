package report

import (
	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/pkg/usl"
)

// The charts are built with go-echarts and handed to the page as option
// objects. go-echarts' own templates write those options into a script
// tag without escaping (a thread named "</script>" would end the tag), so
// ctprof takes each chart's option map and serializes it itself, escaped,
// into a JSON data block that the page script reads (see html.go).

// chartOption returns a chart's ECharts option object.
func chartOption(c interface {
	Validate()
	JSON() map[string]interface{}
}) map[string]interface{} {
	c.Validate()
	return c.JSON()
}

// timelineOption draws one Timeline as lines over time.
func timelineOption(tl analysis.Timeline) map[string]interface{} {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: tl.Title}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "25"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "time"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: tl.Unit}),
		charts.WithGridOpts(opts.Grid{Top: "70", Left: "60", Right: "30", Bottom: "40"}),
		charts.WithAnimation(false),
	)
	for _, sr := range tl.Series {
		data := make([]opts.LineData, len(sr.Points))
		for i, p := range sr.Points {
			data[i] = opts.LineData{Value: []interface{}{p.T, p.V}}
		}
		line.AddSeries(sr.Name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(sr.Points) < 50)}))
	}
	return chartOption(line)
}

// deadlockOption draws the deadlocks as a graph: a thread points at the
// lock it waits for, a lock at the thread that holds it.
func deadlockOption(dls []analysis.DeadlockSummary) map[string]interface{} {
	g := charts.NewGraph()
	g.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Who holds, who waits"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true)}),
		charts.WithAnimation(false),
	)
	var nodes []opts.GraphNode
	var links []opts.GraphLink
	seen := map[string]bool{}
	node := func(name string, category int) {
		if !seen[name] {
			seen[name] = true
			nodes = append(nodes, opts.GraphNode{Name: name, Category: category, SymbolSize: 28 - 8*category})
		}
	}
	for _, d := range dls {
		for i, t := range d.Threads {
			l := d.Locks[i]
			lock := l.Kind + " " + l.Class + " " + l.Address
			holder := d.Threads[(i+1)%len(d.Threads)]
			node("thread "+t, 0)
			node(lock, 1)
			node("thread "+holder, 0)
			links = append(links,
				opts.GraphLink{Source: "thread " + t, Target: lock, Value: 1},
				opts.GraphLink{Source: lock, Target: "thread " + holder, Value: 2})
		}
	}
	g.AddSeries("deadlocks", nodes, links, charts.WithGraphChartOpts(opts.GraphChart{
		Layout: "force", Roam: opts.Bool(true), Draggable: opts.Bool(true),
		Force:              &opts.GraphForce{Repulsion: 400, EdgeLength: 120},
		EdgeSymbol:         []string{"none", "arrow"},
		Categories:         []*opts.GraphCategory{{Name: "thread"}, {Name: "lock"}},
		FocusNodeAdjacency: opts.Bool(true),
	}), charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right"}))
	return chartOption(g)
}

// flameOption is the flame graph's frame: a custom series whose items are
// the frames of the first view; the page script draws them (renderItem)
// and switches views.
func flameOption(fd *flameData) map[string]interface{} {
	c := charts.NewCustom()
	c.SetGlobalOptions(
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Show: opts.Bool(false), Min: 0, Max: fd.Views[0].Total}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Show: opts.Bool(false), Min: 0, Max: fd.Views[0].Depth}),
		charts.WithGridOpts(opts.Grid{Top: "10", Left: "10", Right: "10", Bottom: "10"}),
		charts.WithAnimation(false),
	)
	c.SetXAxis(nil)
	data := make([]opts.CustomData, len(fd.Views[0].Nodes))
	for i, n := range fd.Views[0].Nodes {
		data[i] = opts.CustomData{Value: []interface{}{n[0], n[1], n[2], n[3], n[4], n[5]}}
	}
	c.AddSeries("flame", data)
	return chartOption(c)
}

// fitOption draws measured throughput and the fitted curves against the
// varied dimension (unit: "N" or "CPUs").
func fitOption(doc *FitDocument, unit string) map[string]interface{} {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Throughput against concurrency"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "25"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: unit}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "throughput"}),
		charts.WithGridOpts(opts.Grid{Top: "70", Left: "70", Right: "40", Bottom: "40"}),
		charts.WithAnimation(false),
	)
	measured := make([]opts.LineData, len(doc.Points))
	maxN := 0.0
	for i, p := range doc.Points {
		measured[i] = opts.LineData{Value: []interface{}{p.N, p.Throughput}}
		maxN = max(maxN, p.N)
	}
	line.AddSeries("measured", measured, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}),
		charts.WithLineStyleOpts(opts.LineStyle{Width: 0}))
	curve := func(name string, p *FitParams) {
		if p == nil {
			return
		}
		f := &usl.Fit{Sigma: p.Sigma, Lambda: p.Lambda}
		if p.Kappa != nil {
			f.Kappa = *p.Kappa
		}
		end := maxN * 1.5
		if p.PeakConcurrency != nil {
			end = max(end, *p.PeakConcurrency*1.5)
		}
		var data []opts.LineData
		for i := 0; i <= 100; i++ {
			n := 1 + (end-1)*float64(i)/100
			data = append(data, opts.LineData{Value: []interface{}{n, f.Throughput(n)}})
		}
		line.AddSeries(name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Smooth: opts.Bool(true)}))
	}
	curve("USL", doc.USL)
	curve("Amdahl", doc.Amdahl)
	return chartOption(line)
}
