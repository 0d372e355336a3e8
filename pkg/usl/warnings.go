package usl

import (
	"fmt"
	"math"
	"sort"
)

// Thresholds of the warnings (docs/usl.md lists them for users).
const (
	// narrowRange: a largest concurrency under 4× the smallest leaves σ and
	// κ to be told apart by curvature the data barely show.
	narrowRange = 4
	// farPeak: a peak beyond 2× the largest concurrency measured is an
	// extrapolation that κ's uncertainty dominates.
	farPeak = 2
	// poorR2: below it the model explains too little of the variance.
	poorR2 = 0.9
	// A point is an outlier when its relative residual differs from those
	// of its neighbours (see outlierWarnings) by more than outlierMADs
	// robust standard deviations (1.4826 × the median absolute deviation)
	// and by more than outlierShare, among at least outlierMinPoints points
	// on more than outlierNeighbours levels.
	outlierMADs       = 5
	outlierShare      = 0.10
	outlierMinPoints  = 6
	outlierNeighbours = 4
	maxOutliersNamed  = 3
	// superLinear: throughput per unit of concurrency more than 10 % above
	// that of the smallest level is faster than linear, which neither law
	// can describe (σ and κ stop at 0).
	superLinear = 1.10
)

// warnings says why f, fitted to points, deserves less trust.
func warnings(f *Fit, points []Point) []string {
	var w []string
	lo, hi := minN(points), maxN(points)
	w = append(w, superLinearWarnings(points)...)
	if hi/lo < narrowRange {
		w = append(w, fmt.Sprintf("the concurrency range is narrow (%g to %g, less than %d×): the parameters may not hold outside it; measure a wider range", lo, hi, narrowRange))
	}
	if f.Model == ModelAmdahl && f.Levels < MinLevelsUSL {
		if f.Levels == MinLevelsAmdahl {
			w = append(w, "two concurrency levels determine σ and λ exactly: nothing checks that the law holds")
		} else {
			w = append(w, fmt.Sprintf("only %d concurrency levels: σ and λ rest on them alone", f.Levels))
		}
	}
	w = append(w, boundWarnings(f)...)
	w = append(w, precisionWarnings(f)...)
	w = append(w, peakWarnings(f, points, hi)...)
	if f.R2 < poorR2 {
		w = append(w, fmt.Sprintf("the fit is poor (R² = %.2f): the measurements are noisy, or the model does not describe them", f.R2))
	}
	w = append(w, outlierWarnings(f, points)...)
	return w
}

// superLinearWarnings flag throughput per unit of concurrency that rises
// with concurrency. Real contention only lowers it, so super-linear data
// almost always come from the measurement: the fit then reports σ = 0 and
// would otherwise look like perfect scaling.
func superLinearWarnings(points []Point) []string {
	means := levelMeans(points)
	base := means[0]
	worst := base
	for _, m := range means[1:] {
		if m.Throughput/m.N > worst.Throughput/worst.N {
			worst = m
		}
	}
	ratio := (worst.Throughput / worst.N) / (base.Throughput / base.N)
	if !(ratio > superLinear) {
		return nil
	}
	return []string{fmt.Sprintf("throughput grows faster than concurrency: per unit it is %.2f× higher at N = %g than at N = %g. "+
		"Contention cannot do that, so σ and κ stop at 0 and say nothing. It is usually a measurement artefact: "+
		"the small levels ran cold (JIT warm-up, caches), ran shorter or with another load beside them, the CPUs changed frequency (turbo, power saving), "+
		"or the working set fits in the caches of more CPUs only. Measure each level after a warm-up, for equal time, and repeat the levels in another order",
		ratio, worst.N, base.N)}
}

// levelMeans returns the mean throughput of each concurrency level, the
// smallest level first.
func levelMeans(points []Point) []Point {
	sum := map[float64]float64{}
	count := map[float64]int{}
	for _, pt := range points {
		sum[pt.N] += pt.Throughput
		count[pt.N]++
	}
	out := make([]Point, 0, len(sum))
	for n, s := range sum {
		out = append(out, Point{N: n, Throughput: s / float64(count[n])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

func boundWarnings(f *Fit) []string {
	var w []string
	if f.Sigma <= lower[iSigma] {
		w = append(w, "σ sits on its bound 0: no contention seen in the measured range")
	}
	if f.Sigma >= upper[iSigma] {
		w = append(w, "σ sits on its bound 1: throughput does not grow with concurrency at all")
	}
	if f.Model == ModelUSL && f.Kappa <= lower[iKappa] {
		w = append(w, "κ sits on its bound 0: no coherency cost seen; Amdahl's law describes these data as well")
	}
	return w
}

// precisionWarnings flag a parameter off its bound whose standard error
// exceeds its value: the data do not tell it from zero.
func precisionWarnings(f *Fit) []string {
	var w []string
	if f.Sigma > 0 && f.SigmaStdErr != nil && *f.SigmaStdErr > f.Sigma {
		w = append(w, fmt.Sprintf("σ is not distinguishable from 0 (σ = %.3g ± %.3g)", f.Sigma, *f.SigmaStdErr))
	}
	if f.Kappa > 0 && f.KappaStdErr != nil && *f.KappaStdErr > f.Kappa {
		w = append(w, fmt.Sprintf("κ is not distinguishable from 0 (κ = %.3g ± %.3g): the peak is uncertain", f.Kappa, *f.KappaStdErr))
	}
	return w
}

func peakWarnings(f *Fit, points []Point, hi float64) []string {
	if f.PeakConcurrency == nil {
		return nil
	}
	peak := *f.PeakConcurrency
	if peak > farPeak*hi {
		return []string{fmt.Sprintf("the peak (N* ≈ %.3g) lies far beyond the largest concurrency measured (%g): measure closer to it before trusting it", peak, hi)}
	}
	if peak >= hi {
		return nil // a moderate extrapolation: what the USL is for
	}
	beyond := map[float64]bool{}
	for _, pt := range points {
		if pt.N > peak {
			beyond[pt.N] = true
		}
	}
	if len(beyond) < 2 {
		return []string{fmt.Sprintf("only %d concurrency level lies beyond the peak (N* ≈ %.3g): the decline rests on it", len(beyond), peak)}
	}
	return nil
}

// outlierWarnings name the points out of line with their neighbours.
//
// A residual is taken relative to the fitted value (measurement noise grows
// with throughput) and compared with the median relative residual of the
// repeats at its level and of the points at the outlierNeighbours nearest
// other levels. Comparing with neighbours, not with zero, keeps a model
// that misses the data's shape (Amdahl on retrograde data) from blaming
// single points; the median keeps one wild point from hiding itself or
// its neighbours. The yardstick is the median absolute deviation of those
// differences over all points.
func outlierWarnings(f *Fit, points []Point) []string {
	if len(points) < outlierMinPoints {
		return nil
	}
	var levels []float64
	seen := map[float64]bool{}
	for _, pt := range points {
		if !seen[pt.N] {
			seen[pt.N] = true
			levels = append(levels, pt.N)
		}
	}
	if len(levels) <= outlierNeighbours {
		return nil
	}
	sort.Float64s(levels)
	rank := make(map[float64]int, len(levels))
	for i, n := range levels {
		rank[n] = i
	}
	rel := make([]float64, len(points))
	atLevel := make([][]int, len(levels))
	for i, pt := range points {
		fitted := f.Throughput(pt.N)
		rel[i] = (pt.Throughput - fitted) / fitted
		atLevel[rank[pt.N]] = append(atLevel[rank[pt.N]], i)
	}
	diff := make([]float64, len(points))
	for i, pt := range points {
		var ref []float64
		for _, j := range atLevel[rank[pt.N]] {
			if j != i {
				ref = append(ref, rel[j])
			}
		}
		for _, l := range nearestLevels(rank[pt.N], len(levels), outlierNeighbours) {
			for _, j := range atLevel[l] {
				ref = append(ref, rel[j])
			}
		}
		diff[i] = rel[i] - median(ref)
	}
	abs := make([]float64, len(diff))
	for i, d := range diff {
		abs[i] = math.Abs(d)
	}
	robust := 1.4826 * median(abs)
	var w []string
	extra := 0
	for i, pt := range points {
		if !(abs[i] > outlierMADs*robust && abs[i] > outlierShare) {
			continue // also skips NaN from a fitted value of 0
		}
		if len(w) == maxOutliersNamed {
			extra++
			continue
		}
		w = append(w, fmt.Sprintf("the point N = %g, X = %.6g lies %.0f %% from the fit, out of line with its neighbours: a measurement error? It pulls the fit; remove it if so", pt.N, pt.Throughput, 100*math.Abs(rel[i])))
	}
	if extra > 0 {
		w = append(w, fmt.Sprintf("%d more points lie out of line with their neighbours", extra))
	}
	return w
}

// nearestLevels returns the k level indices nearest to at (by rank),
// alternating below and above, among count levels.
func nearestLevels(at, count, k int) []int {
	var out []int
	for d := 1; len(out) < k && (at-d >= 0 || at+d < count); d++ {
		if at-d >= 0 {
			out = append(out, at-d)
		}
		if at+d < count && len(out) < k {
			out = append(out, at+d)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
