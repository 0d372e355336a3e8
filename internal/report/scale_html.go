package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/ctprof/ctprof/internal/analysis"
)

// ScalabilityInput is what the HTML page of ctprof fit and ctprof scale
// shows: the fits (and for scale, the levels, the locks by level and the
// findings). All of it is computed by pkg/usl and internal/scale; the page
// lays it out.
type ScalabilityInput struct {
	Title string
	Facts [][2]string
	Fit   *FitDocument
	// Unit names the varied dimension ("CPUs" or "N").
	Unit     string
	Levels   []ScalabilityLevel
	Locks    []ScalabilityLock
	Findings []analysis.Finding
	// Generated is the page's time; zero leaves it out (golden tests).
	Generated time.Time
}

// ScalabilityLevel is one measured level of ctprof scale.
type ScalabilityLevel struct {
	N          int
	Throughput float64
	Speedup    float64
	CPUPercent float64
}

// ScalabilityLock is one lock's blocked share at each level.
type ScalabilityLock struct {
	Name, Site   string
	BlockedShare []float64
}

type scalabilityView struct {
	Title, Generated string
	Facts            [][2]string
	In               ScalabilityInput
	FitText          string
	pageParts
}

// maxScaleLockSeries bounds the lock chart to the locks that matter.
const maxScaleLockSeries = 8

// ScalabilityHTML writes the self-contained page of a fit or a scaling run.
func ScalabilityHTML(w io.Writer, in ScalabilityInput) error {
	data := pageData{Charts: map[string]map[string]interface{}{}}
	if in.Fit != nil && len(in.Fit.Points) > 0 {
		data.Charts["chart-fit"] = fitOption(in.Fit, in.Unit)
	}
	if len(in.Locks) > 0 && len(in.Levels) > 0 {
		data.Charts["chart-scale-locks"] = scaleLocksOption(in)
	}
	var text bytes.Buffer
	if in.Fit != nil {
		if err := FitText(&text, in.Fit); err != nil {
			return err
		}
	}
	parts, err := newPageParts(data)
	if err != nil {
		return err
	}
	v := scalabilityView{Title: in.Title, Facts: in.Facts, In: in, FitText: text.String(), pageParts: parts}
	if !in.Generated.IsZero() {
		v.Generated = in.Generated.Format("2006-01-02 15:04:05 MST")
	}
	var buf bytes.Buffer
	if err := scalabilityTemplate().Execute(&buf, v); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// scaleLocksOption draws each lock's blocked share against the level: the
// lock whose line climbs is the one that stops scaling.
func scaleLocksOption(in ScalabilityInput) map[string]interface{} {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithTitleOpts(opts.Title{Title: "Share of samples with a thread queued, by level"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "25", Type: "scroll"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: in.Unit, Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "%", Min: 0, Max: 100}),
		charts.WithGridOpts(opts.Grid{Top: "70", Left: "60", Right: "40", Bottom: "40"}),
		charts.WithAnimation(false),
	)
	for i, l := range in.Locks {
		if i == maxScaleLockSeries {
			break
		}
		data := make([]opts.LineData, 0, len(in.Levels))
		for j, lv := range in.Levels {
			if j < len(l.BlockedShare) {
				data = append(data, opts.LineData{Value: []interface{}{lv.N, 100 * l.BlockedShare[j]}})
			}
		}
		line.AddSeries(l.Name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}))
	}
	return chartOption(line)
}

// scalabilityTemplate is parsed on first use (see pageTemplate).
var scalabilityTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.Must(template.New("scalability").Funcs(funcs).Parse(pageFrame)).Parse(scalabilityHTML))
})

const scalabilityHTML = `{{template "head" .}}
{{- if .In.Findings}}
<section id="findings">
  <h2>Findings</h2>
  {{- range .In.Findings}}
  {{template "finding" .}}
  {{- end}}
</section>
{{- end}}

{{- if .In.Levels}}
<section id="levels">
  <h2>Throughput by level</h2>
  <table id="table-levels" class="sortable">
    <thead><tr><th data-type="num">{{.In.Unit}}</th><th data-type="num">throughput</th><th data-type="num">speed-up</th><th data-type="num">CPU %</th></tr></thead>
    <tbody>
    {{- range .In.Levels}}
      <tr><td data-v="{{.N}}">{{.N}}</td><td data-v="{{.Throughput}}">{{printf "%.6g" .Throughput}}</td><td data-v="{{.Speedup}}">{{f2 .Speedup}}x</td><td data-v="{{.CPUPercent}}">{{f1 .CPUPercent}}</td></tr>
    {{- end}}
    </tbody>
  </table>
</section>
{{- end}}

<section id="fit">
  <h2>Amdahl's law and the Universal Scalability Law</h2>
  <div id="chart-fit" class="chart"></div>
  <pre id="fit-text" class="name">{{.FitText}}</pre>
</section>

{{- if .In.Locks}}
<section id="scale-locks">
  <h2>Locks by level</h2>
  <div id="chart-scale-locks" class="chart"></div>
  <table id="table-scale-locks" class="sortable">
    <thead><tr><th>lock</th><th>where threads wait</th>{{range .In.Levels}}<th data-type="num">{{.N}} {{$.In.Unit}}</th>{{end}}</tr></thead>
    <tbody>
    {{- range .In.Locks}}
      <tr><td class="name">{{.Name}}</td><td class="name">{{.Site}}</td>{{range .BlockedShare}}<td data-v="{{.}}">{{pct .}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>
{{- end}}
{{template "tail" .}}`
