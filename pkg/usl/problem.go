package usl

import "math"

// Parameter indices: every problem carries (σ, κ, λ); Amdahl holds κ at 0.
const (
	iSigma = iota
	iKappa
	iLambda
	nParams
)

type params [nParams]float64

// Bounds. σ stays below 1: at σ = 1 throughput does not grow at all and
// λ alone describes it. λ is fitted on throughputs scaled to at most 1, so
// a λ below 1e-12 of the largest throughput means no fit at all.
const (
	maxSigma  = 1 - 1e-9
	minLambda = 1e-12
)

var (
	lower = params{0, 0, minLambda}
	upper = params{maxSigma, math.Inf(1), math.Inf(1)}
)

// problem is one least-squares problem: the points with throughput scaled
// by scale (the largest measured throughput), so that the fit works on
// numbers near 1 whatever the unit.
type problem struct {
	model string
	n, y  []float64
	scale float64
	free  [nParams]bool // Amdahl does not fit κ
}

func newProblem(points []Point, model string) *problem {
	p := &problem{model: model, n: make([]float64, len(points)), y: make([]float64, len(points))}
	for _, pt := range points {
		p.scale = math.Max(p.scale, pt.Throughput)
	}
	for i, pt := range points {
		p.n[i] = pt.N
		p.y[i] = pt.Throughput / p.scale
	}
	p.free = [nParams]bool{true, model == ModelUSL, true}
	return p
}

// eval returns the model's throughput at n and its partial derivatives
// (the analytic Jacobian row). With D = 1 + σ(n−1) + κn(n−1) and X = λn/D:
//
//	∂X/∂σ = −X(n−1)/D,  ∂X/∂κ = −X·n(n−1)/D,  ∂X/∂λ = n/D.
//
// ok is false where the model is undefined (D ≤ 0, possible only for
// n < 1 with a large κ) or a number overflows.
func eval(th params, n float64) (x float64, grad params, ok bool) {
	d := 1 + th[iSigma]*(n-1) + th[iKappa]*n*(n-1)
	if !(d > 0) || math.IsInf(d, 0) {
		return 0, grad, false
	}
	x = th[iLambda] * n / d
	grad[iSigma] = -x * (n - 1) / d
	grad[iKappa] = -x * n * (n - 1) / d
	grad[iLambda] = n / d
	for _, v := range [...]float64{x, grad[0], grad[1], grad[2]} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, grad, false
		}
	}
	return x, grad, true
}

// ssr is the sum of squared residuals at th; +Inf where the model is
// undefined.
func (p *problem) ssr(th params) float64 {
	s := 0.0
	for i, n := range p.n {
		x, _, ok := eval(th, n)
		if !ok {
			return math.Inf(1)
		}
		r := p.y[i] - x
		s += r * r
	}
	if math.IsNaN(s) {
		return math.Inf(1)
	}
	return s
}

// normal returns JᵀJ, Jᵀr and the SSR at th (r = y − X).
func (p *problem) normal(th params) (jtj [nParams]params, jtr params, ssr float64, ok bool) {
	for i, n := range p.n {
		x, g, ok := eval(th, n)
		if !ok {
			return jtj, jtr, math.Inf(1), false
		}
		r := p.y[i] - x
		ssr += r * r
		for a := 0; a < nParams; a++ {
			jtr[a] += g[a] * r
			for b := 0; b < nParams; b++ {
				jtj[a][b] += g[a] * g[b]
			}
		}
	}
	if math.IsNaN(ssr) || math.IsInf(ssr, 0) {
		return jtj, jtr, math.Inf(1), false
	}
	return jtj, jtr, ssr, true
}

// project puts th inside the bounds; parameters not fitted stay at their
// lower bound (κ = 0 for Amdahl).
func (p *problem) project(th params) params {
	for i := range th {
		switch {
		case !p.free[i] || math.IsNaN(th[i]):
			th[i] = lower[i]
		case th[i] < lower[i]:
			th[i] = lower[i]
		case th[i] > upper[i]:
			th[i] = upper[i]
		}
	}
	return th
}

// freeIndices lists the fitted parameters.
func (p *problem) freeIndices() []int {
	var idx []int
	for i, f := range p.free {
		if f {
			idx = append(idx, i)
		}
	}
	return idx
}

// sub extracts the rows and columns idx of a.
func sub(a [nParams]params, idx []int) [][]float64 {
	m := make([][]float64, len(idx))
	for i, r := range idx {
		m[i] = make([]float64, len(idx))
		for j, c := range idx {
			m[i][j] = a[r][c]
		}
	}
	return m
}
