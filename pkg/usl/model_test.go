package usl

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestThroughputAndSpeedup(t *testing.T) {
	f := &Fit{Sigma: 0.1, Kappa: 0.01, Lambda: 50}
	assert.InDelta(t, 50, f.Throughput(1), 1e-12, "X(1) = λ")
	// N = 4: 4 / (1 + 0.3 + 0.12) = 2.8169…
	assert.InDelta(t, 4/1.42, f.Speedup(4), 1e-12)
	assert.InDelta(t, 50*4/1.42, f.Throughput(4), 1e-9)
	amdahl := &Fit{Sigma: 0.5, Lambda: 1}
	assert.InDelta(t, 2, amdahl.Speedup(1e12), 1e-9, "C(p) → 1/σ")
}

// The bound rule: the term whose own cap on throughput is lower wins.
func TestBoundRule(t *testing.T) {
	tests := []struct {
		name         string
		sigma, kappa float64
		want         string
	}{
		{"nothing", 0, 0, BoundNone},
		{"contention only", 0.1, 0, BoundContention},
		{"coherency only", 0, 1e-4, BoundCoherency},
		// κ = 1e-4 alone caps at 1/(0.01·1.99) ≈ 50.3λ.
		{"σ caps at 20λ, below κ's 50λ", 0.05, 1e-4, BoundContention},
		{"σ caps at 100λ, above κ's 50λ", 0.01, 1e-4, BoundCoherency},
		{"κ ≥ 1: no growth past N = 1", 0.5, 2, BoundCoherency},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, bound(tc.sigma, tc.kappa))
		})
	}
	// The coherency cap is the peak of N/(1+κN(N−1)): check by scanning.
	for _, kappa := range []float64{1e-6, 1e-4, 0.01, 0.3} {
		f := &Fit{Kappa: kappa, Lambda: 1}
		best := 0.0
		for n := 1.0; n < 3/math.Sqrt(kappa); n *= 1.0001 {
			best = math.Max(best, f.Speedup(n))
		}
		assert.InDelta(t, best, coherencyCap(kappa), 1e-6*best, "κ = %g", kappa)
	}
}
