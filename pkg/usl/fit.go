package usl

import (
	"fmt"
	"math"
)

// Distinct concurrency levels each model needs. The USL fits three
// parameters and needs a fourth level to say anything about the fit.
// Amdahl's two parameters are determined exactly by two levels: enough
// for a machine with two CPUs, with a warning below four.
const (
	MinLevelsUSL    = 4
	MinLevelsAmdahl = 2
)

// FitUSL fits the Universal Scalability Law. It needs MinLevelsUSL
// distinct concurrencies (ErrTooFewPoints) and positive, finite numbers
// (ErrBadPoint).
func FitUSL(points []Point) (*Fit, error) {
	return fit(points, ModelUSL)
}

// FitAmdahl fits Amdahl's law, the USL with κ = 0. It needs
// MinLevelsAmdahl distinct concurrencies; with exactly two the fit is an
// exact solve, without standard errors.
func FitAmdahl(points []Point) (*Fit, error) {
	return fit(points, ModelAmdahl)
}

func fit(points []Point, model string) (*Fit, error) {
	if err := validate(points); err != nil {
		return nil, err
	}
	levels := distinct(points)
	need, name := MinLevelsUSL, "the Universal Scalability Law"
	if model == ModelAmdahl {
		need, name = MinLevelsAmdahl, "Amdahl's law"
	}
	if levels < need {
		return nil, fmt.Errorf("%w: %s needs %d, got %d", ErrTooFewPoints, name, need, levels)
	}
	p := newProblem(points, model)
	best, bestSSR := params{}, math.Inf(1)
	for _, s := range p.starts() {
		th, ssr := p.minimise(s)
		if ssr < bestSSR {
			best, bestSSR = th, ssr
		}
	}
	if math.IsInf(bestSSR, 0) || math.IsNaN(bestSSR) {
		return nil, fmt.Errorf("%w: the model overflows at every candidate (concurrency %g to %g)", ErrNoFit, minN(points), maxN(points))
	}
	f := p.result(best, bestSSR, levels)
	for _, v := range []float64{f.Sigma, f.Kappa, f.Lambda, f.R2} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: the numbers are out of range (throughput up to %g)", ErrNoFit, p.scale)
		}
	}
	f.Warnings = warnings(f, points)
	return f, nil
}

func validate(points []Point) error {
	for i, pt := range points {
		if !positiveFinite(pt.N) || !positiveFinite(pt.Throughput) {
			return fmt.Errorf("%w: point %d is (N=%v, X=%v)", ErrBadPoint, i+1, pt.N, pt.Throughput)
		}
	}
	return nil
}

func positiveFinite(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func distinct(points []Point) int {
	seen := make(map[float64]struct{}, len(points))
	for _, pt := range points {
		seen[pt.N] = struct{}{}
	}
	return len(seen)
}

func minN(points []Point) float64 {
	lo := math.Inf(1)
	for _, pt := range points {
		lo = math.Min(lo, pt.N)
	}
	return lo
}

func maxN(points []Point) float64 {
	hi := 0.0
	for _, pt := range points {
		hi = math.Max(hi, pt.N)
	}
	return hi
}

// result describes the solution th of p.
func (p *problem) result(th params, ssr float64, levels int) *Fit {
	f := &Fit{
		Model: p.model, Sigma: th[iSigma], Kappa: th[iKappa], Lambda: th[iLambda] * p.scale,
		Points: len(p.n), Levels: levels,
	}
	f.R2 = p.rSquared(ssr)
	se := p.standardErrors(th, ssr)
	f.SigmaStdErr = se[iSigma]
	f.KappaStdErr = se[iKappa]
	if se[iLambda] != nil {
		if v := *se[iLambda] * p.scale; !math.IsInf(v, 0) { // near MaxFloat64 it overflows
			f.LambdaStdErr = &v
		}
	}
	switch {
	case f.Kappa > 0:
		peak := math.Sqrt((1 - f.Sigma) / f.Kappa)
		f.PeakConcurrency = &peak
		f.MaxThroughput = f.Throughput(peak)
	case f.Sigma > 0:
		f.MaxThroughput = f.Lambda / f.Sigma
	default:
		f.MaxThroughput = math.Inf(1)
	}
	f.Bound = bound(f.Sigma, f.Kappa)
	return f
}

// rSquared is 1 − SSR/SST. When every throughput is equal SST is 0: R² is
// 1 if the model reproduces them to a millionth (σ stops just short of 1),
// else 0.
func (p *problem) rSquared(ssr float64) float64 {
	mean := 0.0
	for _, y := range p.y {
		mean += y
	}
	mean /= float64(len(p.y))
	sst, sumSq := 0.0, 0.0
	for _, y := range p.y {
		sst += (y - mean) * (y - mean)
		sumSq += y * y
	}
	if sst > 1e-24*sumSq {
		return 1 - ssr/sst
	}
	if ssr <= 1e-12*sumSq {
		return 1
	}
	return 0
}

// standardErrors returns sqrt of the diagonal of s²(JᵀJ)⁻¹ over the fitted
// parameters, with s² = SSR/(n−p); nil entries where it cannot be had.
// λ's is on the scaled throughput.
func (p *problem) standardErrors(th params, ssr float64) [nParams]*float64 {
	var out [nParams]*float64
	idx := p.freeIndices()
	dof := len(p.n) - len(idx)
	if dof <= 0 {
		return out
	}
	jtj, _, _, ok := p.normal(th)
	if !ok {
		return out
	}
	inv, ok := invertSymmetric(sub(jtj, idx))
	if !ok {
		return out
	}
	s2 := ssr / float64(dof)
	for i, r := range idx {
		v := s2 * inv[i][i]
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		v = math.Sqrt(v)
		out[r] = &v
	}
	return out
}
