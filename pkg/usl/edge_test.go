package usl

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTooFewLevels(t *testing.T) {
	tests := []struct {
		name   string
		fit    func([]Point) (*Fit, error)
		points []Point
		msg    string
	}{
		{"USL: none", FitUSL, nil, "needs 4, got 0"},
		{"USL: three levels", FitUSL, []Point{{1, 10}, {2, 19}, {4, 35}}, "needs 4, got 3"},
		{"USL: repeats do not count", FitUSL, []Point{{1, 10}, {1, 11}, {2, 19}, {2, 18}, {4, 35}, {4, 36}}, "needs 4, got 3"},
		{"Amdahl: one level", FitAmdahl, []Point{{1, 10}, {1, 12}}, "needs 2, got 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.fit(tc.points)
			assert.ErrorIs(t, err, ErrTooFewPoints)
			assert.ErrorContains(t, err, tc.msg)
			assert.Nil(t, f)
		})
	}
}

func TestBadPointsAreRefused(t *testing.T) {
	good := []Point{{1, 10}, {2, 19}, {4, 35}, {8, 60}}
	tests := []struct {
		name string
		bad  Point
	}{
		{"N = 0", Point{0, 5}},
		{"negative N", Point{-2, 5}},
		{"NaN N", Point{math.NaN(), 5}},
		{"infinite N", Point{math.Inf(1), 5}},
		{"zero throughput", Point{16, 0}},
		{"negative throughput", Point{16, -3}},
		{"NaN throughput", Point{16, math.NaN()}},
		{"infinite throughput", Point{16, math.Inf(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pts := append(append([]Point(nil), good...), tc.bad)
			for _, fit := range []func([]Point) (*Fit, error){FitUSL, FitAmdahl} {
				f, err := fit(pts)
				assert.ErrorIs(t, err, ErrBadPoint)
				assert.ErrorContains(t, err, "point 5", "names the point")
				assert.Nil(t, f)
			}
		})
	}
}

// Several measurements per level are allowed and average out.
func TestRepeatedLevels(t *testing.T) {
	truth := &Fit{Sigma: 0.04, Kappa: 0.001, Lambda: 300}
	pts := synthetic(truth, []float64{1, 2, 4, 8, 16, 32}, 5, 0.02, 11)
	f, err := FitUSL(pts)
	require.NoError(t, err)
	assert.Equal(t, 30, f.Points)
	assert.Equal(t, 6, f.Levels)
	assert.InDelta(t, 0.04, f.Sigma, 0.01)
	assert.InDelta(t, 0.001, f.Kappa, 0.0002)
}

// Perfectly linear data: σ = κ = 0 on their bounds, nothing limits
// throughput, and the warnings say so.
func TestPerfectlyLinear(t *testing.T) {
	pts := []Point{{1, 10}, {2, 20}, {4, 40}, {8, 80}, {16, 160}}
	u, err := FitUSL(pts)
	require.NoError(t, err)
	assert.Zero(t, u.Sigma, "σ on its bound")
	assert.Zero(t, u.Kappa, "κ on its bound")
	relEqual(t, 10, u.Lambda, 1e-9, "λ")
	assert.Equal(t, BoundNone, u.Bound)
	assert.True(t, math.IsInf(u.MaxThroughput, 1))
	assert.Nil(t, u.PeakConcurrency)
	assert.InDelta(t, 1, u.R2, 1e-12)
	w := strings.Join(u.Warnings, "\n")
	assert.Contains(t, w, "σ sits on its bound 0")
	assert.Contains(t, w, "κ sits on its bound 0")

	a, err := FitAmdahl(pts)
	require.NoError(t, err)
	assert.Zero(t, a.Sigma)
	assert.Equal(t, BoundNone, a.Bound)
}

// Throughput that does not grow: σ on its upper bound.
func TestFlatThroughput(t *testing.T) {
	pts := []Point{{1, 100}, {2, 100}, {4, 100}, {8, 100}}
	a, err := FitAmdahl(pts)
	require.NoError(t, err)
	inBounds(t, a)
	assert.InDelta(t, 1, a.Sigma, 1e-6)
	relEqual(t, 100, a.MaxThroughput, 1e-6, "λ/σ")
	assert.InDelta(t, 1, a.R2, 1e-9, "the model reproduces a constant")
	assert.Contains(t, strings.Join(a.Warnings, "\n"), "σ sits on its bound 1")
}

// Two levels: Amdahl is an exact solve (100 → 160 is σ = 0.25) without
// standard errors; the USL refuses.
func TestTwoLevels(t *testing.T) {
	pts := []Point{{1, 100}, {2, 160}}
	a, err := FitAmdahl(pts)
	require.NoError(t, err)
	assert.InDelta(t, 0.25, a.Sigma, 1e-9)
	assert.InDelta(t, 100, a.Lambda, 1e-7)
	assert.Nil(t, a.SigmaStdErr, "no standard error from as many points as parameters")
	assert.Nil(t, a.LambdaStdErr)
	w := strings.Join(a.Warnings, "\n")
	assert.Contains(t, w, "two concurrency levels determine σ and λ exactly")
	assert.Contains(t, w, "narrow")
	_, err = FitUSL(pts)
	assert.ErrorIs(t, err, ErrTooFewPoints)
}

// One wildly bad point: the fit stays within bounds, and the warnings name
// the point.
func TestOneWildlyBadPoint(t *testing.T) {
	pts := readCSV(t, "testdata/benchmark32.csv")
	pts[5].Throughput *= 10 // N = 6
	f, err := FitUSL(pts)
	require.NoError(t, err)
	inBounds(t, f)
	w := strings.Join(f.Warnings, "\n")
	assert.Contains(t, w, "the point N = 6, X = 51304.3 lies")
	assert.NotContains(t, w, "the point N = 7", "only the bad point is named")

	// Without it, the published fit comes back.
	clean, err := FitUSL(append(append([]Point(nil), pts[:5]...), pts[6:]...))
	require.NoError(t, err)
	relEqual(t, 0.02671591, clean.Sigma, 0.05, "σ without the bad point")
}

func TestPoorFitIsSaid(t *testing.T) {
	// A zig-zag no scalability curve follows.
	pts := []Point{{1, 100}, {2, 20}, {3, 120}, {4, 15}, {5, 130}, {6, 10}, {7, 140}, {8, 12}}
	f, err := FitUSL(pts)
	require.NoError(t, err)
	inBounds(t, f)
	assert.Less(t, f.R2, 0.9)
	assert.Contains(t, strings.Join(f.Warnings, "\n"), "the fit is poor")
}

func TestNarrowRangeAndPeakWarnings(t *testing.T) {
	truth := &Fit{Sigma: 0.02, Kappa: 0.01, Lambda: 1000} // N* ≈ 9.9
	narrow, err := FitUSL(synthetic(truth, []float64{4, 5, 6, 7}, 1, 0, 1))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(narrow.Warnings, "\n"), "the concurrency range is narrow (4 to 7")

	onePast, err := FitUSL(synthetic(truth, []float64{1, 2, 4, 6, 8, 12}, 1, 0, 1))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(onePast.Warnings, "\n"), "only 1 concurrency level lies beyond the peak")

	wellPast, err := FitUSL(synthetic(truth, []float64{1, 2, 4, 6, 8, 12, 16, 24}, 1, 0, 1))
	require.NoError(t, err)
	assert.Empty(t, wellPast.Warnings)

	far := &Fit{Sigma: 0.002, Kappa: 1e-4, Lambda: 10} // N* ≈ 100
	farFit, err := FitUSL(synthetic(far, []float64{1, 2, 4, 8, 16, 32}, 2, 0.002, 5))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(farFit.Warnings, "\n"), "lies far beyond the largest concurrency measured (32)")
}

// Extreme but valid magnitudes are fitted on scaled numbers: the same
// shape in any unit gives the same σ and κ.
func TestUnitsDoNotMatter(t *testing.T) {
	base := readCSV(t, "testdata/benchmark32.csv")
	ref, err := FitUSL(base)
	require.NoError(t, err)
	for _, factor := range []float64{1e-200, 1e-6, 1e9, 1e250} {
		pts := make([]Point, len(base))
		for i, p := range base {
			pts[i] = Point{p.N, p.Throughput * factor}
		}
		f, err := FitUSL(pts)
		require.NoError(t, err, "factor %g", factor)
		relEqual(t, ref.Sigma, f.Sigma, 1e-6, "σ")
		relEqual(t, ref.Kappa, f.Kappa, 1e-6, "κ")
		relEqual(t, ref.Lambda*factor, f.Lambda, 1e-6, "λ")
		relEqual(t, *ref.LambdaStdErr*factor, *f.LambdaStdErr, 1e-6, "se(λ)")
	}
}

func TestDeterministic(t *testing.T) {
	pts := synthetic(&Fit{Sigma: 0.03, Kappa: 0.002, Lambda: 40}, []float64{1, 2, 3, 5, 8, 13, 21}, 2, 0.03, 9)
	first, err := FitUSL(pts)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		again, err := FitUSL(pts)
		require.NoError(t, err)
		assert.Equal(t, first, again)
	}
}

// Concurrencies near the largest float overflow the model: a clear error,
// not a panic or a NaN.
func TestOverflowIsAnError(t *testing.T) {
	for _, pts := range [][]Point{
		{{1, 1}, {2, 2}, {1e200, 3}, {1e300, 4}},
		{{1e300, 1}, {1.1e300, 2}, {1.2e300, 3}, {1.3e300, 4}},
	} {
		f, err := FitUSL(pts)
		assert.ErrorIs(t, err, ErrNoFit)
		assert.ErrorContains(t, err, "overflows")
		assert.Nil(t, f)
	}
}

func TestMoreWarnings(t *testing.T) {
	// Amdahl data with noise: κ comes out just above 0 with a larger
	// standard error.
	u, err := FitUSL(synthetic(&Fit{Sigma: 0.1, Lambda: 500}, []float64{1, 2, 4, 8, 16, 32}, 3, 0.02, 10))
	require.NoError(t, err)
	require.Positive(t, u.Kappa)
	assert.Contains(t, strings.Join(u.Warnings, "\n"), "κ is not distinguishable from 0")

	three, err := FitAmdahl([]Point{{1, 100}, {2, 180}, {4, 300}})
	require.NoError(t, err)
	assert.Contains(t, three.Warnings, "only 3 concurrency levels: σ and λ rest on them alone")

	// Amdahl misses the retrograde shape of the benchmark data by 20 % at
	// N = 1, like its neighbours: that is the model's fault, not a point's.
	a, err := FitAmdahl(readCSV(t, "testdata/benchmark32.csv"))
	require.NoError(t, err)
	assert.InDelta(t, 0.2, math.Abs(955.16-a.Throughput(1))/a.Throughput(1), 0.01)
	assert.Empty(t, a.Warnings)
}

// Super-linear data, as in a published CPU-affinity run (1, 2, 3.5 and 9.5
// at 1, 2, 4 and 8 CPUs): σ stops at 0, and a warning names the likely
// artefact instead of leaving σ = 0 to read as perfect scaling.
func TestSuperLinearIsWarned(t *testing.T) {
	pts := []Point{{1, 1}, {2, 2}, {4, 3.5}, {8, 9.5}}
	for _, fit := range []func([]Point) (*Fit, error){FitAmdahl, FitUSL} {
		f, err := fit(pts)
		require.NoError(t, err)
		w := strings.Join(f.Warnings, "\n")
		assert.Contains(t, w, "throughput grows faster than concurrency: per unit it is 1.19× higher at N = 8 than at N = 1", f.Model)
		assert.Contains(t, w, "measurement artefact", f.Model)
	}
	// Linear and sub-linear data are not warned about, repeats included.
	for _, pts := range [][]Point{
		{{1, 10}, {2, 20}, {4, 40}, {8, 80}},
		{{1, 100}, {1, 104}, {2, 190}, {4, 330}, {8, 500}},
		{{1, 100}, {2, 108}, {4, 110}, {8, 111}},
	} {
		f, err := FitAmdahl(pts)
		require.NoError(t, err)
		assert.NotContains(t, strings.Join(f.Warnings, "\n"), "faster than concurrency", pts)
	}
}
