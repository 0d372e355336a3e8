package usl

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fit is a minimum of the squared residuals within the bounds: no
// feasible nudge of σ, κ or λ, alone or in pairs, lowers the SSR. This is
// checked from outside, with the raw data and the model formula only.
func TestFitIsAConstrainedMinimum(t *testing.T) {
	bad := readCSV(t, "testdata/benchmark32.csv")
	bad[5].Throughput *= 10
	cases := map[string][]Point{
		"benchmark":       readCSV(t, "testdata/benchmark32.csv"),
		"κ on its bound":  synthetic(&Fit{Sigma: 0.1, Lambda: 500}, []float64{1, 2, 4, 8, 16, 32}, 3, 0.02, 2),
		"σ on its bound":  synthetic(&Fit{Kappa: 0.002, Lambda: 70}, []float64{1, 2, 4, 8, 16, 32}, 3, 0.02, 4),
		"one bad point":   bad,
		"strong retrogr.": synthetic(&Fit{Sigma: 0.02, Kappa: 0.01, Lambda: 1000}, []float64{1, 2, 4, 6, 8, 12, 16, 24, 32}, 2, 0.05, 8),
	}
	for name, pts := range cases {
		t.Run(name, func(t *testing.T) {
			for _, fit := range []func([]Point) (*Fit, error){FitUSL, FitAmdahl} {
				f, err := fit(pts)
				require.NoError(t, err)
				if f.Model == ModelUSL && name == "κ on its bound" {
					require.Zero(t, f.Kappa, "the case is what its name says")
				}
				if f.Model == ModelUSL && name == "σ on its bound" {
					require.Zero(t, f.Sigma, "the case is what its name says")
				}
				ssr := func(s, k, l float64) float64 {
					m := &Fit{Sigma: s, Kappa: k, Lambda: l}
					sum := 0.0
					for _, p := range pts {
						r := p.Throughput - m.Throughput(p.N)
						sum += r * r
					}
					return sum
				}
				best := ssr(f.Sigma, f.Kappa, f.Lambda)
				dims := 3
				if f.Model == ModelAmdahl {
					dims = 2 // κ stays 0
				}
				for _, h := range []float64{1e-3, 1e-5} {
					for _, d := range nudges(dims) {
						s := f.Sigma + d[0]*h*math.Max(f.Sigma, 1e-3)
						l := f.Lambda * (1 + d[1]*h)
						k := f.Kappa + d[2]*h*math.Max(f.Kappa, 1e-5)
						if s < 0 || s >= 1 || k < 0 {
							continue // outside the bounds
						}
						assert.GreaterOrEqual(t, ssr(s, k, l), best*(1-1e-12), "%s: nudge %v by %g lowers the SSR", f.Model, d, h)
					}
				}
			}
		})
	}
}

// nudges returns the directions with every component in {−1, 0, 1} and at
// most two non-zero, over σ, λ and (dims = 3) κ.
func nudges(dims int) [][3]float64 {
	var out [][3]float64
	vals := []float64{-1, 0, 1}
	for _, a := range vals {
		for _, b := range vals {
			for _, c := range vals {
				if dims < 3 && c != 0 {
					continue
				}
				nz := 0
				for _, v := range []float64{a, b, c} {
					if v != 0 {
						nz++
					}
				}
				if nz == 1 || nz == 2 {
					out = append(out, [3]float64{a, b, c})
				}
			}
		}
	}
	return out
}
