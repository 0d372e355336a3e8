package usl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Points generated from known parameters with 1 % multiplicative noise
// (seeded) give them back: λ within 3 %, σ within 0.01, κ within 10 % of
// itself or 1e-4 (whichever is larger), each also within 4 standard
// errors, and the curve within 3 % at every level.
func TestUSLRecoversKnownParameters(t *testing.T) {
	tests := []struct {
		name                 string
		sigma, kappa, lambda float64
		levels               []float64
		bound                string
	}{
		{"contention and coherency close", 0.05, 0.0005, 100, []float64{1, 2, 4, 8, 16, 32, 48, 64}, BoundContention},
		{"Amdahl-like (κ = 0)", 0.1, 0, 500, []float64{1, 2, 4, 8, 16, 32}, BoundContention},
		{"strongly retrograde", 0.02, 0.01, 1000, []float64{1, 2, 4, 6, 8, 12, 16, 24, 32}, BoundCoherency},
		{"contention dominates a far peak", 0.2, 1e-5, 30, []float64{1, 2, 4, 8, 16, 32, 64}, BoundContention},
		{"near linear", 0.001, 0.00001, 50, []float64{1, 4, 8, 16, 32, 64}, BoundCoherency},
		{"levels not starting at 1", 0.03, 0.001, 2000, []float64{2, 4, 8, 16, 24, 32, 48}, BoundCoherency},
		{"fractional CPUs", 0.1, 0.002, 80, []float64{0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24}, BoundContention},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			truth := &Fit{Sigma: tc.sigma, Kappa: tc.kappa, Lambda: tc.lambda}
			pts := synthetic(truth, tc.levels, 3, 0.01, 7)
			f, err := FitUSL(pts)
			require.NoError(t, err)
			inBounds(t, f)
			relEqual(t, tc.lambda, f.Lambda, 0.03, "λ")
			assert.InDelta(t, tc.sigma, f.Sigma, 0.01, "σ")
			assert.InDelta(t, tc.kappa, f.Kappa, math.Max(0.1*tc.kappa, 1e-4), "κ")
			require.NotNil(t, f.SigmaStdErr)
			require.NotNil(t, f.KappaStdErr)
			require.NotNil(t, f.LambdaStdErr)
			assert.LessOrEqual(t, math.Abs(f.Sigma-tc.sigma), 4**f.SigmaStdErr+1e-12, "σ within 4 standard errors")
			assert.LessOrEqual(t, math.Abs(f.Kappa-tc.kappa), 4**f.KappaStdErr+1e-12, "κ within 4 standard errors")
			assert.LessOrEqual(t, math.Abs(f.Lambda-tc.lambda), 4**f.LambdaStdErr, "λ within 4 standard errors")
			for _, n := range tc.levels {
				relEqual(t, truth.Throughput(n), f.Throughput(n), 0.03, "X(N)")
			}
			assert.Greater(t, f.R2, 0.98)
			assert.Equal(t, tc.bound, bound(tc.sigma, tc.kappa), "the case is what its name says")
		})
	}
}

// The standard errors mean what they say: over many replicates of one
// experiment with Gaussian noise of constant size (the assumption behind
// s²(JᵀJ)⁻¹), the spread of the fitted parameters matches the standard
// error each fit reports, within 15 % (200 replicates estimate a spread to
// about 5 %).
func TestStandardErrorsMatchTheSpreadOfReplicates(t *testing.T) {
	truth := &Fit{Sigma: 0.05, Kappa: 0.0008, Lambda: 100}
	levels := []float64{1, 2, 4, 8, 12, 16, 24, 32, 48}
	const replicates = 200
	var sig, kap, lam, seSig, seKap, seLam []float64
	for i := 0; i < replicates; i++ {
		rng := rand.New(rand.NewPCG(uint64(100+i), 1))
		var pts []Point
		for _, n := range levels {
			for r := 0; r < 2; r++ {
				pts = append(pts, Point{N: n, Throughput: truth.Throughput(n) + 20*rng.NormFloat64()})
			}
		}
		f, err := FitUSL(pts)
		require.NoError(t, err)
		require.NotNil(t, f.KappaStdErr)
		sig, kap, lam = append(sig, f.Sigma), append(kap, f.Kappa), append(lam, f.Lambda)
		seSig, seKap, seLam = append(seSig, *f.SigmaStdErr), append(seKap, *f.KappaStdErr), append(seLam, *f.LambdaStdErr)
	}
	relEqual(t, stddev(sig), mean(seSig), 0.15, "spread of σ against its standard error")
	relEqual(t, stddev(kap), mean(seKap), 0.15, "spread of κ against its standard error")
	relEqual(t, stddev(lam), mean(seLam), 0.15, "spread of λ against its standard error")
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func stddev(v []float64) float64 {
	m, s := mean(v), 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// Amdahl's law fitted to points it generated: exact without noise, close
// with it, and the USL finds κ ≈ 0 on the same points.
func TestAmdahlRecoversAmdahlData(t *testing.T) {
	for _, sigma := range []float64{0, 0.02, 0.25, 0.6} {
		truth := &Fit{Sigma: sigma, Lambda: 250}
		levels := []float64{1, 2, 4, 8, 16}
		exact, err := FitAmdahl(synthetic(truth, levels, 1, 0, 1))
		require.NoError(t, err)
		assert.InDelta(t, sigma, exact.Sigma, 1e-7, "σ = %g", sigma)
		relEqual(t, 250, exact.Lambda, 1e-7, "λ")
		assert.InDelta(t, 1, exact.R2, 1e-9)

		noisy, err := FitAmdahl(synthetic(truth, levels, 4, 0.02, 3))
		require.NoError(t, err)
		inBounds(t, noisy)
		assert.InDelta(t, sigma, noisy.Sigma, 0.01, "σ = %g", sigma)
		relEqual(t, 250, noisy.Lambda, 0.03, "λ")
		require.NotNil(t, noisy.SigmaStdErr)
		assert.LessOrEqual(t, math.Abs(noisy.Sigma-sigma), 4**noisy.SigmaStdErr+1e-12)

		u, err := FitUSL(synthetic(truth, levels, 1, 0, 1))
		require.NoError(t, err)
		assert.InDelta(t, 0, u.Kappa, 1e-8, "σ = %g: no coherency in Amdahl data", sigma)
		assert.InDelta(t, sigma, u.Sigma, 1e-6)
	}
	// σ = 0.25 on 1 to 16 CPUs: contention caps throughput at λ/σ = 1000.
	f, err := FitAmdahl(synthetic(&Fit{Sigma: 0.25, Lambda: 250}, []float64{1, 2, 4, 8, 16}, 1, 0, 1))
	require.NoError(t, err)
	assert.Equal(t, BoundContention, f.Bound)
	relEqual(t, 1000, f.MaxThroughput, 1e-6, "λ/σ")
	assert.Nil(t, f.PeakConcurrency)
}
