package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ctprof/ctprof/internal/termtext"
)

// JSON writes the document as indented JSON (docs/json.md, "ctprof diff").
// encoding/json escapes <, > and &, so it is safe to embed in HTML.
func JSON(w io.Writer, doc *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write diff JSON: %w", err)
	}
	return nil
}

// TextOptions tune the text.
type TextOptions struct {
	// Top bounds the resource and pool tables; 0 means 10.
	Top int
}

// Text writes the comparison for a terminal: what each run was, the
// findings that went away or appeared, the process-wide figures, the
// resources and the pools, each figure as before → after with its change.
// Every string read from a run goes through termtext.Safe.
func Text(w io.Writer, doc *Document, opt TextOptions) error {
	top := opt.Top
	if top <= 0 {
		top = 10
	}
	tw := &textWriter{w: w}
	writeRuns(tw, doc)
	writeFindings(tw, doc)
	writeFigures(tw, doc)
	writeResources(tw, doc, top)
	writePools(tw, doc, top)
	if len(doc.Notes) > 0 {
		tw.printf("\nNOTES\n")
		for _, n := range doc.Notes {
			tw.printf("  %s\n", termtext.Safe(n))
		}
	}
	return tw.err
}

type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, a ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, a...)
	}
}

func writeRuns(tw *textWriter, doc *Document) {
	for _, r := range []struct {
		label string
		ri    RunInfo
	}{{"before", doc.Before}, {"after", doc.After}} {
		tw.printf("%-6s %s: %s\n", r.label, termtext.Safe(r.ri.Name), r.ri.Describe())
	}
}

// Describe says what a run holds, for the text and the page alike:
// "5 thread dumps, over 8.0 s, 40 threads", "a JSON summary, 120 samples
// of a live run, ...".
func (ri RunInfo) Describe() string {
	var parts []string
	switch ri.Kind {
	case "summary":
		parts = append(parts, "a JSON summary")
	case "scale":
		parts = append(parts, fmt.Sprintf("level %d of a scale run", ri.Level))
	}
	if ri.Live {
		parts = append(parts, fmt.Sprintf("%s of a live run", plural(ri.Samples, "sample")))
		if ri.Dumps > 0 {
			parts = append(parts, plural(ri.Dumps, "thread dump"))
		}
	} else if ri.Dumps > 0 {
		parts = append(parts, plural(ri.Dumps, "thread dump"))
	}
	if ri.JFR {
		parts = append(parts, "a JFR recording")
	}
	if ri.DurationSeconds > 0 {
		parts = append(parts, fmt.Sprintf("over %.1f s", ri.DurationSeconds))
	}
	parts = append(parts, plural(ri.Threads, "thread"))
	if len(ri.Warnings) > 0 {
		parts = append(parts, plural(len(ri.Warnings), "warning"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func writeFindings(tw *textWriter, doc *Document) {
	fs := doc.Findings
	tw.printf("\nFINDINGS\n")
	if len(fs.Gone)+len(fs.Appeared)+len(fs.Kept) == 0 {
		tw.printf("  none in either run\n")
		return
	}
	for _, fd := range fs.Gone {
		tw.printf("  gone      [%s] %s\n", severity(fd.Severity), termtext.Safe(fd.Summary))
	}
	for _, fd := range fs.Appeared {
		tw.printf("  appeared  [%s] %s\n", severity(fd.Severity), termtext.Safe(fd.Summary))
	}
	for _, k := range fs.Kept {
		sev := severity(k.After.Severity)
		if k.Severity != "same" {
			sev = severity(k.Before.Severity) + " → " + sev
		}
		tw.printf("  kept      [%s] %s\n", sev, termtext.Safe(k.After.Summary))
		tw.printf("            before: %s\n", termtext.Safe(k.Before.Summary))
	}
}

// severity prints a finding's severity; it comes from the run's summary,
// which may be a JSON file anyone wrote, so it is escaped like a name.
func severity(s string) string { return strings.ToUpper(termtext.Safe(s)) }

func writeFigures(tw *textWriter, doc *Document) {
	if len(doc.Figures) == 0 {
		return
	}
	tw.printf("\nPROCESS%s\n", header(44))
	for _, fg := range doc.Figures {
		fm := number2
		switch {
		case fg.Unit == "share":
			fm = share
		case fg.Count():
			fm = integer
		}
		tw.printf("  %-42s %s\n", fg.Title, formatChange(fg.Change, fm))
	}
}

func header(indent int) string {
	return strings.Repeat(" ", indent-len("PROCESS")+1) + fmt.Sprintf("%10s   %-10s %s", "before", "after", "change")
}

func writeResources(tw *textWriter, doc *Document, top int) {
	tw.printf("\nRESOURCES (matched by class and wait site)\n")
	if len(doc.Resources) == 0 {
		tw.printf("  no thread waited on a resource in either run\n")
		return
	}
	for i, r := range doc.Resources {
		if i == top {
			tw.printf("  … %d more (--top, or --format json for all)\n", len(doc.Resources)-top)
			break
		}
		status := ""
		if r.Status != "both" {
			status = "  [" + strings.ToUpper(r.Status) + "]"
		}
		where := ""
		if r.WaitFrame != "" {
			where = " at " + termtext.Safe(r.WaitFrame)
		}
		tw.printf("  %s %s%s%s\n", termtext.Safe(r.Kind), termtext.Safe(r.Class), where, status)
		row := func(label string, c Change, fm form) {
			tw.printf("    %-40s %s\n", label, formatChange(c, fm))
		}
		row("average waiters", r.AvgWaiters, number2)
		row("peak waiters", r.PeakWaiters, integer)
		row("share of dumps with a waiter", r.BlockedShare, share)
		row("thread-seconds waiting", r.BlockedThreadSeconds, number2)
		if r.JFREvents != nil {
			row("JFR: waits recorded", *r.JFREvents, integer)
		}
		if r.JFRWaitSeconds != nil {
			row("JFR: time waited (s)", *r.JFRWaitSeconds, number2)
		}
		if r.JFRP99Ms != nil {
			row("JFR: p99 wait (ms, busiest instance)", *r.JFRP99Ms, number2)
		}
	}
}

// writePools prints one line per pool whose figures moved; the pools
// alike in both runs (the JVM's own threads, mostly) are only counted.
func writePools(tw *textWriter, doc *Document, top int) {
	if len(doc.Pools) == 0 {
		return
	}
	tw.printf("\nPOOLS (threads in the last dump; digits in names as N)\n")
	shown, same := 0, 0
	for _, p := range doc.Pools {
		if p.Status == "both" && unchanged(p) {
			same++
			continue
		}
		if shown == top {
			tw.printf("  … more (--top, or --format json for all)\n")
			break
		}
		shown++
		status := ""
		if p.Status != "both" {
			status = "  [" + strings.ToUpper(p.Status) + "]"
		}
		tw.printf("  %-42s %s%s\n", termtext.Safe(p.Name), formatChange(p.Threads, integer), status)
		if p.CPUPercent != nil {
			tw.printf("    %-40s %s\n", "CPU (100 = one core)", formatChange(*p.CPUPercent, number2))
			tw.printf("    %-40s %s\n", "voluntary switches/s", formatChange(*p.VoluntaryPerSecond, number2))
			tw.printf("    %-40s %s\n", "involuntary switches/s", formatChange(*p.InvoluntaryPerSecond, number2))
		}
	}
	if same > 0 {
		tw.printf("  %s with the same threads (and CPU within 1 %% of a core) in both runs\n", plural(same, "more pool"))
	}
}

// unchanged says a pool kept its threads and its CPU within a hundredth of
// a core: the JVM's own threads' switch rates move from run to run by
// themselves, and would bury the pools that changed.
func unchanged(p Pool) bool {
	if p.Threads.Direction != "same" {
		return false
	}
	return p.CPUPercent == nil || p.CPUPercent.Change == nil || math.Abs(*p.CPUPercent.Change) < 1
}

// form is how a figure prints.
type form int

const (
	number2 form = iota // two decimals
	integer             // a count
	share               // a fraction, as a percentage
)

func (f form) format(v float64) string {
	switch f {
	case integer:
		return fmt.Sprintf("%.0f", v)
	case share:
		return fmt.Sprintf("%.0f %%", 100*v)
	}
	return fmt.Sprintf("%.2f", v)
}

// formatChange prints "before → after  change (percent) verdict", with
// "-" for a run that lacks the figure.
func formatChange(c Change, fm form) string {
	side := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fm.format(*p)
	}
	s := fmt.Sprintf("%10s → %-10s", side(c.Before), side(c.After))
	if c.Change == nil {
		if c.NoVerdict != "" {
			return s + " " + c.NoVerdict
		}
		return strings.TrimRight(s, " ")
	}
	if c.Direction == "same" {
		return s + " same"
	}
	d := fm.format(*c.Change)
	if *c.Change > 0 {
		d = "+" + d
	}
	if fm == share {
		d = fmt.Sprintf("%+.1f points", 100**c.Change)
	}
	s += " " + d
	if c.ChangePercent != nil && fm != share {
		s += fmt.Sprintf(" (%+.0f %%)", *c.ChangePercent)
	}
	if c.Verdict != "" {
		s += ", " + c.Verdict
	}
	if c.NoVerdict != "" {
		s += ", no verdict: " + c.NoVerdict
	}
	return s
}
