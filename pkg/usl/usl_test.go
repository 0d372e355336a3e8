package usl

import (
	"bufio"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCSV(t testing.TB, path string) []Point {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var pts []Point
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, _ := strings.Cut(line, ",")
		n, err1 := strconv.ParseFloat(a, 64)
		x, err2 := strconv.ParseFloat(b, 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		pts = append(pts, Point{n, x})
	}
	return pts
}

func relEqual(t *testing.T, want, got, tol float64, name string) {
	t.Helper()
	assert.LessOrEqual(t, math.Abs(got-want)/math.Abs(want), tol, "%s: want %g, got %g", name, want, got)
}

// The published fit of the 32-point benchmark data set.
func TestUSLBenchmarkDataSet(t *testing.T) {
	f, err := FitUSL(readCSV(t, "testdata/benchmark32.csv"))
	require.NoError(t, err)
	relEqual(t, 0.02671591, f.Sigma, 1e-3, "σ")
	relEqual(t, 7.690945e-4, f.Kappa, 1e-3, "κ")
	relEqual(t, 995.6486, f.Lambda, 1e-3, "λ")
	require.NotNil(t, f.PeakConcurrency)
	relEqual(t, 35.3, *f.PeakConcurrency, 0.01, "N*")
	relEqual(t, 12341.7, f.MaxThroughput, 1e-3, "X(N*)")
	assert.Equal(t, "coherency", f.Bound)
	assert.Greater(t, f.R2, 0.99)
	require.NotNil(t, f.SigmaStdErr)
	require.NotNil(t, f.KappaStdErr)
	require.NotNil(t, f.LambdaStdErr)
	assert.Less(t, *f.SigmaStdErr, f.Sigma, "σ is well determined")
	assert.Less(t, *f.KappaStdErr, f.Kappa)
	assert.Empty(t, f.Warnings)
}

// Points generated from known parameters with multiplicative noise give
// the parameters back.
func TestUSLRecoversKnownParameters(t *testing.T) {
	tests := []struct {
		name                 string
		sigma, kappa, lambda float64
		ns                   []float64
		tol                  float64 // relative, on λ and on the curve
	}{
		{"mild contention", 0.05, 0.0005, 100, []float64{1, 2, 4, 8, 16, 32, 48, 64}, 0.03},
		{"Amdahl-like (κ = 0)", 0.1, 0, 500, []float64{1, 2, 4, 8, 16, 32}, 0.03},
		{"strongly retrograde", 0.02, 0.01, 1000, []float64{1, 2, 4, 6, 8, 12, 16, 24, 32}, 0.03},
		{"near linear", 0.001, 0.00001, 50, []float64{1, 4, 8, 16, 32, 64}, 0.03},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			truth := &Fit{Sigma: tc.sigma, Kappa: tc.kappa, Lambda: tc.lambda}
			var pts []Point
			for _, n := range tc.ns {
				for rep := 0; rep < 3; rep++ { // several measurements per N
					noise := 1 + 0.01*rng.NormFloat64()
					pts = append(pts, Point{n, truth.Throughput(n) * noise})
				}
			}
			f, err := FitUSL(pts)
			require.NoError(t, err)
			relEqual(t, tc.lambda, f.Lambda, tc.tol, "λ")
			assert.InDelta(t, tc.sigma, f.Sigma, 0.01, "σ")
			assert.InDelta(t, tc.kappa, f.Kappa, 0.001, "κ")
			for _, n := range tc.ns {
				relEqual(t, truth.Throughput(n), f.Throughput(n), tc.tol, "X(N)")
			}
			assert.Greater(t, f.R2, 0.98)
			assert.GreaterOrEqual(t, f.Sigma, 0.0)
			assert.GreaterOrEqual(t, f.Kappa, 0.0)
		})
	}
}

func TestAmdahl(t *testing.T) {
	truth := &Fit{Sigma: 0.25, Lambda: 100}
	var pts []Point
	for _, n := range []float64{1, 2, 4, 8} {
		pts = append(pts, Point{n, truth.Throughput(n)})
	}
	f, err := FitAmdahl(pts)
	require.NoError(t, err)
	assert.InDelta(t, 0.25, f.Sigma, 1e-6)
	assert.InDelta(t, 100, f.Lambda, 1e-4)
	assert.Equal(t, "contention", f.Bound)
	assert.InDelta(t, 400, f.MaxThroughput, 1e-2, "λ/σ")
	assert.Nil(t, f.PeakConcurrency)

	// Two CPUs only: an exact solve. 100 → 160 ops/s is σ = 0.25.
	two, err := FitAmdahl([]Point{{1, 100}, {2, 160}})
	require.NoError(t, err)
	assert.InDelta(t, 0.25, two.Sigma, 1e-6)
	assert.InDelta(t, 100, two.Lambda, 1e-6)
	assert.Nil(t, two.SigmaStdErr, "no standard error from as many points as parameters")
	assert.NotEmpty(t, two.Warnings, "a range of 1 to 2 is narrow")
}

func TestEdgeCases(t *testing.T) {
	_, err := FitUSL([]Point{{1, 10}, {2, 19}, {4, 35}})
	assert.ErrorIs(t, err, ErrTooFewPoints)
	_, err = FitUSL([]Point{{1, 10}, {1, 11}, {2, 19}, {2, 18}, {4, 35}})
	assert.ErrorIs(t, err, ErrTooFewPoints, "duplicates do not count as levels")
	_, err = FitAmdahl([]Point{{1, 10}, {1, 12}})
	assert.ErrorIs(t, err, ErrTooFewPoints)
	for _, bad := range [][]Point{{{0, 1}, {1, 2}}, {{-1, 1}, {1, 2}}, {{1, 0}, {2, 2}}, {{1, math.NaN()}, {2, 2}}, {{math.Inf(1), 1}, {2, 2}}} {
		_, err := FitAmdahl(bad)
		assert.ErrorIs(t, err, ErrBadPoint, "%v", bad)
	}

	// Perfectly linear: σ = κ = 0 on their bounds, nothing limits it.
	lin, err := FitUSL([]Point{{1, 10}, {2, 20}, {4, 40}, {8, 80}, {16, 160}})
	require.NoError(t, err)
	assert.InDelta(t, 0, lin.Sigma, 1e-6)
	assert.InDelta(t, 0, lin.Kappa, 1e-8)
	assert.Equal(t, "none", lin.Bound)
	assert.True(t, math.IsInf(lin.MaxThroughput, 1))
	assert.NotEmpty(t, lin.Warnings)

	// One wildly bad point: the fit stays within bounds and says it is poor.
	pts := readCSV(t, "testdata/benchmark32.csv")
	pts[5].Throughput *= 10
	f, err := FitUSL(pts)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, f.Sigma, 0.0)
	assert.Less(t, f.Sigma, 1.0)
	assert.GreaterOrEqual(t, f.Kappa, 0.0)
	assert.Less(t, f.R2, 0.9)
	assert.Contains(t, strings.Join(f.Warnings, "\n"), "poor")
}

func FuzzFit(f *testing.F) {
	f.Add(1.0, 10.0, 2.0, 19.0, 4.0, 33.0, 8.0, 50.0)
	f.Add(1.0, 1e-300, 2.0, 1e300, 3.0, 5.0, 4.0, 4.0)
	f.Fuzz(func(t *testing.T, n1, x1, n2, x2, n3, x3, n4, x4 float64) {
		pts := []Point{{n1, x1}, {n2, x2}, {n3, x3}, {n4, x4}}
		for _, fitFn := range []func([]Point) (*Fit, error){FitUSL, FitAmdahl} {
			r, err := fitFn(pts)
			if err != nil {
				continue
			}
			if r.Sigma < 0 || r.Sigma >= 1 || r.Kappa < 0 || !(r.Lambda > 0) {
				t.Fatalf("parameters out of bounds: %+v", r)
			}
		}
	})
}
