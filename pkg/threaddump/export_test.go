package threaddump

import (
	"fmt"
	"reflect"
	"testing"
)

// Hooks for the tests of the parallel parse (parallel.go), also used by the
// external tests on real JVM dumps.

// SerialHotSpot parses text with the HotSpot parser on one core.
func SerialHotSpot(text string) []*Dump {
	p := newHotspotParser(text)
	p.run(len(text))
	p.finish()
	return p.dumps
}

// EntryStarts lists every offset of text where a piece may start.
func EntryStarts(text string) []int {
	var out []int
	for b := entryStart(text, 1, len(text)); b > 0; b = entryStart(text, b, len(text)) {
		out = append(out, b)
	}
	return out
}

// PieceBounds is pieceBounds.
func PieceBounds(text string, n int) []int { return pieceBounds(text, n) }

// ParseInPieces parses text cut at cuts (increasing entry starts) in
// parallel; joined is false when the join refused and the first piece's
// parser read on alone.
func ParseInPieces(text string, cuts []int) (dumps []*Dump, joined bool) {
	bounds := make([]int, 0, len(cuts)+2)
	bounds = append(bounds, 0)
	bounds = append(bounds, cuts...)
	return parsePieces(text, append(bounds, len(text)))
}

// SetMinPieceBytes sets the size from which ParseString cuts a text, until
// the test ends.
func SetMinPieceBytes(t testing.TB, n int) {
	old := minPieceBytes
	minPieceBytes = n
	t.Cleanup(func() { minPieceBytes = old })
}

// DiffDumps returns "" when got deep-equals want, else where they first
// differ (the whole values are too big to print).
func DiffDumps(want, got []*Dump) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d dumps, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := *want[i], *got[i]
		if len(w.Threads) != len(g.Threads) {
			return fmt.Sprintf("dump %d: %d threads, want %d", i, len(g.Threads), len(w.Threads))
		}
		for j := range w.Threads {
			if !reflect.DeepEqual(w.Threads[j], g.Threads[j]) {
				return fmt.Sprintf("dump %d thread %d:\n got %+v\nwant %+v", i, j, g.Threads[j], w.Threads[j])
			}
		}
		w.Threads, g.Threads = nil, nil
		if !reflect.DeepEqual(w, g) {
			return fmt.Sprintf("dump %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	return "the dumps differ in a way not found field by field"
}

// DistinctStacks counts the distinct Frames slices of the dumps' threads:
// what the sharing of identical stacks keeps.
func DistinctStacks(dumps []*Dump) int {
	seen := map[*Frame]bool{}
	for _, d := range dumps {
		for i := range d.Threads {
			if f := d.Threads[i].Frames; len(f) > 0 {
				seen[&f[0]] = true
			}
		}
	}
	return len(seen)
}
