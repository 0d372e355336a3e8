package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
)

//go:embed assets
var assets embed.FS

// ErrNoAssets means the binary was built without the ECharts library.
var ErrNoAssets = errors.New("this ctprof was built without the HTML report's ECharts library: run `make assets` (or `make build`) and build again")

func asset(name string) (string, error) {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		if name == "echarts.min.js" {
			return "", ErrNoAssets
		}
		return "", fmt.Errorf("report asset %s: %w", name, err)
	}
	return string(b), nil
}

// HTMLInput is what an HTML report shows. Everything comes from the
// Aggregator; the report lays it out.
type HTMLInput struct {
	Summary *analysis.Summary
	Stacks  []*analysis.FoldedStack
	// Sources are the dump files read (analyze) or the recording (report).
	Sources []string
	// Generated is the report's time; zero leaves it out (golden tests).
	Generated time.Time
	// WaitStacks are the waits a JFR recording measured, for the flame
	// views weighted by wait time; nil without a recording.
	WaitStacks []*analysis.WaitStack
}

// HTML writes one self-contained page: no request leaves it.
func HTML(w io.Writer, in HTMLInput) error {
	s := in.Summary
	data := pageData{Charts: map[string]map[string]interface{}{}}
	var chartIDs []string
	if fd := addJFRFlame(buildFlame(s, in.Stacks), s, in.WaitStacks); fd != nil && len(fd.Views) > 0 {
		data.Flame = fd
		data.Charts["chart-flame"] = flameOption(fd)
	}
	for _, tl := range s.Timelines {
		id := "chart-timeline-" + tl.ID
		data.Charts[id] = timelineOption(tl)
		chartIDs = append(chartIDs, id)
	}
	if len(s.Deadlocks) > 0 {
		data.Charts["chart-deadlocks"] = deadlockOption(s.Deadlocks)
	}
	hists := jfrHistograms(s, &data)
	return writePage(w, in, data, chartIDs, hists)
}

// pageData is the JSON block the page script reads.
type pageData struct {
	Charts map[string]map[string]interface{} `json:"charts"`
	Flame  *flameData                        `json:"flame,omitempty"`
}

// safeJSON marshals v for a <script type="application/json"> block:
// encoding/json escapes <, >, & and U+2028/2029, so no string from the
// target can end the block or be read as markup.
func safeJSON(v interface{}) (template.JS, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode report data: %w", err)
	}
	return template.JS(b), nil
}

type pageView struct {
	Title      string
	S          *analysis.Summary
	Sources    []string
	Generated  string
	Facts      [][2]string
	Flame      bool
	FlameViews []flameView
	Timelines  []analysis.Timeline
	Deadlocks  bool
	WaitHists  []waitHist
	pageParts
}

// pageParts are what the shared page frame (pageFrame) puts around every
// report: the embedded library, script and style, and the data block.
type pageParts struct {
	ECharts template.JS
	Script  template.JS
	Style   template.CSS
	Data    template.JS
}

func newPageParts(data pageData) (pageParts, error) {
	var p pageParts
	echartsJS, err := asset("echarts.min.js")
	if err != nil {
		return p, err
	}
	script, err := asset("report.js")
	if err != nil {
		return p, err
	}
	style, err := asset("report.css")
	if err != nil {
		return p, err
	}
	blob, err := safeJSON(data)
	if err != nil {
		return p, err
	}
	return pageParts{ECharts: template.JS(echartsJS), Script: template.JS(script), Style: template.CSS(style), Data: blob}, nil
}

func writePage(w io.Writer, in HTMLInput, data pageData, _ []string, hists []waitHist) error {
	parts, err := newPageParts(data)
	if err != nil {
		return err
	}
	s := in.Summary
	v := pageView{
		S: s, Sources: in.Sources, Flame: data.Flame != nil, Timelines: s.Timelines, Deadlocks: len(s.Deadlocks) > 0,
		pageParts: parts, Facts: facts(in), WaitHists: hists,
	}
	if data.Flame != nil {
		v.FlameViews = data.Flame.Views
	}
	v.Title = "ctprof report"
	if s.Target != nil {
		v.Title = fmt.Sprintf("ctprof: pid %d (%s)", s.Target.PID, s.Target.Name)
	} else if len(in.Sources) > 0 {
		v.Title = "ctprof: " + strings.Join(in.Sources, ", ")
	}
	if !in.Generated.IsZero() {
		v.Generated = in.Generated.Format("2006-01-02 15:04:05 MST")
	}
	var buf bytes.Buffer
	if err := pageTemplate().Execute(&buf, v); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// facts are the header's key figures: what was profiled and what it cost.
func facts(in HTMLInput) [][2]string {
	s := in.Summary
	var f [][2]string
	add := func(k, v string) { f = append(f, [2]string{k, v}) }
	if t := s.Target; t != nil {
		add("target", fmt.Sprintf("pid %d, %s (%s), %d CPUs allowed", t.PID, t.Name, t.Kind, t.CPUs))
	}
	if len(in.Sources) > 0 {
		add("input", strings.Join(in.Sources, ", "))
	}
	if s.DurationSeconds > 0 {
		add("duration", (time.Duration(s.DurationSeconds * float64(time.Second))).Round(time.Millisecond).String())
	}
	add("samples", fmt.Sprint(s.Samples))
	if s.Dumps > 0 {
		d := fmt.Sprintf("%d", s.Dumps)
		if s.FirstDump != nil && s.Dumps > 1 {
			d += fmt.Sprintf(", from %s to %s", s.FirstDump.Format("2006-01-02 15:04:05"), s.LastDump.Format("15:04:05"))
		}
		add("thread dumps", d)
	}
	add("threads", fmt.Sprint(s.Threads))
	if s.VM != "" {
		add("VM", s.VM)
	}
	if c := s.SampleCost; c != nil && s.Target != nil {
		cost := fmt.Sprintf("%.2f ms per sample (peak %.2f ms)", 1000*c.AvgSeconds, 1000*c.PeakSeconds)
		if c.TargetPauseSeconds != nil {
			cost += fmt.Sprintf("; thread dumps paused the target %.3f s", *c.TargetPauseSeconds)
			if c.TargetPauseShare != nil {
				cost += fmt.Sprintf(" (%.3f %% of the run)", 100**c.TargetPauseShare)
			}
		}
		add("overhead ctprof caused", cost)
	}
	return f
}

var funcs = template.FuncMap{
	"pct":        func(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) },
	"holderDoes": analysis.HolderDoes,
	"f1":         func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"f2":         func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"join":       strings.Join,
	"lockname":   analysis.LockName,
	"nofindings": analysis.NoFindings,
	"waitkinds":  analysis.WaitKindBreakdown,
	"states": func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		return strings.Join(parts, ", ")
	},
	"state": func(t analysis.ThreadCPU) string {
		if t.JavaState != "" {
			return t.JavaState
		}
		return t.OSState
	},
}

// pageTemplate is parsed on first use, not at start-up: every ctprof
// command would otherwise pay for parsing it (half a millisecond of a
// 100 ms one-shot).
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.Must(template.New("page").Funcs(funcs).Parse(pageFrame)).Parse(pageHTML))
})
