package usl

import (
	"errors"
	"math"
)

// Point is one measurement. Several points may share a concurrency.
type Point struct {
	N          float64 // concurrency: CPUs, client threads, users
	Throughput float64 // work done per unit of time at that concurrency
}

// Errors callers can act on.
var (
	// ErrTooFewPoints: a fit needs more distinct concurrency levels (USL 4,
	// Amdahl 2) than the points have. Repeated measurements of one level
	// count once.
	ErrTooFewPoints = errors.New("too few distinct concurrency levels")
	// ErrBadPoint: a concurrency or throughput is not a positive, finite
	// number.
	ErrBadPoint = errors.New("concurrency and throughput must be positive, finite numbers")
	// ErrNoFit: the numbers are valid but so extreme that the fit
	// overflows (for example throughputs spanning 600 orders of magnitude).
	ErrNoFit = errors.New("the points cannot be fitted")
)

// Model names.
const (
	ModelUSL    = "usl"
	ModelAmdahl = "amdahl"
)

// What bounds throughput (Fit.Bound).
//
// The rule: each term alone would cap throughput. Contention alone (κ = 0)
// caps it at λ/σ, reached only as N grows without end. Coherency alone
// (σ = 0) caps it at its peak, λ/(√κ(2−√κ)) at N = 1/√κ (λ when κ ≥ 1).
// The term whose own cap is lower is the one that bounds throughput.
const (
	BoundCoherency  = "coherency"  // κ's cap is the lower: a peak, then decline
	BoundContention = "contention" // σ's cap is the lower: throughput levels off
	BoundNone       = "none"       // σ = κ = 0: linear in the measured range
)

// Fit is a fitted model.
type Fit struct {
	Model  string  // ModelUSL or ModelAmdahl
	Sigma  float64 // contention σ, in [0, 1)
	Kappa  float64 // coherency κ ≥ 0; always 0 for Amdahl
	Lambda float64 // throughput of one unit of concurrency, > 0

	// Standard errors of the fitted parameters, from s²(JᵀJ)⁻¹ with
	// s² = SSR/(n−p) at the solution; nil when they cannot be estimated
	// (no more points than parameters, or a singular Jacobian).
	// KappaStdErr is nil for Amdahl.
	SigmaStdErr, KappaStdErr, LambdaStdErr *float64

	// R2 is 1 − SSR/SST: the share of the throughput's variance the model
	// explains. It can be negative when the model fits worse than the mean.
	R2 float64

	// PeakConcurrency is N* = sqrt((1−σ)/κ), where throughput peaks; nil
	// without coherency (κ = 0), when throughput only levels off.
	PeakConcurrency *float64
	// MaxThroughput is X(N*) with a peak, else the asymptote λ/σ; +Inf
	// when nothing limits it (σ = κ = 0).
	MaxThroughput float64
	// Bound is BoundCoherency, BoundContention or BoundNone (see their
	// comment for the rule).
	Bound string

	// Warnings say in words why the fit deserves less trust.
	Warnings []string
	// Points is the number of measurements fitted, Levels the number of
	// distinct concurrencies among them.
	Points, Levels int
}

// Throughput evaluates the fitted model at concurrency n.
func (f *Fit) Throughput(n float64) float64 {
	return f.Lambda * f.Speedup(n)
}

// Speedup is C(n) = X(n)/λ: how many times the throughput of one unit the
// model gives at concurrency n.
func (f *Fit) Speedup(n float64) float64 {
	return n / (1 + f.Sigma*(n-1) + f.Kappa*n*(n-1))
}

// bound applies the rule documented at BoundCoherency.
func bound(sigma, kappa float64) string {
	switch {
	case kappa > 0 && coherencyCap(kappa) < contentionCap(sigma):
		return BoundCoherency
	case sigma > 0:
		return BoundContention
	case kappa > 0:
		return BoundCoherency
	}
	return BoundNone
}

// contentionCap is the most throughput, in units of λ, that σ alone allows.
func contentionCap(sigma float64) float64 {
	if sigma <= 0 {
		return math.Inf(1)
	}
	return 1 / sigma
}

// coherencyCap is the most throughput, in units of λ, that κ alone allows:
// the peak of N/(1+κN(N−1)) over N ≥ 1.
func coherencyCap(kappa float64) float64 {
	if kappa <= 0 {
		return math.Inf(1)
	}
	r := math.Sqrt(kappa)
	if r >= 1 {
		return 1 // the peak would lie below N = 1
	}
	return 1 / (r * (2 - r))
}
