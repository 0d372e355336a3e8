package analysis

import "time"

// defaultMaxPoints bounds every time series: an hour at 1 Hz keeps 5 s
// resolution, a day keeps 2 minutes, and memory stays flat either way.
const defaultMaxPoints = 720

// downsampled is a time series of bounded length. Points are collected into
// buckets of width points; when the series is full, neighbouring buckets are
// merged pairwise and the width doubles, so the series always spans the whole
// run at the finest resolution that fits.
type downsampled struct {
	max    int
	width  int // raw points per bucket
	points []Point
	// the bucket being filled: sum of values, time of its first point
	acc  float64
	accN int
	accT int64
}

func newDownsampled(max int) *downsampled {
	if max < 2 {
		max = 2
	}
	return &downsampled{max: max, width: 1}
}

// add appends a value at t; buckets hold the mean of their raw points.
func (d *downsampled) add(t time.Time, v float64) {
	if d.accN == 0 {
		d.accT = t.UnixMilli()
	}
	d.acc += v
	d.accN++
	if d.accN < d.width {
		return
	}
	d.points = append(d.points, Point{T: d.accT, V: d.acc / float64(d.accN)})
	d.acc, d.accN = 0, 0
	if len(d.points) >= d.max {
		// Halve: each pair becomes one point at the first one's time.
		half := d.points[:0]
		for i := 0; i+1 < len(d.points); i += 2 {
			half = append(half, Point{T: d.points[i].T, V: (d.points[i].V + d.points[i+1].V) / 2})
		}
		if len(d.points)%2 == 1 {
			half = append(half, d.points[len(d.points)-1])
		}
		d.points = half
		d.width *= 2
	}
}

// snapshot returns the points, including a partially filled last bucket.
func (d *downsampled) snapshot() []Point {
	out := make([]Point, len(d.points), len(d.points)+1)
	copy(out, d.points)
	if d.accN > 0 {
		out = append(out, Point{T: d.accT, V: d.acc / float64(d.accN)})
	}
	return out
}

// seriesSet keeps the named series of one timeline, in order of creation.
type seriesSet struct {
	max   int
	order []string
	by    map[string]*downsampled
}

func newSeriesSet(max int) *seriesSet {
	return &seriesSet{max: max, by: map[string]*downsampled{}}
}

func (s *seriesSet) add(name string, t time.Time, v float64) {
	d := s.by[name]
	if d == nil {
		d = newDownsampled(s.max)
		s.by[name] = d
		s.order = append(s.order, name)
	}
	d.add(t, v)
}

func (s *seriesSet) series() []Series {
	out := make([]Series, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, Series{Name: n, Points: s.by[n].snapshot()})
	}
	return out
}
