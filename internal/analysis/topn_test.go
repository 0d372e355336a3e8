package analysis

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTopNMatchesSortAndTruncate(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	less := func(a, b int) bool { return a > b }
	for _, size := range []int{0, 1, 5, 19, 20, 21, 100, 4000} {
		for _, n := range []int{0, 1, 5, 20} {
			rows := make([]int, size)
			for i := range rows {
				rows[i] = rng.Intn(50) // many ties
			}
			want := append([]int(nil), rows...)
			sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
			if len(want) > n {
				want = want[:n]
			}
			got := topN(rows, n, less)
			assert.Len(t, got, len(want))
			if len(want) > 0 {
				assert.Equal(t, want, got, "size %d, n %d", size, n)
			}
		}
	}
}
