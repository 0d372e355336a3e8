package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/diff"
)

// DiffInput is what the page of ctprof diff shows: the comparison and the
// two runs it joins (their summaries, and stacks for the differential
// flame graph). internal/diff computes the comparison; the page lays it
// out, and the flame graph's colours are the frames' shares, presentation
// as the flame graph's widths are.
type DiffInput struct {
	Doc           *diff.Document
	Before, After *diff.Side
	// Generated is the page's time; zero leaves it out (golden tests).
	Generated time.Time
}

// diffCell is one figure of one row, formatted.
type diffCell struct {
	Before, After, Change, Verdict string
	// BV, AV and CV are what sortable columns sort by: before, after and
	// the change (0 where a run lacks the figure).
	BV, AV, CV float64
}

type diffResourceRow struct {
	diff.Resource
	Avg, Peak, Share, Seconds diffCell
	JFRWaits, JFRSeconds, P99 *diffCell
}

type diffPoolRow struct {
	diff.Pool
	Threads         diffCell
	CPU, Vol, Invol *diffCell
}

type diffFigureRow struct {
	Title string
	Cell  diffCell
}

type diffRunView struct {
	Label    string
	Info     diff.RunInfo
	Summary  *analysis.Summary
	Findings []analysis.Finding
	Sites    []analysis.ContentionSite
}

type diffView struct {
	Title, Generated string
	Facts            [][2]string
	Doc              *diff.Document
	Figures          []diffFigureRow
	Resources        []diffResourceRow
	Pools            []diffPoolRow
	JFR, Live        bool
	Flame            bool
	FlameViews       []flameView
	Runs             []diffRunView
	pageParts
}

// maxDiffSites bounds each run's own resource list in the side-by-side
// columns; the joined table above has them all.
const maxDiffSites = 10

// DiffHTML writes the self-contained page of a comparison.
func DiffHTML(w io.Writer, in DiffInput) error {
	doc := in.Doc
	data := pageData{Charts: map[string]map[string]interface{}{}}
	if fd := buildDiffFlame(in.Before.Stacks, in.After.Stacks); fd != nil {
		data.Flame = fd
		data.Charts["chart-flame"] = flameOption(fd)
	}
	parts, err := newPageParts(data)
	if err != nil {
		return err
	}
	v := diffView{
		Title: "ctprof diff: " + doc.Before.Name + " → " + doc.After.Name,
		Doc:   doc, pageParts: parts, Flame: data.Flame != nil,
		Live: doc.Before.Live || doc.After.Live, JFR: doc.Before.JFR || doc.After.JFR,
	}
	if data.Flame != nil {
		v.FlameViews = data.Flame.Views
	}
	if !in.Generated.IsZero() {
		v.Generated = in.Generated.Format("2006-01-02 15:04:05 MST")
	}
	v.Facts = [][2]string{{"before", doc.Before.Name + ": " + doc.Before.Describe()}, {"after", doc.After.Name + ": " + doc.After.Describe()}}
	for _, fg := range doc.Figures {
		fm := fmtNumber
		switch {
		case fg.Unit == "share":
			fm = fmtShare
		case fg.Count():
			fm = fmtCount
		}
		v.Figures = append(v.Figures, diffFigureRow{Title: fg.Title, Cell: cellOf(fg.Change, fm)})
	}
	for _, r := range doc.Resources {
		row := diffResourceRow{Resource: r, Avg: cellOf(r.AvgWaiters, fmtNumber), Peak: cellOf(r.PeakWaiters, fmtCount),
			Share: cellOf(r.BlockedShare, fmtShare), Seconds: cellOf(r.BlockedThreadSeconds, fmtNumber)}
		row.JFRWaits = optCell(r.JFREvents, fmtCount)
		row.JFRSeconds = optCell(r.JFRWaitSeconds, fmtNumber)
		row.P99 = optCell(r.JFRP99Ms, fmtNumber)
		v.Resources = append(v.Resources, row)
	}
	for _, p := range doc.Pools {
		v.Pools = append(v.Pools, diffPoolRow{Pool: p, Threads: cellOf(p.Threads, fmtCount),
			CPU: optCell(p.CPUPercent, fmtNumber), Vol: optCell(p.VoluntaryPerSecond, fmtNumber), Invol: optCell(p.InvoluntaryPerSecond, fmtNumber)})
	}
	for _, r := range []struct {
		label string
		info  diff.RunInfo
		side  *diff.Side
	}{{"Before", doc.Before, in.Before}, {"After", doc.After, in.After}} {
		rv := diffRunView{Label: r.label, Info: r.info, Summary: r.side.Summary, Findings: r.side.Summary.Findings, Sites: r.side.Summary.ContentionSites}
		if len(rv.Sites) > maxDiffSites {
			rv.Sites = rv.Sites[:maxDiffSites]
		}
		v.Runs = append(v.Runs, rv)
	}
	var buf bytes.Buffer
	if err := diffTemplate().Execute(&buf, v); err != nil {
		return fmt.Errorf("write HTML comparison: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

type cellFormat int

const (
	fmtNumber cellFormat = iota
	fmtCount
	fmtShare
)

func (f cellFormat) format(v float64) string {
	switch f {
	case fmtCount:
		return fmt.Sprintf("%.0f", v)
	case fmtShare:
		return fmt.Sprintf("%.0f %%", 100*v)
	}
	return fmt.Sprintf("%.2f", v)
}

func cellOf(c diff.Change, f cellFormat) diffCell {
	side := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return f.format(*p)
	}
	val := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	cell := diffCell{Before: side(c.Before), After: side(c.After), Verdict: c.Verdict, BV: val(c.Before), AV: val(c.After), CV: val(c.Change)}
	if c.Change == nil {
		cell.Change = c.NoVerdict // why a side is missing, if it is said
		return cell
	}

	switch {
	case c.Direction == "same":
		cell.Change = "same"
	case f == fmtShare:
		cell.Change = fmt.Sprintf("%+.1f points", 100**c.Change)
	default:
		cell.Change = f.format(*c.Change)
		if *c.Change > 0 {
			cell.Change = "+" + cell.Change
		}
		if c.ChangePercent != nil {
			cell.Change += fmt.Sprintf(" (%+.0f %%)", *c.ChangePercent)
		}
	}
	if c.NoVerdict != "" {
		cell.Change += "; no verdict: " + c.NoVerdict
	}
	return cell
}

func optCell(c *diff.Change, f cellFormat) *diffCell {
	if c == nil {
		return nil
	}
	cell := cellOf(*c, f)
	return &cell
}

// buildDiffFlame builds the differential views: each run's stacks laid out
// as in a report, every frame carrying how its share of the samples moved
// from the before run to the after run. The after run's view comes first
// (what the program does now, red where it grew); the before run's shows
// what shrank or went away, which has no width in the after run.
func buildDiffFlame(before, after []*analysis.FoldedStack) *flameData {
	if len(before) == 0 || len(after) == 0 {
		return nil
	}
	names := &flameNames{index: map[string]int{}}
	fd := &flameData{}
	weights := []struct {
		id, label string
		weight    func(*analysis.FoldedStack) (int, int)
	}{
		{"all", "All threads", func(st *analysis.FoldedStack) (int, int) { return st.Count, st.InState("BLOCKED") }},
		{"blocked", "Blocked (on a monitor)", func(st *analysis.FoldedStack) (int, int) { b := st.InState("BLOCKED"); return b, b }},
	}
	before, after = normalizedStacks(before), normalizedStacks(after)
	for _, wt := range weights {
		tb, ta := buildFlameTree(before, wt.weight), buildFlameTree(after, wt.weight)
		if tb.count == 0 || ta.count == 0 {
			continue // a share of nothing says nothing
		}
		setShareChange(ta, tb, float64(ta.count), float64(tb.count), true)
		va := layoutView("after:"+wt.id, wt.label+": after, coloured by change", ta, names, true)
		va.Side = "after"
		setShareChange(tb, ta, float64(tb.count), float64(ta.count), false)
		vb := layoutView("before:"+wt.id, wt.label+": before, coloured by change", tb, names, true)
		vb.Side = "before"
		fd.Views = append(fd.Views, va, vb)
	}
	if len(fd.Views) == 0 {
		return nil
	}
	fd.Names = names.list
	return fd
}

// normalizedStacks names the frames as diff.NormalizeFrame does, so a
// lambda's frame is one path in both runs although the JVM gave its class
// another address in each.
func normalizedStacks(stacks []*analysis.FoldedStack) []*analysis.FoldedStack {
	out := make([]*analysis.FoldedStack, len(stacks))
	for i, st := range stacks {
		c := *st
		c.Frames = make([]string, len(st.Frames))
		for j, f := range st.Frames {
			c.Frames[j] = diff.NormalizeFrame(f)
		}
		out[i] = &c
	}
	return out
}

// setShareChange sets, on every node of n's tree, its share of the after
// run minus its share of the before run; other is the other run's tree at
// the same path (nil where the path is not in it).
func setShareChange(n, other *flameNode, total, otherTotal float64, nIsAfter bool) {
	mine := float64(n.count) / total
	theirs := 0.0
	if other != nil {
		theirs = float64(other.count) / otherTotal
	}
	if nIsAfter {
		n.change = mine - theirs
	} else {
		n.change = theirs - mine
	}
	for name, c := range n.children {
		var oc *flameNode
		if other != nil {
			oc = other.children[name]
		}
		setShareChange(c, oc, total, otherTotal, nIsAfter)
	}
}

// diffTemplate is parsed on first use (see pageTemplate).
var diffTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.Must(template.New("diff").Funcs(funcs).Parse(pageFrame)).Parse(diffPageHTML))
})

const diffPageHTML = `{{define "cell"}}<td data-v="{{.CV}}" class="{{.Verdict}}">{{.Before}} → {{.After}}<br><small>{{.Change}}{{if .Verdict}}, {{.Verdict}}{{end}}</small></td>{{end}}
{{- define "optcell"}}{{if .}}{{template "cell" .}}{{else}}<td data-v="0">–</td>{{end}}{{end}}
{{- define "cells"}}<td>{{.Before}}</td><td>{{.After}}</td><td class="{{.Verdict}}">{{.Change}}{{if .Verdict}} <small>{{.Verdict}}</small>{{end}}</td>{{end}}
{{- template "head" .}}

<section id="diff-findings">
  <h2>Findings: what went away, what appeared</h2>
  {{- with .Doc.Findings}}
  {{- if and (not .Gone) (not .Appeared) (not .Kept)}}
  <p class="none">Neither run has a finding.</p>
  {{- end}}
  {{- if .Gone}}<h3>Gone</h3>{{range .Gone}}<div class="diff-status gone">{{template "finding" .}}</div>{{end}}{{end}}
  {{- if .Appeared}}<h3>Appeared</h3>{{range .Appeared}}<div class="diff-status appeared">{{template "finding" .}}</div>{{end}}{{end}}
  {{- if .Kept}}<h3>In both runs</h3>{{range .Kept}}<div class="diff-status kept" data-severity="{{.Severity}}">{{template "finding" .After}}<p class="hint">before ({{.Before.Severity}}): {{.Before.Summary}}</p></div>{{end}}{{end}}
  {{- end}}
</section>

<section id="diff-figures">
  <h2>The process</h2>
  <table id="table-diff-figures">
    <thead><tr><th>figure</th><th>before</th><th>after</th><th>change</th></tr></thead>
    <tbody>
    {{- range .Figures}}
      <tr><td>{{.Title}}</td>{{template "cells" .Cell}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>

<section id="diff-resources">
  <h2>Resources: what threads wait for, matched by class and wait site</h2>
  {{- if .Resources}}
  <p class="hint">Each cell reads before → after, with the change below; a heading sorts by the change.</p>
  <table id="table-diff-resources" class="sortable">
    <thead><tr><th>resource</th><th>status</th><th data-type="num">avg waiters</th><th data-type="num">peak waiters</th><th data-type="num">share of dumps</th><th data-type="num">thread-seconds</th>{{if .JFR}}<th data-type="num">JFR waits</th><th data-type="num">JFR wait s</th><th data-type="num">JFR p99 ms</th>{{end}}</tr></thead>
    <tbody>
    {{- range .Resources}}
      <tr data-resource="{{.ID}}" data-status="{{.Status}}"><td class="name">{{.Class}}<br><small>{{.Kind}}{{if .WaitFrame}} at {{.WaitFrame}}{{end}}</small></td><td class="status {{.Status}}">{{.Status}}</td>{{template "cell" .Avg}}{{template "cell" .Peak}}{{template "cell" .Share}}{{template "cell" .Seconds}}{{if $.JFR}}{{template "optcell" .JFRWaits}}{{template "optcell" .JFRSeconds}}{{template "optcell" .P99}}{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="none">No thread waited on a resource in either run.</p>
  {{- end}}
</section>

<section id="flame">
  <h2>Differential flame graph</h2>
  {{- if .Flame}}
  {{template "flamecontrols" .FlameViews}}
  <p class="hint">Frames are as wide as the samples of the run the view names, root at the top. Red: the frame's share of the threads grew from the before run to the after run; blue: it shrank; the deeper the colour, the larger the change. A frame only one run has is fully coloured. Hover for both shares; click to zoom in.</p>
  {{template "flamebox"}}
  {{- else}}
  <p class="none">No differential flame graph: it needs the stacks of both runs, and {{if not .Doc.Before.Stacks}}the before run{{else}}the after run{{end}} has none (a JSON summary keeps no stacks; a native process has none).</p>
  {{- end}}
</section>

<section id="diff-pools">
  <h2>Thread pools</h2>
  <table id="table-diff-pools" class="sortable">
    <thead><tr><th>pool (digits as N)</th><th>status</th><th data-type="num">threads</th>{{if .Live}}<th data-type="num">CPU %</th><th data-type="num">voluntary/s</th><th data-type="num">involuntary/s</th>{{end}}</tr></thead>
    <tbody>
    {{- range .Pools}}
      <tr><td class="name">{{.Name}}</td><td class="status {{.Status}}">{{.Status}}</td>{{template "cell" .Threads}}{{if $.Live}}{{template "optcell" .CPU}}{{template "optcell" .Vol}}{{template "optcell" .Invol}}{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>

<section id="diff-runs">
  <h2>The two runs side by side</h2>
  <div class="diff-cols">
  {{- range .Runs}}
    <div class="diff-col" id="run-{{.Label}}">
      <h3>{{.Label}}: {{.Info.Name}}</h3>
      <h4>Findings</h4>
      {{- if not .Findings}}<p class="none">{{nofindings .Summary}}</p>{{end}}
      {{- range .Findings}}{{template "finding" .}}{{end}}
      <h4>Resources</h4>
      {{- if .Sites}}
      <table class="diff-sites">
        <thead><tr><th>resource</th><th>peak</th><th>avg</th><th>share</th></tr></thead>
        <tbody>{{range .Sites}}<tr><td class="name">{{.Class}}<br><small>{{.Kind}} at {{.WaitFrame}}</small></td><td>{{.Waiters}}</td><td>{{f2 .AvgWaiters}}</td><td>{{pct .BlockedShare}}</td></tr>{{end}}</tbody>
      </table>
      {{- else}}<p class="none">No thread waited for another.</p>{{end}}
      {{- if .Info.Warnings}}<h4>Warnings</h4><ul>{{range .Info.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
    </div>
  {{- end}}
  </div>
</section>

{{- if .Doc.Notes}}
<section id="diff-notes">
  <h2>Notes</h2>
  <ul>{{range .Doc.Notes}}<li>{{.}}</li>{{end}}</ul>
</section>
{{- end}}

{{template "tail" .}}`
