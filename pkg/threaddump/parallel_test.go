package threaddump

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusTexts returns the decoded text of every file of the shared dump
// corpus (all formats), by file name.
func corpusTexts(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sharedDumps(t), "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text, err := decodeString(string(b))
		require.NoError(t, err)
		out[filepath.Base(f)] = text
	}
	return out
}

// checkPieces parses text cut at cuts and requires the serial result,
// whether the join accepted the cuts or read on serially; it returns
// whether the join accepted.
func checkPieces(t *testing.T, text string, cuts []int, what string) bool {
	t.Helper()
	got, joined := ParseInPieces(text, cuts)
	want := SerialHotSpot(text)
	if d := DiffDumps(want, got); d != "" {
		t.Fatalf("%s: cut at %v (joined: %v): %s", what, cuts, joined, d)
	}
	return joined
}

// TestParallelMatchesSerialOnCorpus cuts every corpus dump at every thread
// entry, at each entry alone, and at random sets of entries, and requires
// the serial result, stacks shared alike.
func TestParallelMatchesSerialOnCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := corpusTexts(t)
	texts["multi-dump log"] = multiDumpLog(t, 4)
	texts["thread explosion"] = explosionDump(300, 5, 7)
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			starts := EntryStarts(text)
			hotspot := !strings.Contains(name, "javacore")
			if hotspot {
				require.Greater(t, len(starts), 10, "a HotSpot dump has thread entries to cut at")
			}
			if len(starts) == 0 {
				return
			}
			// Every entry its own piece: the join of small pieces.
			ok := checkPieces(t, text, starts, "every entry")
			if hotspot {
				require.True(t, ok, "a real dump is cut at any entry")
				got, _ := ParseInPieces(text, starts)
				assert.Equal(t, DistinctStacks(SerialHotSpot(text)), DistinctStacks(got), "identical stacks are shared across pieces")
			}
			for _, s := range starts {
				ok := checkPieces(t, text, []int{s}, "one cut")
				if hotspot {
					require.True(t, ok, "cut at %d", s)
				}
			}
			for range 50 {
				var cuts []int
				for _, s := range starts {
					if rng.IntN(4) == 0 {
						cuts = append(cuts, s)
					}
				}
				checkPieces(t, text, cuts, "random cuts")
			}
		})
	}
}

// TestParallelMatchesSerialOnCutDumps cuts dumps at random bytes and splices
// pieces of them together (truncated dumps, dumps in odd places, sections
// out of order), then parses them in random pieces.
func TestParallelMatchesSerialOnCutDumps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	texts := corpusTexts(t)
	var sources []string
	for _, name := range slices.Sorted(maps.Keys(texts)) {
		sources = append(sources, texts[name])
	}
	sources = append(sources, multiDumpLog(t, 2), explosionDump(200, 3, 5))
	sources = append(sources, forgedNameSeeds...)
	accepted, tried := 0, 0
	for i := range 400 {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			s := sources[rng.IntN(len(sources))]
			from := rng.IntN(len(s))
			to := from + rng.IntN(len(s)-from+1)
			if rng.IntN(3) == 0 {
				from = 0
			}
			b.WriteString(s[from:to])
		}
		text := b.String()
		starts := EntryStarts(text)
		if len(starts) == 0 {
			continue
		}
		var cuts []int
		for _, s := range starts {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, s)
			}
		}
		if len(cuts) == 0 {
			cuts = starts[:1]
		}
		tried++
		if checkPieces(t, text, cuts, "cut dump "+itoa(i)) {
			accepted++
		}
	}
	// Splices often leave a piece between dumps or inside a cut deadlock
	// report, where the join rightly refuses.
	t.Logf("%d of %d cut texts parsed in pieces, the rest refused", accepted, tried)
	assert.Greater(t, accepted, tried/3, "many cut texts can still be parsed in pieces")
}

// TestParallelRefusesCutInsideName cuts inside a thread name that holds
// whole forged entries: the piece before reads over the cut, so the join
// must refuse, and ParseString must give the serial answer.
func TestParallelRefusesCutInsideName(t *testing.T) {
	SetMinPieceBytes(t, 1)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for i, text := range forgedNameSeeds {
		want := SerialHotSpot(text)
		refused := 0
		for _, s := range EntryStarts(text) {
			if !checkPieces(t, text, []int{s}, "forged seed "+itoa(i)) {
				refused++
			}
		}
		if i == 1 || i == 2 {
			// `"x` opens a name whose end is the "tail" header: the
			// forged entries in it start after blank lines.
			assert.Positive(t, refused, "seed %d: a cut inside the name is refused", i)
		}
		got, err := ParseString(text)
		if len(want) == 0 {
			require.ErrorIs(t, err, ErrNoThreadDump)
			continue
		}
		require.NoError(t, err)
		require.Empty(t, DiffDumps(want, got), "seed %d", i)
	}
	// A suspect span that opens inside a later piece stops that piece.
	text := namesHeader + namesEntry("\"a", "0x10", "0x5", "0x6") + "\"x\n\n" + forgedPair + namesEntry("\"tail", "0x11", "0x5", "0x6") + namesTrailer
	starts := EntryStarts(text)
	require.NotEmpty(t, starts)
	assert.False(t, checkPieces(t, text, starts[:1], "span in a later piece"))
}

// TestParseStringInPieces goes through the public entry points with a low
// threshold: every corpus file (all formats) parses as it does serially.
func TestParseStringInPieces(t *testing.T) {
	texts := corpusTexts(t)
	texts["multi-dump log"] = multiDumpLog(t, 30)
	want := map[string][]*Dump{}
	SetMinPieceBytes(t, 1<<40)
	for name, text := range texts {
		d, err := ParseString(text)
		require.NoError(t, err)
		want[name] = d
	}
	SetMinPieceBytes(t, 4<<10)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	for name, text := range texts {
		b := []byte(text)
		for api, parse := range map[string]func() ([]*Dump, error){
			"ParseString":     func() ([]*Dump, error) { return ParseString(text) },
			"ParseBytes":      func() ([]*Dump, error) { return ParseBytes(b) },
			"ParseOwnedBytes": func() ([]*Dump, error) { return ParseOwnedBytes(b) },
		} {
			got, err := parse()
			require.NoError(t, err, "%s %s", api, name)
			require.Empty(t, DiffDumps(want[name], got), "%s %s", api, name)
		}
	}
	// The split itself: pieces of about equal size, at entries.
	text := texts["multi-dump log"]
	bounds := PieceBounds(text, 3)
	require.Len(t, bounds, 4)
	assert.True(t, slices.IsSorted(bounds))
	for _, b := range bounds[1:3] {
		assert.Contains(t, EntryStarts(text), b)
		assert.InDelta(t, len(text)/3, b-bounds[slices.Index(bounds, b)-1], float64(len(text))/10)
	}
}

// FuzzParallelParse requires the serial result from every parse in pieces,
// joined or read on serially: at every entry, and at the entries the even
// split picks.
func FuzzParallelParse(f *testing.F) {
	for _, s := range forgedNameSeeds {
		f.Add(s)
	}
	f.Add(explosionDump(6, 2, 2))
	f.Add(namesHeader + namesEntry("\"a", "0x10", "0x5", "0x6") + namesEntry("\"b", "0x11", "0x5", "0x6") + namesTrailer +
		"Found one Java-level deadlock:\n=============================\n\"a\":\n  waiting to lock monitor 0x1 (object 0x1, a X),\n  which is held by \"b\"\n\n" +
		"2026-01-01 00:00:00\n" + namesHeader + namesEntry("\"c", "0x12", "0x5", "0x6"))
	f.Fuzz(func(t *testing.T, s string) {
		starts := EntryStarts(s)
		if len(starts) == 0 {
			return
		}
		checkPieces(t, s, starts, "every entry")
		for n := 2; n <= 3; n++ {
			if b := PieceBounds(s, n); len(b) > 2 {
				checkPieces(t, s, b[1:len(b)-1], "even split")
			}
		}
	})
}

// BenchmarkParseInPiecesBySize finds the size from which two pieces pay:
// the serial parse against two pieces, on thread explosions (a stack of its
// own per thread, some 1.7 KB each) from 64 KB to 2 MB. Run with -cpu 2.
func BenchmarkParseInPiecesBySize(b *testing.B) {
	for _, threads := range []int{40, 80, 160, 320, 640, 1280} {
		text := explosionDump(threads, 21, 1)
		bounds := PieceBounds(text, 2)
		require.Len(b, bounds, 3)
		for _, mode := range []string{"serial", "pieces"} {
			b.Run(itoa(len(text)>>10)+"KB/"+mode, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for range b.N {
					if mode == "serial" {
						SerialHotSpot(text)
					} else if _, ok := ParseInPieces(text, bounds[1:2]); !ok {
						b.Fatal("refused")
					}
				}
			})
		}
	}
}

// TestQuotesDoNotInflateReservations parses a text of lines that are a
// quote each (and lock-line openers): the slabs are sized from cheap
// counts, which such a text must not turn into a reservation of a thread
// (312 bytes) for every two bytes of input (it did: 100 times the input).
func TestQuotesDoNotInflateReservations(t *testing.T) {
	text := "Full thread dump x:\n\n" + strings.Repeat("\"\n", 1<<19) + strings.Repeat("\t- <\n", 1<<17) + "JNI global refs: 1, weak refs: 0\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dumps, err := ParseString(text)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("input %d bytes, allocated %d bytes", len(text), allocated)
	assert.Less(t, allocated, uint64(6*len(text)))
}
