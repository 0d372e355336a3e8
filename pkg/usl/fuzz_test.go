package usl

import (
	"errors"
	"math"
	"testing"
)

// FuzzFit: any eight numbers as four points (and the first two repeated,
// as a six-point set with duplicates) never panic; when a fit succeeds its
// parameters are within bounds and its numbers are finite, and when it
// fails the error is one of the sentinels.
func FuzzFit(f *testing.F) {
	f.Add(1.0, 10.0, 2.0, 19.0, 4.0, 33.0, 8.0, 50.0)
	f.Add(1.0, 955.16, 8.0, 6531.08, 16.0, 9897.24, 32.0, 12074.39)
	f.Add(1.0, 1e-300, 2.0, 1e300, 3.0, 5.0, 4.0, 4.0)
	f.Add(0.5, 1.0, 0.25, 3.0, 1e-9, 2.0, 1e12, 7.0)
	f.Add(1.0, 10.0, 1.0, 10.0, 2.0, 0.0, -1.0, math.NaN())
	f.Add(1.0, 100.0, 2.0, 100.0, 3.0, 100.0, 4.0, 100.0)
	f.Fuzz(func(t *testing.T, n1, x1, n2, x2, n3, x3, n4, x4 float64) {
		four := []Point{{n1, x1}, {n2, x2}, {n3, x3}, {n4, x4}}
		six := append(append([]Point(nil), four...), Point{n1, x2}, Point{n2, x1})
		for _, pts := range [][]Point{four, six} {
			for _, fit := range []func([]Point) (*Fit, error){FitUSL, FitAmdahl} {
				r, err := fit(pts)
				if err != nil {
					if !errors.Is(err, ErrBadPoint) && !errors.Is(err, ErrTooFewPoints) && !errors.Is(err, ErrNoFit) {
						t.Fatalf("error without a sentinel: %v", err)
					}
					continue
				}
				if r.Sigma < 0 || r.Sigma >= 1 || r.Kappa < 0 || !(r.Lambda > 0) || math.IsInf(r.Lambda, 0) {
					t.Fatalf("parameters out of bounds: %+v", r)
				}
				if math.IsNaN(r.R2) || math.IsInf(r.R2, 0) || math.IsNaN(r.MaxThroughput) {
					t.Fatalf("non-finite result: %+v", r)
				}
				for _, se := range []*float64{r.SigmaStdErr, r.KappaStdErr, r.LambdaStdErr} {
					if se != nil && (*se < 0 || math.IsNaN(*se) || math.IsInf(*se, 0)) {
						t.Fatalf("bad standard error %v: %+v", *se, r)
					}
				}
				if r.PeakConcurrency != nil && !(*r.PeakConcurrency > 0) {
					t.Fatalf("bad peak %v", *r.PeakConcurrency)
				}
			}
		}
	})
}
