package scale

import (
	"fmt"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/pkg/usl"
)

// FindingScalability is the finding kind of a scaling run.
const FindingScalability = "scalability"

// Points returns the experiment as (N, throughput) points for the fits.
func (r *Result) Points() []usl.Point {
	pts := make([]usl.Point, 0, len(r.Levels))
	for _, lv := range r.Levels {
		pts = append(pts, usl.Point{N: float64(lv.N), Throughput: lv.Throughput})
	}
	return pts
}

// Findings says how far the workload scales, what share of its work is
// serialized (Amdahl's σ), and which lock grows the most from the first
// level to the last: "Throughput scales to 1.6x on 2 CPUs; σ = 0.24: about
// a quarter of the work is serialized; lock X at Y takes 40 % of samples at
// 2 CPUs against 5 % at 1."
func (r *Result) Findings(amdahl *usl.Fit) []analysis.Finding {
	if len(r.Levels) < 2 {
		return nil
	}
	first, last := r.Levels[0], r.Levels[len(r.Levels)-1]
	unit := "CPUs"
	if r.Vary == VaryConcurrency {
		unit = "concurrency"
	}
	sum := fmt.Sprintf("Throughput scales to %.2fx on %d %s (against %d)", last.Normalized, last.N, unit, first.N)
	ideal := float64(last.N) / float64(first.N)
	sev := analysis.SeverityInfo
	if last.Normalized < 0.75*ideal {
		sev = analysis.SeverityWarning
	}
	if amdahl != nil {
		sum += fmt.Sprintf("; σ = %.2f: %s of the work is serialized", amdahl.Sigma, fraction(amdahl.Sigma))
	}
	var ev []string
	next := "The work scales with the CPUs: look elsewhere (I/O, the load generator) for the limit."
	if last.Normalized < 0.75*ideal {
		next = "It does not scale and no lock explains it: look at a CPU profile (perf), memory bandwidth, and synchronization ctprof cannot see (spin locks, atomics, false sharing)."
	}
	if len(r.Locks) > 0 {
		l := r.Locks[0]
		a, b := l.BlockedShare[0], l.BlockedShare[len(l.BlockedShare)-1]
		if b > a && b >= 0.05 {
			where := ""
			if l.Site != "" {
				where = " at " + l.Site
			}
			sum += fmt.Sprintf("; %s%s takes %.0f %% of samples at %d %s against %.0f %% at %d", l.Name, where, 100*b, last.N, unit, 100*a, first.N)
			next = "This lock grows with the CPUs: shorten or split its critical section before adding hardware."
			if sev == analysis.SeverityInfo {
				sev = analysis.SeverityWarning
			}
		}
		for _, tr := range r.Locks {
			ev = append(ev, fmt.Sprintf("%s: blocked share by level %s", tr.Name, shares(tr.BlockedShare)))
			if len(ev) == 5 {
				break
			}
		}
	}
	for _, lv := range r.Levels {
		line := fmt.Sprintf("%d %s: %.6g (%.2fx)", lv.N, unit, lv.Throughput, lv.Normalized)
		if lv.Disturbed() {
			// The figure is what the workload did with what was left.
			line += fmt.Sprintf("; other processes took %.0f %% of the CPUs meanwhile (least disturbed of %d measurements), so it understates the workload", 100*lv.OtherCPUShare, max(lv.Measurements, 1))
		}
		ev = append(ev, line)
	}
	return []analysis.Finding{{Kind: FindingScalability, Subject: "throughput", Severity: sev, Summary: sum + ".", Evidence: ev, NextStep: next}}
}

func shares(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f %%", 100*x)
	}
	return s
}

// fraction names a share in words.
func fraction(f float64) string {
	switch {
	case f >= 0.95:
		return "nearly all"
	case f >= 0.7:
		return "most"
	case f >= 0.4:
		return "about half"
	case f >= 0.2:
		return "about a quarter"
	case f >= 0.05:
		return "a small part"
	}
	return "almost none"
}
