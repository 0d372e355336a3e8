package usl

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The 32-point benchmark data set (testdata/README.md) and the fit
// published with it: σ = 0.02671591, κ = 7.690945e-4, λ = 995.6486.
func TestUSLReproducesThePublishedBenchmarkFit(t *testing.T) {
	f, err := FitUSL(readCSV(t, "testdata/benchmark32.csv"))
	require.NoError(t, err)
	relEqual(t, 0.02671591, f.Sigma, 1e-3, "σ")
	relEqual(t, 7.690945e-4, f.Kappa, 1e-3, "κ")
	relEqual(t, 995.6486, f.Lambda, 1e-3, "λ")

	// N* = sqrt((1−σ)/κ) and X(N*) follow from the parameters: computed
	// here from the published ones, not from the fit.
	published := &Fit{Sigma: 0.02671591, Kappa: 7.690945e-4, Lambda: 995.6486}
	wantPeak := math.Sqrt((1 - published.Sigma) / published.Kappa)
	require.NotNil(t, f.PeakConcurrency)
	relEqual(t, wantPeak, *f.PeakConcurrency, 1e-3, "N*")
	relEqual(t, published.Throughput(wantPeak), f.MaxThroughput, 1e-3, "X(N*)")
	assert.Equal(t, BoundCoherency, f.Bound, "√κ(2−√κ) = 0.055 > σ = 0.027: κ's cap is the lower")

	assert.Equal(t, 32, f.Points)
	assert.Equal(t, 32, f.Levels)
	assert.Greater(t, f.R2, 0.99)
	assert.LessOrEqual(t, f.R2, 1.0)
	require.NotNil(t, f.SigmaStdErr)
	require.NotNil(t, f.KappaStdErr)
	require.NotNil(t, f.LambdaStdErr)
	assert.Less(t, *f.SigmaStdErr, f.Sigma/3, "σ is well determined by 32 points")
	assert.Less(t, *f.KappaStdErr, f.Kappa/3)
	assert.Less(t, *f.LambdaStdErr, f.Lambda/10)
	assert.Empty(t, f.Warnings, "a wide range, a good fit and a peak just past the data")
}

// The standard errors agree with a finite-difference Jacobian, computed
// here independently of the package's analytic one.
func TestStandardErrorsMatchNumericJacobian(t *testing.T) {
	pts := readCSV(t, "testdata/benchmark32.csv")
	f, err := FitUSL(pts)
	require.NoError(t, err)
	theta := []float64{f.Sigma, f.Kappa, f.Lambda}
	model := func(th []float64, n float64) float64 {
		return th[2] * n / (1 + th[0]*(n-1) + th[1]*n*(n-1))
	}
	var jtj [3][3]float64
	ssr := 0.0
	for _, p := range pts {
		var row [3]float64
		for j := range theta {
			h := 1e-6 * math.Abs(theta[j])
			up := append([]float64(nil), theta...)
			dn := append([]float64(nil), theta...)
			up[j] += h
			dn[j] -= h
			row[j] = (model(up, p.N) - model(dn, p.N)) / (2 * h)
		}
		for a := range row {
			for b := range row {
				jtj[a][b] += row[a] * row[b]
			}
		}
		r := p.Throughput - model(theta, p.N)
		ssr += r * r
	}
	inv, ok := invertSymmetric([][]float64{jtj[0][:], jtj[1][:], jtj[2][:]})
	require.True(t, ok)
	s2 := ssr / float64(len(pts)-3)
	relEqual(t, math.Sqrt(s2*inv[0][0]), *f.SigmaStdErr, 1e-4, "se(σ)")
	relEqual(t, math.Sqrt(s2*inv[1][1]), *f.KappaStdErr, 1e-4, "se(κ)")
	relEqual(t, math.Sqrt(s2*inv[2][2]), *f.LambdaStdErr, 1e-4, "se(λ)")
}

func TestAmdahlOnTheBenchmarkData(t *testing.T) {
	pts := readCSV(t, "testdata/benchmark32.csv")
	a, err := FitAmdahl(pts)
	require.NoError(t, err)
	u, err := FitUSL(pts)
	require.NoError(t, err)
	assert.Equal(t, ModelAmdahl, a.Model)
	assert.Zero(t, a.Kappa)
	assert.Nil(t, a.KappaStdErr)
	assert.Nil(t, a.PeakConcurrency)
	assert.Equal(t, BoundContention, a.Bound)
	relEqual(t, a.Lambda/a.Sigma, a.MaxThroughput, 1e-12, "λ/σ")
	assert.Less(t, a.R2, u.R2, "without κ the retrograde data fit worse")
	assert.Greater(t, a.Sigma, u.Sigma, "Amdahl blames the flattening on contention alone")
}

// Gunther's SPEC SDM91 data (testdata/README.md) and the three-parameter
// fit published with them: σ = 0.0277299, κ = 0.000104343, λ = 89.9878,
// X ≈ 1883.76 at the peak.
func TestUSLReproducesThePublishedSPECSDM91Fit(t *testing.T) {
	f, err := FitUSL(readCSV(t, "testdata/specsdm91.csv"))
	require.NoError(t, err)
	relEqual(t, 0.0277299, f.Sigma, 1e-3, "σ")
	relEqual(t, 0.000104343, f.Kappa, 1e-3, "κ")
	relEqual(t, 89.9878, f.Lambda, 1e-3, "λ")
	require.NotNil(t, f.PeakConcurrency)
	relEqual(t, 96.5, *f.PeakConcurrency, 1e-3, "N* = sqrt((1−σ)/κ)")
	relEqual(t, 1883.76, f.MaxThroughput, 1e-3, "X(N*)")
	// κ alone would cap throughput at 49λ, σ alone at 36λ: contention is
	// the tighter limit although the curve turns down after N*.
	assert.Equal(t, BoundContention, f.Bound)
	assert.Equal(t, 7, f.Points)
	assert.Empty(t, f.Warnings, "108, 144 and 216 users lie beyond the peak at 96.5")
}
