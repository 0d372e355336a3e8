package analysis

import "math"

// linearFit accumulates the sums of an ordinary least-squares line
// y = intercept + slope·x, so a fit over hours of samples takes O(1) memory.
type linearFit struct {
	n                      float64
	sx, sy, sxx, syy, sxy  float64
	minX, maxX, minY, maxY float64
}

func (f *linearFit) add(x, y float64) {
	if f.n == 0 {
		f.minX, f.maxX, f.minY, f.maxY = x, x, y, y
	}
	f.n++
	f.sx += x
	f.sy += y
	f.sxx += x * x
	f.syy += y * y
	f.sxy += x * y
	f.minX, f.maxX = math.Min(f.minX, x), math.Max(f.maxX, x)
	f.minY, f.maxY = math.Min(f.minY, y), math.Max(f.maxY, y)
}

// varies reports whether x took more than one value: a line needs that.
func (f *linearFit) varies() bool { return f.n >= 3 && f.maxX > f.minX }

// fit returns the slope, intercept and R² (the share of y's variance the
// line explains; 1 when y does not vary at all and the line is flat).
func (f *linearFit) fit() (slope, intercept, r2 float64) {
	if f.n < 2 {
		return 0, 0, 0
	}
	vx := f.sxx - f.sx*f.sx/f.n
	vy := f.syy - f.sy*f.sy/f.n
	cov := f.sxy - f.sx*f.sy/f.n
	if vx <= 0 {
		return 0, f.sy / f.n, 0
	}
	slope = cov / vx
	intercept = (f.sy - slope*f.sx) / f.n
	switch {
	case vy <= 1e-12:
		r2 = 1
	default:
		r2 = cov * cov / (vx * vy)
	}
	return slope, intercept, math.Min(math.Max(r2, 0), 1)
}

func (f *linearFit) meanY() float64 {
	if f.n == 0 {
		return 0
	}
	return f.sy / f.n
}
