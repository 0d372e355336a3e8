package threaddump

import (
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// A big HotSpot text is parsed on several cores: `ctprof attach --count 1`
// waits for the parse of a dump it has just taken, and at that moment the
// JVM is done and the other cores are idle.
//
// The text is cut into pieces at thread entries (a header line that starts
// with a quote after a blank line), each later piece is read by a parser of
// its own that starts as the serial parser would stand at the cut, and the
// results are joined in order. The serial parser carries little from one
// entry to the next: the open dump, and the few things that span lines (a
// thread name running over several lines, a suspect span, a deadlock
// report, a pending timestamp or pid). The join checks at every cut that
// the parser before it ended with none of those open; a piece parser stops
// where the serial parse would reach back before its piece. When either
// happens (hostile thread names, odd logs), the parser of the first piece,
// which is the serial parser up to there, reads on to the end alone, so
// the answer never differs from the serial one.

// minPieceBytes is the smallest piece worth a core: below it the cost of a
// goroutine, the join and the slab space of another parser is not repaid.
// Tests set it low so that small inputs are cut too.
var minPieceBytes = 512 << 10

// maxPieces bounds the cut: every piece parser counts the lines before its
// piece, which costs more as the pieces get many.
const maxPieces = 8

// parseHotSpotParallel parses text in pieces when it is big enough and
// there are cores to run them; ok is false when it did not (the caller
// then parses serially).
func parseHotSpotParallel(text string) (dumps []*Dump, ok bool) {
	n := min(runtime.GOMAXPROCS(0), maxPieces, len(text)/minPieceBytes)
	if n < 2 {
		return nil, false
	}
	bounds := pieceBounds(text, n)
	if len(bounds) < 3 {
		return nil, false
	}
	dumps, _ = parsePieces(text, bounds)
	return dumps, true
}

// pieceBounds returns the offsets [0, b1, ..., len(text)] of up to n pieces
// of about equal size, each later one starting at a thread entry.
func pieceBounds(text string, n int) []int {
	bounds := make([]int, 1, n+1)
	for k := 1; k < n; k++ {
		from := max(k*len(text)/n, bounds[len(bounds)-1]+1)
		if b := entryStart(text, from, (k+1)*len(text)/n); b > 0 {
			bounds = append(bounds, b)
		}
	}
	return append(bounds, len(text))
}

// entryStart returns the offset of the first line in [from, limit) that
// starts a thread entry: a complete header opening with a quote, after a
// blank line. -1 when there is none.
func entryStart(text string, from, limit int) int {
	for from < limit {
		i := strings.Index(text[from:limit], "\n\"")
		if i < 0 {
			return -1
		}
		b := from + i + 1
		if prevLineBlank(text, b) {
			ln, _ := lineAt(text, b)
			if q, ok := headerSplit(ln); ok && q > 0 {
				return b
			}
		}
		from = b
	}
	return -1
}

// pieceResult is what the parser of a later piece read.
type pieceResult struct {
	p *hotspotParser
	// head stands for the dump that is open where the piece starts: what
	// the piece adds to it is merged into the real dump at the join.
	head *Dump
}

// parsePieces parses text cut at bounds (see pieceBounds; every bound but
// the first and last must be an entryStart) concurrently and joins the
// pieces. joined is false when a cut could not be joined and the text was
// read on serially.
func parsePieces(text string, bounds []int) (dumps []*Dump, joined bool) {
	n := len(bounds) - 1
	// The threads of all pieces go to one array, each piece in a region
	// sized by its own count of quotes, so that the join moves the threads
	// of the dump open across a cut down in place and the parse allocates
	// about as much for threads as the serial one. The regions are made
	// before the pieces start: a piece goroutine that waited for its
	// region could stay unscheduled for milliseconds when the GC holds
	// the other core.
	ends := make([]int, n) // where the region of each piece ends
	total := 0
	for k := range n {
		total += threadsIn(text[bounds[k]:bounds[k+1]])
		ends[k] = total
	}
	threads := make([]Thread, 0, total)
	region := func(k int) []Thread {
		start := 0
		if k > 0 {
			start = ends[k-1]
		}
		return threads[start:start:ends[k]]
	}
	pieces := make([]pieceResult, n)
	var done sync.WaitGroup
	done.Add(n - 1)
	for k := 1; k < n; k++ {
		go func() {
			defer done.Done()
			pieces[k] = parsePiece(text, bounds[k], bounds[k+1], n, region(k), k == n-1)
		}()
	}
	// The first piece is read here, by the parser that then takes in the
	// others.
	m := &hotspotParser{text: text, cur: -1}
	m.reserve(text[:bounds[1]], maxFrameReserve/n)
	m.threads.buf = region(0)
	m.run(bounds[1])
	done.Wait()

	joinable := m.continuable(bounds[1])
	for k := 1; k < n && joinable; k++ {
		w := pieces[k].p
		joinable = !w.abort && w.pos == bounds[k+1] && (k == n-1 || w.continuable(bounds[k+1]))
	}
	if !joinable {
		// m has read the first piece (or more) exactly as the serial
		// parse does; the pieces after it are dropped.
		m.run(len(text))
		m.finish()
		return m.dumps, false
	}
	m.finishThread()
	dumps = m.dumps
	open, thr := m.dump, &m.threads
	// While the open dump is the first piece's, its threads stay in the
	// shared array, which then has room up to where the next region
	// still unread starts.
	inPlace := cap(thr.buf) > 0 && unsafe.SliceData(thr.buf) == unsafe.SliceData(threads)
	if inPlace {
		thr.buf = threads[:len(thr.buf)]
	}
	for k := 1; k < n; k++ {
		w, head := pieces[k].p, pieces[k].head
		closed := w.dump != head
		var ts []Thread
		if closed {
			ts = head.Threads
		} else {
			ts = w.threads.take()
		}
		m.adoptStacks(w, ts, k < n-1)
		if inPlace && len(thr.buf)+len(ts) > ends[k] {
			inPlace = false
			thr.buf = thr.buf[:len(thr.buf):len(thr.buf)] // addRun moves it
		}
		thr.addRun(ts)
		open.Warnings = append(open.Warnings, head.Warnings...)
		open.UnknownLines += head.UnknownLines
		if room := maxUnknownSamples - len(open.UnknownSamples); room > 0 {
			open.UnknownSamples = append(open.UnknownSamples, head.UnknownSamples[:min(room, len(head.UnknownSamples))]...)
		}
		open.Deadlocks = append(open.Deadlocks, head.Deadlocks...)
		if !closed {
			continue
		}
		open.JNIGlobalRefs, open.JNIWeakRefs = head.JNIGlobalRefs, head.JNIWeakRefs
		open.Threads = thr.take()
		dumps = append(dumps, open)
		dumps = append(dumps, w.dumps[1:]...)
		open, thr, inPlace = w.dump, &w.threads, false
	}
	return dumps, true
}

// threadsIn estimates the number of threads a text holds, to size its
// thread slab (a region of the shared array for a piece). A header has two
// quotes (a name that spans lines, one on each line); lines with quotes but
// no header (deadlock reports, names with quotes) make the count larger.
// Counting one byte is some ten times faster than counting the entry
// lines, which matters most for the pieces, all counted before they start.
// The bound of one thread per 128 bytes keeps a hostile text of quotes from
// reserving a thread (312 bytes) per two bytes of input; real dumps are
// under it (a Java thread takes some 600 bytes, a VM thread 100). A text
// with more threads grows its slab (a piece its own array, which the join
// copies).
func threadsIn(text string) int {
	return min(strings.Count(text, "\"")/2, len(text)/128) + 4
}

// parsePiece reads text[from:to], a piece after the first of n: from is a
// thread entry inside the dump open there. Its threads go to region while
// it has room.
func parsePiece(text string, from, to, n int, region []Thread, last bool) pieceResult {
	p := &hotspotParser{text: text, cur: -1, piece: true, pos: from}
	p.line = strings.Count(text[:from], "\n")
	p.reserve(text[from:to], maxFrameReserve/n)
	p.threads.buf = region
	head := &Dump{Format: FormatHotSpot, JNIGlobalRefs: -1, JNIWeakRefs: -1}
	p.dump = head
	p.run(to)
	if !p.abort {
		if last {
			p.finish()
		} else {
			p.finishThread()
		}
	}
	return pieceResult{p: p, head: head}
}

// continuable reports whether the serial parse, standing where p stands
// after reading up to next, would read the thread entry at next and what
// follows the way a fresh piece parser does: inside a dump, with nothing
// open that spans lines. What it does not compare is either replaced by
// the entry's header (the current thread, stack and section flags) or
// checked elsewhere (names, suspect spans: abort).
func (p *hotspotParser) continuable(next int) bool {
	return !p.abort && p.pos == next && p.dump != nil && p.susp == nil &&
		!p.inDeadlock && p.dlEdge == nil && p.pendingPID == 0 &&
		// A timestamp is taken by a dump header within two lines of it;
		// the first line after next is the entry's header.
		(p.pendingTime.IsZero() || p.pendingTimeLine < p.line)
}

// adoptStacks makes the threads of piece parser w (ts, the threads it adds
// to the open dump, and those of the dumps it read) share the stacks that m
// already holds, as the serial parse would, and when more pieces follow
// (keep) hands w's other stacks to m for them.
func (m *hotspotParser) adoptStacks(w *hotspotParser, ts []Thread, keep bool) {
	var same map[*Frame][]Frame
	for h, run := range w.stacks {
		prev, ok := m.stacks[h]
		if !ok {
			if !keep {
				continue
			}
			if m.stacks == nil {
				m.stacks = make(map[uint64][]Frame, len(w.stacks))
			}
			m.stacks[h] = run
			continue
		}
		if &prev[0] != &run[0] && equalFrames(prev, run) {
			if same == nil {
				same = map[*Frame][]Frame{}
			}
			same[&run[0]] = prev
		}
	}
	if same == nil {
		return
	}
	share := func(ts []Thread) {
		for i := range ts {
			if f := ts[i].Frames; len(f) > 0 {
				if prev, ok := same[&f[0]]; ok {
					ts[i].Frames = prev
				}
			}
		}
	}
	share(ts)
	if w.dump != nil && len(w.dumps) > 0 {
		share(w.threads.buf[w.threads.start:])
	}
	for _, d := range w.dumps[min(1, len(w.dumps)):] {
		share(d.Threads)
	}
}

// addRun appends vs to the current run, growing the array once to fit.
func (s *slab[T]) addRun(vs []T) {
	if len(s.buf)+len(vs) > cap(s.buf) {
		run := len(s.buf) - s.start
		n := make([]T, run, run+len(vs))
		copy(n, s.buf[s.start:])
		s.buf, s.start = n, 0
	}
	s.buf = append(s.buf, vs...)
}
