// Package usl fits Amdahl's law and Neil Gunther's Universal Scalability
// Law (USL) to measured (concurrency, throughput) points.
//
//	Amdahl:  X(N) = λ·C(N),  C(N) = N / (1 + σ(N−1))
//	USL:     X(N) = λN / (1 + σ(N−1) + κN(N−1))
//
// σ is contention: the share of the work that runs one at a time (a lock,
// a single queue), which caps throughput at λ/σ. κ is coherency: the cost
// of keeping shared state consistent between the N parties (cache lines
// moving between CPUs, cross-talk), which grows with N² and makes
// throughput fall after a peak at N* = sqrt((1−σ)/κ). λ is the throughput
// of one unit of concurrency.
//
// The fits are bounded nonlinear least squares: Levenberg–Marquardt with
// analytic Jacobians, an active set for the bounds σ ∈ [0, 1), κ ≥ 0,
// λ > 0, started from linearised fits. A Fit carries standard errors of
// the parameters, R², the peak, the maximum throughput, what bounds it,
// and warnings when the data deserve less trust.
//
// The package has no other ctprof imports; it is usable as a library.
package usl
