package usl

import "math"

// The systems here are at most 3×3 and symmetric (JᵀJ and its damped
// form). Their entries differ by many orders of magnitude (κ's column
// carries N², λ's carries 1), so both solvers first scale the matrix to
// unit diagonal, which makes the pivots and the singularity test relative.

// singular is the smallest pivot accepted after scaling to unit diagonal.
const singular = 1e-13

// unitDiagonal returns d with a[i][i]/(d_i·d_i) = 1 (1 where a[i][i] ≤ 0).
func unitDiagonal(a [][]float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = 1
		if v := a[i][i]; v > 0 && !math.IsInf(v, 0) {
			d[i] = math.Sqrt(v)
		}
	}
	return d
}

// solveSymmetric solves a·x = b; ok is false when a is singular or not
// finite. a and b are left unchanged.
func solveSymmetric(a [][]float64, b []float64) (x []float64, ok bool) {
	n := len(b)
	d := unitDiagonal(a)
	m := make([][]float64, n)
	rhs := make([]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		for j := range m[i] {
			m[i][j] = a[i][j] / (d[i] * d[j])
		}
		rhs[i] = b[i] / d[i]
	}
	y, ok := gauss(m, rhs)
	if !ok {
		return nil, false
	}
	for i := range y {
		y[i] /= d[i]
	}
	return y, true
}

// invertSymmetric returns a⁻¹; ok is false when a is singular.
func invertSymmetric(a [][]float64) (inv [][]float64, ok bool) {
	n := len(a)
	inv = make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for j := 0; j < n; j++ {
		e := make([]float64, n)
		e[j] = 1
		col, ok := solveSymmetric(a, e)
		if !ok {
			return nil, false
		}
		for i := range col {
			inv[i][j] = col[i]
		}
	}
	return inv, true
}

// gauss solves m·x = b in place by elimination with partial pivoting.
func gauss(m [][]float64, b []float64) ([]float64, bool) {
	n := len(b)
	for col := 0; col < n; col++ {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[p][col]) {
				p = r
			}
		}
		if !(math.Abs(m[p][col]) > singular) || math.IsInf(m[p][col], 0) {
			return nil, false // also rejects NaN
		}
		m[col], m[p] = m[p], m[col]
		b[col], b[p] = b[p], b[col]
		for r := col + 1; r < n; r++ {
			f := m[r][col] / m[col][col]
			for c := col; c < n; c++ {
				m[r][c] -= f * m[col][c]
			}
			b[r] -= f * b[col]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for c := r + 1; c < n; c++ {
			s -= m[r][c] * x[c]
		}
		x[r] = s / m[r][r]
		if math.IsNaN(x[r]) || math.IsInf(x[r], 0) {
			return nil, false
		}
	}
	return x, true
}
