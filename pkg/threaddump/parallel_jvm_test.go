package threaddump_test

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// TestParallelMatchesSerialOnBigDump parses the real 4,000-thread dump (and
// three of it in one text) in 2 to 8 even pieces and in random ones, and
// requires the serial result with the same sharing of stacks.
func TestParallelMatchesSerialOnBigDump(t *testing.T) {
	one := bigDump(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for name, text := range map[string]string{
		"one dump":    string(one),
		"three dumps": string(bytes.Repeat(one, 3)),
	} {
		t.Run(name, func(t *testing.T) {
			want := threaddump.SerialHotSpot(text)
			wantStacks := threaddump.DistinctStacks(want)
			check := func(cuts []int, what string) {
				t.Helper()
				got, ok := threaddump.ParseInPieces(text, cuts)
				require.True(t, ok, "%s: a real dump is cut at any entry", what)
				require.Empty(t, threaddump.DiffDumps(want, got), "%s: cut at %v", what, cuts)
				assert.Equal(t, wantStacks, threaddump.DistinctStacks(got), "%s: identical stacks are shared across pieces", what)
			}
			for n := 2; n <= 8; n++ {
				b := threaddump.PieceBounds(text, n)
				require.Len(t, b, n+1)
				check(b[1:n], "even split")
			}
			starts := threaddump.EntryStarts(text)
			require.Greater(t, len(starts), 4000)
			for range 10 {
				var cuts []int
				for _, s := range starts {
					if rng.IntN(200) == 0 {
						cuts = append(cuts, s)
					}
				}
				check(cuts, "random cuts")
			}
			check(starts, "every entry")
		})
	}
	// And through the public entry point, with the cores there are.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	got, err := threaddump.ParseOwnedBytes(one)
	require.NoError(t, err)
	require.Empty(t, threaddump.DiffDumps(threaddump.SerialHotSpot(string(one)), got))
}
