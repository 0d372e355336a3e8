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

// readCSV reads "concurrency,throughput" lines, skipping # comments.
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
		a, b, found := strings.Cut(line, ",")
		require.True(t, found, "line %q", line)
		n, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
		require.NoError(t, err)
		x, err := strconv.ParseFloat(strings.TrimSpace(b), 64)
		require.NoError(t, err)
		pts = append(pts, Point{N: n, Throughput: x})
	}
	require.NoError(t, sc.Err())
	return pts
}

// relEqual asserts |got − want| ≤ tol·|want|.
func relEqual(t *testing.T, want, got, tol float64, name string) {
	t.Helper()
	assert.LessOrEqual(t, math.Abs(got-want), tol*math.Abs(want), "%s: want %g, got %g (relative tolerance %g)", name, want, got, tol)
}

// synthetic returns reps measurements per level from the true model, each
// multiplied by (1 + noise·ε) with ε standard normal from a seeded source.
func synthetic(truth *Fit, levels []float64, reps int, noise float64, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, 0x75736c))
	var pts []Point
	for _, n := range levels {
		for r := 0; r < reps; r++ {
			pts = append(pts, Point{N: n, Throughput: truth.Throughput(n) * (1 + noise*rng.NormFloat64())})
		}
	}
	return pts
}

func inBounds(t *testing.T, f *Fit) {
	t.Helper()
	assert.GreaterOrEqual(t, f.Sigma, 0.0, "σ")
	assert.Less(t, f.Sigma, 1.0, "σ")
	assert.GreaterOrEqual(t, f.Kappa, 0.0, "κ")
	assert.Greater(t, f.Lambda, 0.0, "λ")
}
