package threaddump

import (
	"hash/maphash"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The HotSpot text parser is a single pass over the lines of the input. Every
// string it stores is a substring of the input, and frames, lock lines and
// threads live in a few large slabs, so a 4,000-thread dump costs a handful
// of allocations. That is what keeps it above 200 MB/s on one core; a big
// text is read in pieces on several cores (parallel.go).

// hotspotParser holds the state of one pass.
type hotspotParser struct {
	text string
	pos  int
	line int // 1-based number of the current line

	dumps []*Dump
	dump  *Dump // the dump being filled, nil between dumps

	threads slab[Thread]
	frames  slab[Frame]
	locks   slab[LockEvent]

	// runHash hashes the lines of the frames run being read (see
	// shareFrames); stacks maps such hashes to the first run that had them,
	// so that threads with identical stacks share one Frames slice.
	runHash uint64
	stacks  map[uint64][]Frame
	// memo holds the frames of recent frame lines (see frameLine).
	memo *frameMemo

	// cur is the index (relative to threads.start) of the thread whose
	// stack is being read, or -1.
	cur int
	// mounted is the virtual thread whose frames are being read after a
	// "Mounted virtual thread #N" line, or nil.
	mounted *Thread
	// inStack is true while lines may still belong to the current thread's
	// stack; a blank line ends it (only "Locked ownable synchronizers:" may
	// follow the blank line and still belong to the thread).
	inStack bool
	inSync  bool // inside "Locked ownable synchronizers:"
	inSMR   bool // inside the "Threads class SMR info:" element list
	// inDeadlock is set from "Found one Java-level deadlock:" to the end of
	// that report; the duplicate stacks it prints are skipped.
	inDeadlock   bool
	deadlockPart int // 1: the cycle description, 2: the duplicate stacks
	dlEdge       *DeadlockEdge
	// dlDump receives the deadlock report. HotSpot prints the report after
	// the JNI trailer, so it belongs to the dump that was just closed.
	dlDump *Dump

	// pendingPID and pendingTime come from lines just before a header (the
	// jcmd "<pid>:" preamble and the timestamp line).
	pendingPID      int
	pendingTime     time.Time
	pendingTimeLine int

	// lineStart is the byte offset of the current line.
	lineStart int
	// noCloseBefore is where the last fruitless search for the end of a
	// thread name stopped: no line before it completes a header, so later
	// searches start there (this keeps hostile input linear).
	noCloseBefore int
	// susp is the open suspect span (see Thread.Suspect), nil when none.
	susp *suspectSpan
	// opts are the caller's checks against the live target.
	opts ParseOptions
	// nids maps the OS thread ids taken so far in the dump to their
	// thread's index (only with opts.ThreadExists, to refuse a nid that
	// appears twice).
	nids map[int64]int
	// marked counts the threads of the dump already marked suspect by a
	// name end without a start (so each is marked once).
	marked, markedDL int

	// piece is set for a parser that reads a later piece of a text split
	// for a parallel parse (see parallel.go); it stops, setting abort,
	// where the serial parse would reach back before the piece.
	piece, abort bool
}

// suspectSpan is a thread name whose end the text cannot fix: it opened on
// line `line` and closed at a header that also reads as a new entry, so the
// entries that follow may be more of the name.
type suspectSpan struct {
	line      int // line of the name's opening quote
	nameStart int // byte offset of the name's first character
	thread    int // index (relative to threads.start) of the thread at line
	deadlocks int // len(Deadlocks) of the dump when the span opened
	dump      *Dump
	lastLine  int // last line read inside the span so far
	// mark says whether the span's threads are marked suspect. With the
	// live checks they are not (their nids are real threads), but the span
	// stays open: an entry forged with a real nid is found out when the
	// real entry with that nid follows.
	mark bool
}

func newHotspotParser(text string) *hotspotParser {
	p := &hotspotParser{text: text, cur: -1}
	p.reserve(text, maxFrameReserve)
	p.threads.reserve(threadsIn(text))
	return p
}

// reserve sizes the frame and lock slabs for text (all of the input, or the
// piece of it this parser reads), with at most maxFrames frames.
func (p *hotspotParser) reserve(text string, maxFrames int) {
	// Size the slabs from cheap counts so that they rarely grow. The frame
	// slab is bounded: threads with identical stacks share one run (see
	// shareFrames), so in a thread explosion a small part of the frames
	// printed is kept, and the slab grows in large steps when it is not.
	// A big text gets the bound without counting: counting 16 MB costs
	// 3 ms, and a reservation larger than needed wastes at most the
	// bound's 655 KB.
	frames := maxFrames
	if len(text) < 64*maxFrames {
		frames = min(strings.Count(text, "\tat ")+16, maxFrames)
	}
	p.frames.reserve(frames)
	// A lock line names its object in angle brackets; counting one byte is
	// some seven times faster than counting "\t- ". Frames such as <init>
	// make the count larger, a hostile text of brackets no more than the
	// bound.
	p.locks.reserve(min(strings.Count(text, "<"), len(text)/32) + 16)
}

// parseHotSpot parses every HotSpot text dump in text.
func parseHotSpot(text string) []*Dump {
	return parseHotSpotWith(text, ParseOptions{})
}

// parseHotSpotWith parses every HotSpot text dump in text, checking thread
// entries against the live target as o says.
func parseHotSpotWith(text string, o ParseOptions) []*Dump {
	if o.ThreadExists == nil && o.JavaThreads == 0 {
		if dumps, ok := parseHotSpotParallel(text); ok {
			return dumps
		}
	}
	p := newHotspotParser(text)
	p.opts = o
	p.run(len(text))
	p.finish()
	return p.dumps
}

// run reads the lines that start before end (a multi-line thread name may
// take p.pos past it). A piece parser stops early when it sets abort.
func (p *hotspotParser) run(end int) {
	for p.pos < end && !p.abort {
		p.lineStart = p.pos
		var ln string
		ln, p.pos = lineAt(p.text, p.pos)
		p.line++
		p.handle(ln)
	}
}

// finish closes what is open at the end of the input.
func (p *hotspotParser) finish() {
	p.endDump(false)
	p.closeSuspect()
	for _, d := range p.dumps {
		p.checkJavaThreads(d)
	}
}

// lineAt returns the line starting at pos without its line ending, and the
// offset of the next line.
func lineAt(text string, pos int) (string, int) {
	var ln string
	end := strings.IndexByte(text[pos:], '\n')
	if end < 0 {
		ln = text[pos:]
		pos = len(text)
	} else {
		ln = text[pos : pos+end]
		pos += end + 1
	}
	if n := len(ln); n > 0 && ln[n-1] == '\r' {
		ln = ln[:n-1]
	}
	return ln, pos
}

func (p *hotspotParser) handle(ln string) {
	// A line that ends a thread name whose opening line has been read as
	// something else proves that the entries before it belong to a name.
	// Header lines never end with ')', stack and lock lines always do, so
	// the common lines cost one byte compare here.
	if n := len(ln); n > 0 && ln[0] != '"' && ln[n-1] != ')' && (p.dump != nil || p.susp != nil) {
		if q, ok := headerSplit(ln); ok && (p.acceptHeader(ln[q+1:]) || p.foldsSpan(ln[q+1:])) {
			p.danglingClose(ln, q)
			return
		}
	}
	// Fast paths for the lines that make up almost all of a dump.
	if len(ln) > 4 && ln[0] == '\t' {
		if ln[1] == 'a' && ln[2] == 't' && ln[3] == ' ' {
			p.frameLine(ln[4:])
			return
		}
		if ln[1] == '-' && ln[2] == ' ' {
			p.lockLine(ln[3:])
			return
		}
	}
	if len(ln) == 0 {
		p.blank()
		return
	}
	if ln[0] == '"' {
		p.quotedLine(ln)
		return
	}
	t := strings.TrimLeft(ln, " \t")
	if t == "" {
		p.blank()
		return
	}
	switch {
	case strings.HasPrefix(t, "at ") && p.dump != nil && p.inStack:
		p.frameLine(t[3:])
	case strings.HasPrefix(t, "- ") && p.dump != nil && (p.inStack || p.inSync):
		p.lockLine(t[2:])
	case strings.HasPrefix(t, "java.lang.Thread.State: "):
		p.stateLine(t[len("java.lang.Thread.State: "):])
	case strings.HasPrefix(t, "Full thread dump"):
		p.startDump(t)
	default:
		p.otherLine(ln, t)
	}
}

func (p *hotspotParser) blank() {
	if p.inDeadlock && p.deadlockPart == 1 {
		p.dlEdge = nil
	}
	p.inStack = false
	p.inSync = false
	p.mounted = nil
}

// startDump opens a new dump at a "Full thread dump ..." header.
func (p *hotspotParser) startDump(header string) {
	p.endDump(false)
	p.closeSuspect()
	d := &Dump{
		Format:        FormatHotSpot,
		JNIGlobalRefs: -1,
		JNIWeakRefs:   -1,
		StartLine:     p.line,
		PID:           p.pendingPID,
	}
	if !p.pendingTime.IsZero() && p.pendingTimeLine >= p.line-2 {
		d.Time = p.pendingTime
		d.StartLine = p.pendingTimeLine
	}
	vm := strings.TrimPrefix(header, "Full thread dump")
	vm = strings.TrimSpace(vm)
	vm = strings.TrimSuffix(vm, ":")
	d.VM = vm
	p.pendingPID = 0
	p.pendingTime = time.Time{}
	p.inDeadlock = false
	p.dump = d
	p.threads.begin()
	p.cur = -1
	p.resetNIDs()
}

func (p *hotspotParser) resetNIDs() {
	p.marked, p.markedDL = 0, 0
	if p.opts.ThreadExists != nil {
		p.nids = map[int64]int{}
	}
}

// implicitDump opens a dump for thread lines that come without a header
// (a pasted excerpt, a log that lost the header line).
func (p *hotspotParser) implicitDump() {
	p.dump = &Dump{Format: FormatHotSpot, JNIGlobalRefs: -1, JNIWeakRefs: -1, StartLine: p.line, PID: p.pendingPID}
	p.dump.Warnings = append(p.dump.Warnings, "thread lines at line "+itoa(p.line)+" have no \"Full thread dump\" header before them")
	p.pendingPID = 0
	p.threads.begin()
	p.cur = -1
	p.resetNIDs()
}

// endDump closes the open dump. complete says whether its trailer was seen.
func (p *hotspotParser) endDump(complete bool) {
	p.finishThread()
	if p.dump == nil {
		return
	}
	d := p.dump
	d.Threads = p.threads.take()
	if !complete {
		if len(d.Threads) == 0 {
			d.Warnings = append(d.Warnings, "dump has no threads: it may be truncated")
		} else {
			d.Warnings = append(d.Warnings, "dump ends without the JNI references trailer: it may be truncated or cut by other output")
		}
	}
	p.dumps = append(p.dumps, d)
	p.dump = nil
	p.cur = -1
	p.inStack, p.inSync, p.inSMR, p.inDeadlock = false, false, false, false
	p.mounted = nil
}

// thread returns the thread being read, or nil.
func (p *hotspotParser) thread() *Thread {
	if p.cur < 0 {
		return nil
	}
	return &p.threads.buf[p.threads.start+p.cur]
}

// finishThread seals the frames and locks of the current thread into their
// slabs.
func (p *hotspotParser) finishThread() {
	if t := p.thread(); t != nil {
		t.Frames = p.shareFrames(p.frames.take())
		t.Locks = p.locks.take()
		resolveHiddenWait(t)
		if t.Mounted != nil {
			resolveHiddenWait(t.Mounted)
		}
	}
	if p.mounted != nil {
		p.mounted = nil
	}
	p.cur = -1
}

func (p *hotspotParser) unknown(ln string) {
	if p.dump == nil {
		return // text outside any dump is not ours to judge
	}
	p.dump.UnknownLines++
	if len(p.dump.UnknownSamples) < maxUnknownSamples {
		p.dump.UnknownSamples = append(p.dump.UnknownSamples, SourceLine{Line: p.line, Text: ln})
	}
}

// quotedLine handles lines that start with a quote: thread headers, and the
// thread names of the deadlock report.
func (p *hotspotParser) quotedLine(ln string) {
	if p.inDeadlock {
		if len(ln) >= 3 && strings.HasSuffix(ln, "\":") { // `":` alone is no name
			if p.deadlockPart == 1 {
				name := ln[1 : len(ln)-2]
				dl := &p.dlDump.Deadlocks[len(p.dlDump.Deadlocks)-1]
				dl.Threads = append(dl.Threads, cleanName(name))
				dl.Edges = append(dl.Edges, DeadlockEdge{Thread: cleanName(name)})
				p.dlEdge = &dl.Edges[len(dl.Edges)-1]
			}
			return
		}
		p.inDeadlock = false
	}
	q, ok := headerSplit(ln)
	if ok && q == 0 && p.acceptHeader(ln[1:]) && (p.dump != nil || p.susp != nil) {
		// `" #12 ...`: the end of a name whose last character is a newline.
		p.danglingClose(ln, q)
		return
	}
	if ok && q > 0 && p.foldsSpan(ln[q+1:]) {
		p.danglingClose(ln, q)
		return
	}
	if ok && q > 0 && p.acceptHeader(ln[q+1:]) {
		if p.dump == nil {
			p.implicitDump()
		}
		p.newThread(ln[1:q], ln[q+1:], p.line)
		return
	}
	if p.dump != nil && p.openName(ln) {
		return
	}
	p.otherLine(ln, ln)
}

// newThread starts the thread whose header has the given raw name and field
// text; line is the line of the header's opening quote.
func (p *hotspotParser) newThread(rawName, rest string, line int) {
	p.finishThread()
	p.inSync = false
	p.inSMR = false
	p.threads.add(Thread{Allocated: -1, DefinedClasses: -1, Line: line})
	p.cur = len(p.threads.buf) - 1 - p.threads.start
	t := p.thread()
	if strings.IndexByte(rawName, '\r') >= 0 {
		rawName = strings.ReplaceAll(rawName, "\r\n", "\n")
	}
	t.Name = cleanName(rawName)
	parseHeaderFields(t, rest)
	if p.nids != nil && t.OSThreadID != 0 {
		p.nids[t.OSThreadID] = p.cur
	}
	if p.susp != nil && p.susp.dump == p.dump && p.susp.mark {
		t.Suspect = true
		p.susp.lastLine = p.line
	}
	p.inStack = true
	p.frames.begin()
	p.runHash = runHashSeed
	p.locks.begin()
}

// maxFrameReserve bounds the frame slab reserved up front (80 bytes a
// frame): a 10,000-thread dump prints some 300,000 frames, most of them in
// stacks that other threads have too.
const maxFrameReserve = 8192

// runHashSeed starts the hash of a frames run. The hash only picks a
// candidate; shareFrames compares the frames themselves.
const runHashSeed = 14695981039346656037

// lineSeed seeds the hash of frame lines.
var lineSeed = maphash.MakeSeed()

// hashLine mixes one frame line (the text after "at "), hashed by
// lineHash, into a run's hash. Equal lines parse to equal frames, so equal
// runs of lines hash alike (the line ending and the indent are not part of
// the line); the rare equal frames printed differently ("Unknown Source"
// and "Compiled Code" both give no file) hash apart and are just not
// shared.
func hashLine(h, line uint64) uint64 {
	return (h ^ line) * 1099511628211
}

func lineHash(s string) uint64 { return maphash.String(lineSeed, s) }

// frameMemo maps recent frame lines to their frames, one line per slot
// (the slot is picked by the line's hash; a line that lands on a taken
// slot replaces it). In a thread explosion thousands of stacks repeat the
// same few dozen lines: a line found here costs a comparison instead of a
// parse, and its frame's strings are those of its first occurrence, so
// equal frames of different threads compare at their first byte.
type frameMemo [frameMemoSlots]struct {
	line string
	f    Frame
	set  bool
}

// frameMemoSlots is a few times the distinct frame lines that repeat in
// a server's dump; the memo takes about 50 KB per parser.
const frameMemoSlots = 512

// shareFrames returns run, the frames just taken from the slab, or the
// frames of an earlier thread of this input that are equal to them: in a
// thread explosion thousands of threads have the same stack, and keeping
// it once saves most of the parse's memory. When an earlier run is used,
// the slab space of run is given back (run is always the last run of the
// slab's current array, even when the slab moved it while it grew).
//
// Sharing is safe because nothing writes into a Thread's Frames after the
// parse (checked in every package of ctprof: frames are read, copied by
// value, or the slice is replaced, never assigned through an index), and
// every run has cap == len, so an append by a caller copies rather than
// overwriting a neighbour.
func (p *hotspotParser) shareFrames(run []Frame) []Frame {
	if len(run) == 0 {
		return run
	}
	h := p.runHash
	if p.stacks == nil {
		p.stacks = map[uint64][]Frame{}
	}
	prev, ok := p.stacks[h]
	if !ok {
		p.stacks[h] = run
		return run
	}
	if !equalFrames(prev, run) {
		return run // a hash collision: keep the first run as the candidate
	}
	if n := len(p.frames.buf); n >= len(run) && &p.frames.buf[n-len(run)] == &run[0] {
		p.frames.buf = p.frames.buf[:n-len(run)]
		p.frames.start = len(p.frames.buf)
	}
	return prev
}

func equalFrames(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// headerSplit finds the closing quote of a thread name on a header line and
// reports whether a header field list follows it.
func headerSplit(ln string) (int, bool) {
	q := strings.LastIndexByte(ln, '"')
	if strings.Contains(ln, " owned by \"") {
		// ThreadInfo.toString() names the owner in quotes after the
		// thread's own name: `"t1" Id=12 BLOCKED on X owned by "t2" Id=13`.
		if i := strings.Index(ln, "\" Id="); i > 0 {
			q = i
		}
	}
	if q < 0 || !looksLikeHeaderRest(ln[q+1:]) {
		return q, false
	}
	return q, true
}

// looksLikeHeaderRest reports whether the text after a thread name's closing
// quote is a HotSpot (or VisualVM / ThreadInfo) header field list.
func looksLikeHeaderRest(rest string) bool {
	if rest == "" || rest[0] != ' ' {
		return false
	}
	return strings.Contains(rest, "prio=") || strings.Contains(rest, "tid=") ||
		strings.Contains(rest, "nid=") || strings.HasPrefix(rest, " #") ||
		strings.HasPrefix(rest, " - Thread t@") || strings.Contains(rest, " Id=")
}

// cleanName keeps names valid UTF-8 so that every sink can encode them.
// HotSpot prints names in Java's modified UTF-8, which writes a character
// outside the BMP as two 3-byte surrogates (CESU-8); those are decoded to
// the real character. Other bytes that are not UTF-8 become U+FFFD.
func cleanName(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(decodeCESU8(s), "\uFFFD")
}

// decodeCESU8 replaces surrogate pairs encoded as two 3-byte sequences
// (ED A0-AF xx ED B0-BF xx) with the UTF-8 encoding of the character.
func decodeCESU8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i+6 <= len(s) && s[i] == 0xED && s[i+1]&0xF0 == 0xA0 && s[i+3] == 0xED && s[i+4]&0xF0 == 0xB0 &&
			s[i+2]&0xC0 == 0x80 && s[i+5]&0xC0 == 0x80 {
			hi := 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			lo := 0xD000 | rune(s[i+4]&0x3F)<<6 | rune(s[i+5]&0x3F)
			b.WriteRune(utf16.DecodeRune(hi, lo))
			i += 6
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// parseHeaderFields reads `#12 [15] daemon prio=5 os_prio=0 cpu=1.2ms
// elapsed=3s tid=0x.. nid=0x.. waiting on condition  [0x..]` and the older
// and foreign variants of it.
func parseHeaderFields(t *Thread, rest string) {
	s := rest
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return
		}
		sp := strings.IndexByte(s, ' ')
		tok := s
		if sp >= 0 {
			tok = s[:sp]
		}
		next := s[len(tok):]
		switch {
		case tok[0] == '#':
			t.ID = parseInt(tok[1:])
		case tok[0] == '[' && tok[len(tok)-1] == ']' && !strings.HasPrefix(tok, "[0x") && t.OSThreadID == 0:
			// "[15]": the OS thread id (JDK 19+). A stack range "[0x...]"
			// only comes after the status words, handled below.
			t.OSThreadID = parseInt(tok[1 : len(tok)-1])
		case tok == "daemon":
			t.Daemon = true
		case tok == "virtual":
			t.Virtual = true
		case strings.HasPrefix(tok, "prio="):
			t.Priority = int(parseInt(tok[5:]))
		case strings.HasPrefix(tok, "os_prio="):
			t.OSPriority = int(parseInt(tok[8:]))
		case strings.HasPrefix(tok, "cpu="):
			t.CPU = parseDuration(tok[4:])
			t.HasCPU = true
		case strings.HasPrefix(tok, "elapsed="):
			t.Elapsed = parseDuration(tok[8:])
		case strings.HasPrefix(tok, "allocated="):
			t.Allocated = parseSize(tok[10:])
		case strings.HasPrefix(tok, "defined_classes="):
			t.DefinedClasses = parseInt(tok[16:])
		case strings.HasPrefix(tok, "tid="):
			t.NativeAddress = normalizeAddress(tok[4:])
		case strings.HasPrefix(tok, "nid="):
			t.OSThreadID = parseNID(tok[4:])
			t.Status = statusWords(next)
			return
		case strings.HasPrefix(tok, "Id="):
			// ThreadInfo.toString(): `"name" Id=12 BLOCKED on X owned by ...`
			t.ID = parseInt(tok[3:])
			st := strings.TrimSpace(next)
			word := st
			if i := strings.IndexByte(st, ' '); i >= 0 {
				word = st[:i]
			}
			t.State = parseState(word)
			t.Status = st
			return
		case tok == "-" && strings.HasPrefix(next, " Thread t@"):
			// VisualVM: `"name" - Thread t@12`
			t.ID = parseInt(strings.TrimSpace(next[len(" Thread t@"):]))
			return
		case tok[0] == '[':
			return // stack range of a thread without nid
		}
		if sp < 0 {
			return
		}
		s = next
	}
}

// statusWords extracts "waiting on condition" from
// " waiting on condition  [0x00007f..]".
func statusWords(s string) string {
	if i := strings.LastIndexByte(s, '['); i >= 0 && strings.HasSuffix(strings.TrimRight(s, " "), "]") {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func parseState(s string) State {
	switch s {
	case "RUNNABLE":
		return StateRunnable
	case "BLOCKED":
		return StateBlocked
	case "WAITING":
		return StateWaiting
	case "TIMED_WAITING":
		return StateTimedWaiting
	case "NEW":
		return StateNew
	case "TERMINATED":
		return StateTerminated
	}
	return StateNone
}

func (p *hotspotParser) stateLine(s string) {
	t := p.thread()
	if t == nil || !p.inStack {
		p.unknown(s)
		return
	}
	word, detail := s, ""
	if i := strings.IndexByte(s, ' '); i >= 0 {
		word, detail = s[:i], strings.TrimSpace(s[i+1:])
		detail = strings.TrimSuffix(strings.TrimPrefix(detail, "("), ")")
	}
	target := t
	if p.mounted != nil {
		target = p.mounted
	}
	target.State = parseState(word)
	target.StateDetail = detail
}

// frameLine parses "pkg.Class.method(java.base@17/File.java:12)".
func (p *hotspotParser) frameLine(s string) {
	if p.dump == nil || !p.inStack {
		if p.inDeadlock {
			return // the deadlock report repeats the stacks; skip them
		}
		p.unknown(s)
		return
	}
	h := lineHash(s)
	if p.memo == nil {
		p.memo = new(frameMemo)
	}
	m := &p.memo[h%frameMemoSlots]
	if !m.set || m.line != s {
		m.line, m.f, m.set = s, parseFrame(s), true
	}
	f := m.f
	if p.mounted != nil {
		p.mounted.Frames = append(p.mounted.Frames, f)
		return
	}
	if p.cur < 0 {
		p.unknown(s)
		return
	}
	p.frames.add(f)
	p.runHash = hashLine(p.runHash, h)
}

func parseFrame(s string) Frame {
	var f Frame
	open := strings.LastIndexByte(s, '(')
	fn := s
	if open >= 0 {
		fn = s[:open]
		loc := s[open+1:]
		loc = strings.TrimSuffix(loc, ")")
		if sl := strings.LastIndexByte(loc, '/'); sl >= 0 {
			f.Module = loc[:sl]
			loc = loc[sl+1:]
		}
		switch loc {
		case "Native Method":
			f.Native = true
		case "Unknown Source", "Compiled Code", "":
		default:
			if c := strings.LastIndexByte(loc, ':'); c >= 0 {
				f.File = loc[:c]
				f.Line = int(parseInt(loc[c+1:]))
			} else {
				f.File = loc
			}
		}
	}
	if dot := strings.LastIndexByte(fn, '.'); dot >= 0 {
		f.Class, f.Method = fn[:dot], fn[dot+1:]
	} else {
		f.Method = fn
	}
	return f
}

// lockLine parses the text after "- ".
func (p *hotspotParser) lockLine(s string) {
	if p.dump == nil {
		return
	}
	if p.inSync {
		if t := p.thread(); t != nil && s != "None" {
			addr, class := lockRef(s)
			t.OwnableSynchronizers = append(t.OwnableSynchronizers, Lock{Address: addr, Class: class})
		}
		return
	}
	if !p.inStack {
		if p.inDeadlock {
			return
		}
		p.unknown(s)
		return
	}
	var ev LockEvent
	switch {
	case strings.HasPrefix(s, "waiting to lock "):
		ev.Action = LockWaitingToLock
		s = s[len("waiting to lock "):]
	case strings.HasPrefix(s, "locked "):
		ev.Action = LockLocked
		s = s[len("locked "):]
	case strings.HasPrefix(s, "parking to wait for "):
		ev.Action = LockParking
		s = s[len("parking to wait for "):]
	case strings.HasPrefix(s, "waiting on the Class initialization monitor for "):
		// JDK 21+: the thread waits for another thread to finish a static
		// initializer. The class is the lock; its owner is the thread
		// running <clinit> (found later from the stacks).
		ev.Action = LockClassInit
		c := strings.TrimSpace(s[len("waiting on the Class initialization monitor for "):])
		ev.Lock = Lock{Address: "class-init:" + c, Class: c}
		p.addLock(ev)
		return
	case strings.HasPrefix(s, "waiting on "):
		ev.Action = LockWaitingOn
		s = s[len("waiting on "):]
	case strings.HasPrefix(s, "waiting to re-lock in wait() "):
		ev.Action = LockWaitingToRelock
		s = s[len("waiting to re-lock in wait() "):]
	case strings.HasPrefix(s, "eliminated "):
		ev.Action = LockEliminated
		s = s[len("eliminated "):]
	case strings.HasPrefix(s, " blocked on "):
		// ThreadInfo.toString(): "-  blocked on java.lang.Object@1b2c"
		ev.Action = LockWaitingToLock
		ev.Lock = hashLock(strings.TrimSpace(s[len(" blocked on "):]))
		p.addLock(ev)
		return
	case strings.HasPrefix(s, " locked "):
		ev.Action = LockLocked
		ev.Lock = hashLock(strings.TrimSpace(s[len(" locked "):]))
		p.addLock(ev)
		return
	case strings.HasPrefix(s, " waiting on "):
		ev.Action = LockWaitingOn
		ev.Lock = hashLock(strings.TrimSpace(s[len(" waiting on "):]))
		p.addLock(ev)
		return
	default:
		p.unknown(s)
		return
	}
	ev.Lock.Address, ev.Lock.Class = lockRef(s)
	p.addLock(ev)
}

func (p *hotspotParser) addLock(ev LockEvent) {
	if p.mounted != nil {
		ev.Frame = len(p.mounted.Frames) - 1
		p.mounted.Locks = append(p.mounted.Locks, ev)
		return
	}
	if p.cur < 0 {
		return
	}
	ev.Frame = len(p.frames.buf) - p.frames.start - 1
	p.locks.add(ev)
}

// lockRef parses "<0x000000076ab62208> (a java.lang.Object)", tolerating the
// extra space of "parking to wait for  <...>" and a missing class.
func lockRef(s string) (addr, class string) {
	s = strings.TrimLeft(s, " ")
	if len(s) > 0 && s[0] == '<' {
		if e := strings.IndexByte(s, '>'); e > 0 {
			a := s[1:e]
			if isHexAddress(a) {
				addr = normalizeAddress(a)
			}
			s = s[e+1:]
		}
	}
	if i := strings.Index(s, "(a "); i >= 0 {
		c := s[i+3:]
		if j := strings.LastIndexByte(c, ')'); j >= 0 {
			c = c[:j]
		}
		class = c
	}
	return addr, class
}

// hashLock parses ThreadInfo's "java.lang.Object@1b2c3d".
func hashLock(s string) Lock {
	if at := strings.LastIndexByte(s, '@'); at > 0 {
		return Lock{Class: s[:at], Address: "0x" + strings.ToLower(s[at+1:])}
	}
	return Lock{Class: s}
}

func isHexAddress(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// normalizeAddress returns lower-case hex with a "0x" prefix. JDK 6 on macOS
// prints addresses without the prefix; the common case allocates nothing.
func normalizeAddress(s string) string {
	if s == "" {
		return s
	}
	lower := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'F' || c == 'X' {
			lower = false
			break
		}
	}
	if lower && strings.HasPrefix(s, "0x") {
		return s
	}
	s = strings.ToLower(s)
	if !strings.HasPrefix(s, "0x") {
		s = "0x" + s
	}
	return s
}

// otherLine handles everything that is not a frame, lock, state, header or
// quoted line.
func (p *hotspotParser) otherLine(raw, t string) {
	if p.inSMR {
		if strings.HasPrefix(t, "}") {
			p.inSMR = false
		}
		return
	}
	switch {
	case strings.HasPrefix(t, "Locked ownable synchronizers:"):
		if th := p.thread(); th != nil {
			th.HasSynchronizerSection = true
			p.inSync = true
			p.inStack = false
			p.mounted = nil
			return
		}
	case strings.HasPrefix(t, "Carrying virtual thread #"):
		if th := p.thread(); th != nil && p.inStack {
			th.CarryingVirtual = parseInt(strings.TrimSpace(t[len("Carrying virtual thread #"):]))
			return
		}
	case strings.HasPrefix(t, "Mounted virtual thread #"):
		if th := p.thread(); th != nil && p.inStack {
			id := parseInt(strings.TrimSpace(t[len("Mounted virtual thread #"):]))
			th.CarryingVirtual = id
			th.Mounted = &Thread{Virtual: true, ID: id, OSThreadID: th.OSThreadID, Allocated: -1, DefinedClasses: -1, Line: p.line,
				Name: "virtual#" + itoa(int(id))}
			p.mounted = th.Mounted
			return
		}
	case strings.HasPrefix(t, "No compile task"), strings.HasPrefix(t, "Compiling:"):
		if p.thread() != nil {
			return
		}
	case strings.HasPrefix(t, "Threads class SMR info:"):
		p.finishThread()
		return
	case strings.HasPrefix(t, "_java_thread_list=") || strings.HasPrefix(t, "_to_delete_list=") || strings.HasPrefix(t, "_java_thread_list_alloc_cnt="):
		if strings.HasSuffix(t, "{") {
			p.inSMR = true
		}
		return
	case strings.HasPrefix(t, "JNI global ref"):
		if p.dump != nil {
			p.jniTrailer(t)
			p.endDump(true)
			return
		}
	case strings.HasPrefix(t, "Found one Java-level deadlock:"):
		target := p.dump
		if target == nil && len(p.dumps) > 0 {
			target = p.dumps[len(p.dumps)-1]
		}
		if target != nil {
			p.finishThread()
			p.inDeadlock = true
			p.deadlockPart = 1
			p.inStack = false
			p.dlDump = target
			// Inside a name that may hold forged entries, a report may be
			// forged too.
			suspect := p.susp != nil && p.susp.dump == target && p.susp.mark
			target.Deadlocks = append(target.Deadlocks, Deadlock{Suspect: suspect})
			return
		}
	case p.inDeadlock:
		p.deadlockLine(t)
		return
	case strings.HasPrefix(t, "Found ") && strings.Contains(t, "deadlock"):
		return // "Found 3 deadlocks." closes the report
	case isTimestampLine(t):
		if ts, err := time.ParseInLocation("2006-01-02 15:04:05", t, time.UTC); err == nil {
			p.pendingTime = ts
			p.pendingTimeLine = p.line
			if p.dump != nil && p.cur < 0 && len(p.threads.buf) == p.threads.start {
				return
			}
			return
		}
	case isPIDPreamble(t):
		p.pendingPID = int(parseInt(t[:len(t)-1]))
		return
	}
	if p.dump == nil {
		return
	}
	// Foreign text: never part of the thread's stack.
	p.inStack = false
	p.inSync = false
	p.mounted = nil
	p.unknown(raw)
}

func (p *hotspotParser) deadlockLine(t string) {
	switch {
	case strings.HasPrefix(t, "====="):
		return
	case strings.HasPrefix(t, "Found ") && strings.Contains(t, "deadlock"):
		// "Found 3 deadlocks." closes the report.
		p.inDeadlock = false
		return
	case strings.HasPrefix(t, "Java stack information for the threads listed above"):
		p.deadlockPart = 2
		return
	case p.deadlockPart == 2:
		return
	}
	e := p.dlEdge
	if e == nil {
		p.unknown(t)
		return
	}
	switch {
	case strings.HasPrefix(t, "waiting to lock monitor "):
		// "waiting to lock monitor 0x.. (object 0x.., a java.lang.Object),"
		if i := strings.Index(t, "(object "); i >= 0 {
			r := t[i+len("(object "):]
			if c := strings.IndexByte(r, ','); c >= 0 {
				e.WaitsFor.Address = normalizeAddress(r[:c])
				r = strings.TrimPrefix(r[c+1:], " a ")
				e.WaitsFor.Class = strings.TrimSuffix(strings.TrimSuffix(r, ","), ")")
			}
		}
	case strings.HasPrefix(t, "waiting for ownable synchronizer "):
		// "waiting for ownable synchronizer 0x.., (a java.util...Sync),"
		e.Synchronizer = true
		r := t[len("waiting for ownable synchronizer "):]
		if c := strings.IndexByte(r, ','); c >= 0 {
			e.WaitsFor.Address = normalizeAddress(r[:c])
			r = r[c+1:]
		}
		_, e.WaitsFor.Class = lockRef(strings.TrimSuffix(r, ","))
	case strings.HasPrefix(t, "which is held by "):
		h := strings.TrimPrefix(t, "which is held by ")
		if len(h) >= 2 && h[0] == '"' {
			if q := strings.LastIndexByte(h, '"'); q > 0 {
				h = h[1:q]
			}
		}
		e.HeldBy = cleanName(h)
	case strings.HasPrefix(t, "waiting to lock ") || strings.HasPrefix(t, "waiting for "):
		// Forms of later JDKs we do not know yet keep the edge without a lock.
	default:
		p.unknown(t)
	}
}

// jniTrailer reads "JNI global refs: 22, weak refs: 0" (JDK 11+) and
// "JNI global references: 5" (JDK 8 and before).
func (p *hotspotParser) jniTrailer(t string) {
	if c := strings.IndexByte(t, ':'); c >= 0 {
		r := t[c+1:]
		num := r
		if comma := strings.IndexByte(r, ','); comma >= 0 {
			num = r[:comma]
			if w := strings.LastIndexByte(r, ':'); w > comma {
				p.dump.JNIWeakRefs = int(parseInt(strings.TrimSpace(r[w+1:])))
			}
		}
		p.dump.JNIGlobalRefs = int(parseInt(strings.TrimSpace(num)))
	}
}

func isTimestampLine(t string) bool {
	// "2019-12-10 07:28:37"
	if len(t) != 19 || t[4] != '-' || t[7] != '-' || t[10] != ' ' || t[13] != ':' {
		return false
	}
	return t[0] >= '0' && t[0] <= '9'
}

// isPIDPreamble matches jcmd's first line, "12345:".
func isPIDPreamble(t string) bool {
	if len(t) < 2 || len(t) > 12 || t[len(t)-1] != ':' {
		return false
	}
	for i := 0; i < len(t)-1; i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// parseInt parses a decimal integer prefix; garbage gives 0.
func parseInt(s string) int64 {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			break
		}
		if n > (1<<62)/10 {
			return n
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// parseNID reads nid=: hex with 0x before JDK 18, decimal from JDK 18 on.
func parseNID(s string) int64 {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, err := strconv.ParseInt(s[2:], 16, 64)
		if err != nil {
			return 0
		}
		return v
	}
	return parseInt(s)
}

// parseDuration reads "75.83ms", "9.33s", and the decimal comma some
// locales print ("125,00ms").
func parseDuration(s string) time.Duration {
	unit := time.Second
	switch {
	case strings.HasSuffix(s, "ms"):
		unit = time.Millisecond
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "us"):
		unit = time.Microsecond
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "ns"):
		unit = time.Nanosecond
		s = s[:len(s)-2]
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	}
	var whole, frac, scale int64 = 0, 0, 1
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		whole = whole*10 + int64(s[i]-'0')
	}
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9' && scale < 1e9; i++ {
			frac = frac*10 + int64(s[i]-'0')
			scale *= 10
		}
	}
	return time.Duration(whole)*unit + time.Duration(frac)*unit/time.Duration(scale)
}

// parseSize reads JDK 25's allocated=: "39288B", "107K", "103M", "2G".
func parseSize(s string) int64 {
	if s == "" {
		return -1
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'B':
		s = s[:len(s)-1]
	case 'K':
		mult, s = 1<<10, s[:len(s)-1]
	case 'M':
		mult, s = 1<<20, s[:len(s)-1]
	case 'G':
		mult, s = 1<<30, s[:len(s)-1]
	}
	return parseInt(s) * mult
}

// slab hands out contiguous sub-slices of one large backing array, so that
// each thread's frames cost no allocation of their own.
type slab[T any] struct {
	buf   []T
	start int
}

func (s *slab[T]) reserve(n int) { s.buf = make([]T, 0, n) }

// maxSlabStep bounds the growth of a slab (elements): the unused end of the
// last array is at most this.
const maxSlabStep = 65536

// begin starts a new run at the current end.
func (s *slab[T]) begin() { s.start = len(s.buf) }

// add appends v to the current run, moving the run to a fresh array when the
// current one is full (runs handed out earlier keep their old array). The
// arrays double up to maxSlabStep elements, so that a slab reserved small
// does not grow by a few runs at a time.
func (s *slab[T]) add(v T) {
	if len(s.buf) == cap(s.buf) {
		run := len(s.buf) - s.start
		n := make([]T, run, max(2*run+256, min(2*cap(s.buf), maxSlabStep)))
		copy(n, s.buf[s.start:])
		s.buf, s.start = n, 0
	}
	s.buf = append(s.buf, v)
}

// take returns the current run (nil when empty) and starts a new one.
func (s *slab[T]) take() []T {
	if len(s.buf) == s.start {
		return nil
	}
	r := s.buf[s.start:len(s.buf):len(s.buf)]
	s.start = len(s.buf)
	return r
}
