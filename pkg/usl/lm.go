package usl

import "math"

// Levenberg–Marquardt limits. The problems are tiny and smooth; a fit
// converges in tens of iterations, so the caps only stop pathological
// inputs from spinning.
const (
	maxIterations = 500
	maxDamping    = 1e30
	// An accepted step that lowers the SSR by less than this share counts
	// as a stall; three stalls in a row end the search (rounding noise).
	stallShare = 1e-15
	// A step that moves no parameter by more than this share of itself
	// ends the search: the solution is known to 10 digits.
	tinyStep = 1e-10
)

// minimise runs bounded Levenberg–Marquardt from start and returns the
// parameters with the lowest SSR it found.
//
// Bounds are kept with an active set: a parameter on a bound whose
// gradient points out of the feasible region is held there for the step,
// the others take the damped Gauss–Newton step (JᵀJ + μ·diag(JᵀJ))δ = Jᵀr,
// and the result is projected back inside the bounds. A step is accepted
// only if it lowers the SSR; μ shrinks after a success and grows after a
// failure (Marquardt's scaling by the diagonal makes it invariant to the
// very different magnitudes of σ, κ and λ).
func (p *problem) minimise(start params) (params, float64) {
	th := p.project(start)
	jtj, jtr, cur, ok := p.normal(th)
	if !ok {
		return th, math.Inf(1)
	}
	mu := 1e-3
	stalls := 0
	for iter := 0; iter < maxIterations && cur > 0; iter++ {
		idx := p.movable(th, jtr)
		if len(idx) == 0 {
			break // every fitted parameter is pinned on a bound: optimal
		}
		accepted := false
		for !accepted && mu < maxDamping {
			a := sub(jtj, idx)
			b := make([]float64, len(idx))
			for i, r := range idx {
				b[i] = jtr[r]
				a[i][i] += mu * math.Max(a[i][i], 1e-300)
			}
			step, ok := solveSymmetric(a, b)
			if !ok {
				mu *= 10
				continue
			}
			cand := th
			moved := 0.0
			for i, r := range idx {
				cand[r] += step[i]
				moved = math.Max(moved, math.Abs(step[i])/math.Max(math.Abs(th[r]), 1e-300))
			}
			if moved < tinyStep {
				// More damping only shrinks the step: nothing left to gain.
				return th, cur
			}
			cand = p.project(cand)
			cjtj, cjtr, cs, ok := p.normal(cand)
			if !ok || !(cs < cur) {
				mu *= 10
				continue
			}
			if (cur-cs)/cur < stallShare {
				stalls++
			} else {
				stalls = 0
			}
			th, jtj, jtr, cur = cand, cjtj, cjtr, cs
			mu = math.Max(mu/10, 1e-15)
			accepted = true
		}
		if !accepted || stalls >= 3 {
			break
		}
	}
	return th, cur
}

// movable returns the fitted parameters that may move this step: not those
// on a bound with the descent direction (Jᵀr) pointing outside it.
func (p *problem) movable(th params, jtr params) []int {
	var idx []int
	for _, i := range p.freeIndices() {
		if th[i] <= lower[i] && jtr[i] <= 0 {
			continue
		}
		if th[i] >= upper[i] && jtr[i] >= 0 {
			continue
		}
		idx = append(idx, i)
	}
	return idx
}
