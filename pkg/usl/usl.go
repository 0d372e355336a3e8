// Package usl fits Amdahl's law and Neil Gunther's Universal Scalability
// Law to measured (concurrency, throughput) points.
//
// Amdahl:  X(N) = λN / (1 + σ(N−1))
// USL:     X(N) = λN / (1 + σ(N−1) + κN(N−1))
//
// σ is contention (the serialized share of the work), κ coherency (the
// cost of keeping shared state consistent, growing with N²), λ the
// throughput of one unit of concurrency. Fits are bounded nonlinear least
// squares (Levenberg–Marquardt with analytic Jacobians): σ in [0, 1),
// κ ≥ 0, λ > 0.
package usl

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Point is one measurement.
type Point struct {
	N          float64 // concurrency: CPUs, clients, threads
	Throughput float64
}

// Errors callers can act on.
var (
	// ErrTooFewPoints: a fit needs more distinct concurrency levels than
	// it has parameters (USL: 4, since three parameters are fitted and one
	// more is needed to judge the fit; Amdahl: 2).
	ErrTooFewPoints = errors.New("too few distinct concurrency levels")
	// ErrBadPoint: a concurrency or throughput is not a positive number.
	ErrBadPoint = errors.New("concurrency and throughput must be positive numbers")
)

// Fit is a fitted model.
type Fit struct {
	Model  string // "usl" or "amdahl"
	Sigma  float64
	Kappa  float64 // 0 for Amdahl
	Lambda float64
	// Standard errors of the parameters; nil when they cannot be estimated
	// (as many points as parameters, or a singular problem).
	SigmaStdErr, KappaStdErr, LambdaStdErr *float64
	// R2 is the share of the throughput's variance the model explains.
	R2 float64
	// PeakConcurrency is N* = sqrt((1−σ)/κ), where throughput peaks; nil
	// without coherency (κ = 0), when throughput only levels off.
	PeakConcurrency *float64
	// MaxThroughput is X(N*), or the asymptote λ/σ without a peak; +Inf
	// when nothing limits it (σ = κ = 0).
	MaxThroughput float64
	// Bound says what limits scaling: "coherency" (a peak, beyond which
	// adding concurrency lowers throughput), "contention" (a ceiling at
	// λ/σ), or "none" (linear in the measured range).
	Bound string
	// Warnings say why the fit deserves less trust.
	Warnings []string
	Points   int
}

// Throughput evaluates the fitted model at n.
func (f *Fit) Throughput(n float64) float64 {
	return f.Lambda * n / (1 + f.Sigma*(n-1) + f.Kappa*n*(n-1))
}

// maxSigma keeps σ below 1: at σ = 1 nothing scales and λ is
// indistinguishable from a constant.
const maxSigma = 1 - 1e-9

// FitUSL fits the Universal Scalability Law; it needs 4 distinct N.
func FitUSL(points []Point) (*Fit, error) {
	return fit(points, true)
}

// FitAmdahl fits Amdahl's law; it needs 2 distinct N (with exactly two
// the fit is an exact solve, without standard errors).
func FitAmdahl(points []Point) (*Fit, error) {
	return fit(points, false)
}

func fit(points []Point, usl bool) (*Fit, error) {
	if err := check(points); err != nil {
		return nil, err
	}
	need := 2
	if usl {
		need = 4
	}
	if d := distinct(points); d < need {
		model := "Amdahl's law"
		if usl {
			model = "the Universal Scalability Law"
		}
		return nil, fmt.Errorf("%w: %s needs %d, got %d", ErrTooFewPoints, model, need, d)
	}
	m := &model{usl: usl, pts: points}
	theta := m.start()
	theta = m.levenbergMarquardt(theta)
	return m.result(theta), nil
}

func check(points []Point) error {
	for i, p := range points {
		if !(p.N > 0) || !(p.Throughput > 0) || math.IsInf(p.N, 0) || math.IsInf(p.Throughput, 0) {
			return fmt.Errorf("%w: point %d is (%v, %v)", ErrBadPoint, i+1, p.N, p.Throughput)
		}
	}
	return nil
}

func distinct(points []Point) int {
	seen := map[float64]bool{}
	for _, p := range points {
		seen[p.N] = true
	}
	return len(seen)
}

// model is one fitting problem; theta is (σ, λ) or (σ, κ, λ).
type model struct {
	usl bool
	pts []Point
}

func (m *model) params(theta []float64) (sigma, kappa, lambda float64) {
	if m.usl {
		return theta[0], theta[1], theta[2]
	}
	return theta[0], 0, theta[1]
}

// eval returns X(N) and its partial derivatives with respect to theta.
func (m *model) eval(theta []float64, n float64, grad []float64) float64 {
	s, k, l := m.params(theta)
	d := 1 + s*(n-1) + k*n*(n-1)
	x := l * n / d
	dd := -l * n / (d * d)
	grad[0] = dd * (n - 1)
	if m.usl {
		grad[1] = dd * n * (n - 1)
		grad[2] = n / d
	} else {
		grad[1] = n / d
	}
	return x
}

// start guesses λ from the smallest N and σ, κ from the linearised law:
// N/C − 1 = σ(N−1) + κN(N−1) with C = X/λ, by least squares.
func (m *model) start() []float64 {
	pts := append([]Point(nil), m.pts...)
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].N < pts[j].N })
	lambda := pts[0].Throughput / pts[0].N
	// Normal equations of y = σ·a + κ·b over the points with N > 1.
	var saa, sab, sbb, say, sby float64
	for _, p := range pts {
		if p.N <= 1 {
			continue
		}
		a, b := p.N-1, p.N*(p.N-1)
		y := p.N/(p.Throughput/lambda) - 1
		saa += a * a
		sab += a * b
		sbb += b * b
		say += a * y
		sby += b * y
	}
	var sigma, kappa float64
	if m.usl {
		if det := saa*sbb - sab*sab; det > 0 {
			sigma = (say*sbb - sby*sab) / det
			kappa = (saa*sby - sab*say) / det
		}
	} else if saa > 0 {
		sigma = say / saa
	}
	sigma = clamp(sigma, 0, maxSigma)
	kappa = math.Max(kappa, 0)
	if m.usl {
		return []float64{sigma, kappa, lambda}
	}
	return []float64{sigma, lambda}
}

func (m *model) project(theta []float64) {
	theta[0] = clamp(theta[0], 0, maxSigma)
	if m.usl {
		theta[1] = math.Max(theta[1], 0)
	}
	l := len(theta) - 1
	theta[l] = math.Max(theta[l], 1e-300)
}

func clamp(v, lo, hi float64) float64 {
	if math.IsNaN(v) {
		return lo
	}
	return math.Min(math.Max(v, lo), hi)
}

func (m *model) ssr(theta []float64) float64 {
	grad := make([]float64, len(theta))
	s := 0.0
	for _, p := range m.pts {
		r := p.Throughput - m.eval(theta, p.N, grad)
		s += r * r
	}
	return s
}

// normal builds JᵀJ and Jᵀr at theta.
func (m *model) normal(theta []float64) (jtj [][]float64, jtr []float64) {
	k := len(theta)
	jtj = make([][]float64, k)
	for i := range jtj {
		jtj[i] = make([]float64, k)
	}
	jtr = make([]float64, k)
	grad := make([]float64, k)
	for _, p := range m.pts {
		r := p.Throughput - m.eval(theta, p.N, grad)
		for i := 0; i < k; i++ {
			jtr[i] += grad[i] * r
			for j := 0; j < k; j++ {
				jtj[i][j] += grad[i] * grad[j]
			}
		}
	}
	return jtj, jtr
}

// levenbergMarquardt minimises the squared residuals from theta, keeping
// the parameters within bounds by projection after every step.
func (m *model) levenbergMarquardt(theta []float64) []float64 {
	k := len(theta)
	mu := 1e-3
	cur := m.ssr(theta)
	for iter := 0; iter < 500; iter++ {
		jtj, jtr := m.normal(theta)
		improved := false
		for tries := 0; tries < 30; tries++ {
			a := make([][]float64, k)
			for i := range a {
				a[i] = append([]float64(nil), jtj[i]...)
				a[i][i] += mu * math.Max(jtj[i][i], 1e-12)
			}
			step, ok := solve(a, append([]float64(nil), jtr...))
			if !ok {
				mu *= 10
				continue
			}
			next := make([]float64, k)
			for i := range theta {
				next[i] = theta[i] + step[i]
			}
			m.project(next)
			if s := m.ssr(next); s < cur {
				change := 0.0
				for i := range theta {
					change = math.Max(change, math.Abs(next[i]-theta[i])/math.Max(math.Abs(theta[i]), 1e-12))
				}
				theta, cur = next, s
				mu = math.Max(mu/10, 1e-12)
				improved = true
				if change < 1e-12 {
					return theta
				}
				break
			}
			mu *= 10
		}
		if !improved {
			return theta
		}
	}
	return theta
}

// solve solves a·x = b by Gaussian elimination with partial pivoting.
func solve(a [][]float64, b []float64) ([]float64, bool) {
	n := len(b)
	for col := 0; col < n; col++ {
		pivot := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[pivot][col]) {
				pivot = r
			}
		}
		if math.Abs(a[pivot][col]) < 1e-300 || math.IsNaN(a[pivot][col]) {
			return nil, false
		}
		a[col], a[pivot] = a[pivot], a[col]
		b[col], b[pivot] = b[pivot], b[col]
		for r := col + 1; r < n; r++ {
			f := a[r][col] / a[col][col]
			for c := col; c < n; c++ {
				a[r][c] -= f * a[col][c]
			}
			b[r] -= f * b[col]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for c := r + 1; c < n; c++ {
			s -= a[r][c] * x[c]
		}
		x[r] = s / a[r][r]
	}
	return x, true
}

// invert inverts a small symmetric matrix (for the covariance).
func invert(a [][]float64) ([][]float64, bool) {
	n := len(a)
	inv := make([][]float64, n)
	for i := range inv {
		col := make([]float64, n)
		col[i] = 1
		m := make([][]float64, n)
		for r := range m {
			m[r] = append([]float64(nil), a[r]...)
		}
		x, ok := solve(m, col)
		if !ok {
			return nil, false
		}
		inv[i] = x
	}
	return inv, true
}

// result describes the fit at theta.
func (m *model) result(theta []float64) *Fit {
	s, k, l := m.params(theta)
	f := &Fit{Model: "amdahl", Sigma: s, Kappa: k, Lambda: l, Points: len(m.pts)}
	if m.usl {
		f.Model = "usl"
	}
	ssr := m.ssr(theta)
	mean := 0.0
	for _, p := range m.pts {
		mean += p.Throughput
	}
	mean /= float64(len(m.pts))
	sst := 0.0
	for _, p := range m.pts {
		sst += (p.Throughput - mean) * (p.Throughput - mean)
	}
	if sst > 0 {
		f.R2 = 1 - ssr/sst
	} else {
		f.R2 = 1
	}
	// Standard errors: s²(JᵀJ)⁻¹ with s² = SSR/(n−p).
	if dof := len(m.pts) - len(theta); dof > 0 {
		jtj, _ := m.normal(theta)
		if inv, ok := invert(jtj); ok {
			s2 := ssr / float64(dof)
			se := func(i int) *float64 {
				v := math.Sqrt(math.Max(s2*inv[i][i], 0))
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil
				}
				return &v
			}
			f.SigmaStdErr = se(0)
			if m.usl {
				f.KappaStdErr, f.LambdaStdErr = se(1), se(2)
			} else {
				f.LambdaStdErr = se(1)
			}
		}
	}
	switch {
	case k > 0:
		peak := math.Sqrt((1 - s) / k)
		f.PeakConcurrency = &peak
		f.MaxThroughput = f.Throughput(peak)
		f.Bound = "coherency"
	case s > 0:
		f.MaxThroughput = l / s
		f.Bound = "contention"
	default:
		f.MaxThroughput = math.Inf(1)
		f.Bound = "none"
	}
	f.Warnings = m.warnings(f)
	return f
}

func (m *model) warnings(f *Fit) []string {
	var w []string
	lo, hi := math.Inf(1), 0.0
	for _, p := range m.pts {
		lo, hi = math.Min(lo, p.N), math.Max(hi, p.N)
	}
	if hi/lo < 4 {
		w = append(w, fmt.Sprintf("the concurrency range is narrow (%g to %g): the fitted parameters may not hold outside it", lo, hi))
	}
	if f.Sigma <= 0 {
		w = append(w, "σ sits on its bound 0: no contention seen")
	}
	if f.Sigma >= maxSigma {
		w = append(w, "σ sits on its bound 1: throughput does not grow at all")
	}
	if m.usl && f.Kappa <= 0 {
		w = append(w, "κ sits on its bound 0: no coherency cost seen (Amdahl's law describes the data as well)")
	}
	if f.PeakConcurrency != nil {
		beyond := 0
		for _, p := range m.pts {
			if p.N > *f.PeakConcurrency {
				beyond++
			}
		}
		if *f.PeakConcurrency > 2*hi {
			w = append(w, fmt.Sprintf("the peak (N* ≈ %.0f) lies far beyond the largest measured concurrency (%g): measure closer to it before trusting it", *f.PeakConcurrency, hi))
		} else if beyond < 2 && *f.PeakConcurrency < hi {
			w = append(w, "fewer than two points lie beyond the peak: the retrograde part is barely measured")
		}
	}
	if f.R2 < 0.9 {
		w = append(w, fmt.Sprintf("the fit is poor (R² = %.2f): the measurements are noisy or the model does not describe them", f.R2))
	}
	return w
}
