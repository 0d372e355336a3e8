package analysis

// topN returns the first n of rows in the order less gives, sorted; rows
// is reordered. Tables keep twenty rows of thousands of threads: a bounded
// insertion costs len(rows)·n comparisons at worst and usually about
// len(rows), where a full sort costs len(rows)·log(len(rows)) swaps of
// wide rows on every Summary.
func topN[T any](rows []T, n int, less func(a, b T) bool) []T {
	if n <= 0 {
		return rows[:0]
	}
	k := 0 // rows[:k] holds the best so far, sorted
	for i := range rows {
		if k == n && !less(rows[i], rows[k-1]) {
			continue
		}
		x := rows[i]
		j := k
		if k < n {
			k++
		} else {
			j = n - 1
		}
		for ; j > 0 && less(x, rows[j-1]); j-- {
			rows[j] = rows[j-1]
		}
		rows[j] = x
	}
	return rows[:k]
}
