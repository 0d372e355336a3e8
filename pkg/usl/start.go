package usl

import "math"

// starts returns the starting points of the search; the fit keeps the best
// of the solutions reached from each (the USL's least-squares surface is
// smooth, but a poor start can stall on a bound).
//
//  1. The linearised law. N/X = (1 + σ(N−1) + κN(N−1))/λ is linear in
//     1/λ, σ/λ and κ/λ, so ordinary least squares of N/X on 1, N−1 and
//     N(N−1) gives all three at once.
//  2. λ from the smallest N (X/N there, averaged over its repeats), then
//     Nλ/X − 1 = σ(N−1) + κN(N−1) by least squares without intercept.
//  3. λ as in 2 with σ = κ = 0: linear scaling, always feasible.
func (p *problem) starts() []params {
	var out []params
	if th, ok := p.linearised(); ok {
		out = append(out, th)
	}
	lambda := p.smallestNLambda()
	if th, ok := p.fromLambda(lambda); ok {
		out = append(out, th)
	}
	out = append(out, params{0, 0, lambda})
	for i := range out {
		out[i] = p.project(out[i])
	}
	return out
}

// regressors are the columns of the linearised law: 1, N−1, N(N−1); the
// last only for the USL.
func (p *problem) regressors(n float64) []float64 {
	if p.free[iKappa] {
		return []float64{1, n - 1, n * (n - 1)}
	}
	return []float64{1, n - 1}
}

func (p *problem) linearised() (params, bool) {
	k := len(p.regressors(1))
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k)
	}
	b := make([]float64, k)
	for i, n := range p.n {
		z := n / p.y[i]
		if math.IsInf(z, 0) || math.IsNaN(z) {
			return params{}, false
		}
		x := p.regressors(n)
		for r := range x {
			b[r] += x[r] * z
			for c := range x {
				a[r][c] += x[r] * x[c]
			}
		}
	}
	c, ok := solveSymmetric(a, b)
	if !ok || !(c[0] > 0) {
		return params{}, false
	}
	th := params{c[1] / c[0], 0, 1 / c[0]}
	if k == 3 {
		th[iKappa] = c[2] / c[0]
	}
	return th, true
}

func (p *problem) smallestNLambda() float64 {
	lo := math.Inf(1)
	for _, n := range p.n {
		lo = math.Min(lo, n)
	}
	sum, count := 0.0, 0
	for i, n := range p.n {
		if n == lo {
			sum += p.y[i] / n
			count++
		}
	}
	l := sum / float64(count)
	if !(l > minLambda) || math.IsInf(l, 0) {
		return 1 // the largest throughput, scaled: a harmless guess
	}
	return l
}

func (p *problem) fromLambda(lambda float64) (params, bool) {
	k := len(p.regressors(1)) - 1
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k)
	}
	b := make([]float64, k)
	for i, n := range p.n {
		z := n*lambda/p.y[i] - 1
		if math.IsInf(z, 0) || math.IsNaN(z) {
			return params{}, false
		}
		x := p.regressors(n)[1:]
		for r := range x {
			b[r] += x[r] * z
			for c := range x {
				a[r][c] += x[r] * x[c]
			}
		}
	}
	c, ok := solveSymmetric(a, b)
	if !ok {
		return params{}, false
	}
	th := params{c[0], 0, lambda}
	if k == 2 {
		th[iKappa] = c[1]
	}
	return th, true
}
