package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/pkg/usl"
)

// Document is the JSON form of a scaling run, and what its text and HTML
// writers take.
type Document struct {
	Vary       string              `json:"vary"`
	Throughput string              `json:"throughput_source"`
	Levels     []DocumentLevel     `json:"levels"`
	Fit        *report.FitDocument `json:"fit"`
	Locks      []LockTrend         `json:"locks"`
	Findings   []analysis.Finding  `json:"findings"`
	// Summaries are the profile of each level, as ctprof attach prints it.
	Summaries []*analysis.Summary `json:"summaries,omitempty"`
}

// DocumentLevel is one level of the run.
type DocumentLevel struct {
	N          int     `json:"n"`
	Throughput float64 `json:"throughput"`
	Normalized float64 `json:"normalized"`
	CPUPercent float64 `json:"cpu_percent"`
	// OtherCPUShare is the share of the level's CPUs that went to anything
	// but the workload during the measurement kept; Disturbed says other
	// load held the workload back; Measurements counts the attempts.
	OtherCPUShare float64 `json:"other_cpu_share"`
	Disturbed     bool    `json:"disturbed"`
	Measurements  int     `json:"measurements"`
}

// NewDocument fits both models to the run's throughput and gathers the
// levels, the lock trends and the findings.
func NewDocument(res *Result) *Document {
	pts := res.Points()
	u, uerr := usl.FitUSL(pts)
	a, aerr := usl.FitAmdahl(pts)
	doc := &Document{
		Vary: string(res.Vary), Throughput: res.Throughput,
		Fit:   report.NewFitDocument(pts, u, uerr, a, aerr),
		Locks: res.Locks, Findings: res.Findings(a),
	}
	if doc.Locks == nil {
		doc.Locks = []LockTrend{} // a list in the JSON, empty when no lock was contended
	}
	for _, lv := range res.Levels {
		dl := DocumentLevel{N: lv.N, Throughput: lv.Throughput, Normalized: lv.Normalized,
			OtherCPUShare: lv.OtherCPUShare, Disturbed: lv.Disturbed(), Measurements: lv.Measurements}
		if lv.Summary != nil {
			dl.CPUPercent = lv.Summary.CPUPercent
		}
		doc.Levels = append(doc.Levels, dl)
		doc.Summaries = append(doc.Summaries, lv.Summary)
	}
	return doc
}

// unit names the varied dimension in the text and the page.
func (d *Document) unit() string {
	if d.Vary == string(VaryConcurrency) {
		return "N"
	}
	return "CPUs"
}

// WriteDocument writes doc as indented JSON (format "json") or as text
// (any other format; the command has checked the flag).
func WriteDocument(w io.Writer, format string, doc *Document) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return WriteText(w, doc)
}

// WriteText writes the run for a terminal: throughput by level, the fits,
// the ten locks that grow the most with each one's share by level, and the
// findings. Names read from the workload go through report.Terminal.
func WriteText(w io.Writer, doc *Document) error {
	T := report.Terminal
	unit := doc.unit()
	fmt.Fprintf(w, "throughput from %s\n\n", T(doc.Throughput))
	fmt.Fprintf(w, "%8s  %14s  %9s  %9s\n", unit, "throughput", "speed-up", "CPU")
	for _, lv := range doc.Levels {
		fmt.Fprintf(w, "%8d  %14.6g  %8.2fx  %8.0f%%\n", lv.N, lv.Throughput, lv.Normalized, lv.CPUPercent)
	}
	fmt.Fprintln(w)
	if err := report.FitText(w, doc.Fit); err != nil {
		return err
	}
	if len(doc.Locks) > 0 {
		fmt.Fprintf(w, "\nLOCKS BY LEVEL (share of samples with a thread queued)\n")
		for i, l := range doc.Locks {
			if i == 10 {
				break
			}
			fmt.Fprintf(w, "  %s", T(l.Name))
			if l.Site != "" {
				fmt.Fprintf(w, " at %s", T(l.Site))
			}
			fmt.Fprintln(w)
			for j, lv := range doc.Levels {
				fmt.Fprintf(w, "      %3d %s: %5.1f %%  (%.2f waiting on average)\n", lv.N, unit, 100*l.BlockedShare[j], l.AvgWaiters[j])
			}
		}
	}
	fmt.Fprintf(w, "\nFINDINGS\n")
	for _, f := range doc.Findings {
		fmt.Fprintf(w, "  [%s] %s\n", strings.ToUpper(f.Severity), T(f.Summary))
		fmt.Fprintf(w, "      next: %s\n", T(f.NextStep))
	}
	return nil
}

// HTMLInput lays the document out for report.ScalabilityHTML. The command
// and the per-level times are the run's settings, which the document does
// not keep; generated is the page's time.
func (d *Document) HTMLInput(command []string, warmup, measure time.Duration, generated time.Time) report.ScalabilityInput {
	cmd := strings.Join(command, " ")
	in := report.ScalabilityInput{Title: "ctprof scale: " + cmd, Fit: d.Fit, Unit: d.unit(),
		Findings: d.Findings, Generated: generated,
		Facts: [][2]string{{"command", cmd}, {"varied", d.Vary}, {"throughput from", d.Throughput},
			{"per level", fmt.Sprintf("%s warm-up, %s measured", warmup, measure)}}}
	for _, lv := range d.Levels {
		in.Levels = append(in.Levels, report.ScalabilityLevel{N: lv.N, Throughput: lv.Throughput, Speedup: lv.Normalized, CPUPercent: lv.CPUPercent})
	}
	for _, l := range d.Locks {
		in.Locks = append(in.Locks, report.ScalabilityLock{Name: l.Name, Site: l.Site, BlockedShare: l.BlockedShare})
	}
	return in
}
