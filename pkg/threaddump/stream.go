package threaddump

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The streaming reader cuts its input into chunks, each holding one dump
// (plus the lines that belong to it, such as a deadlock report printed after
// the trailer), and hands every chunk to the same parsers Parse uses. Memory
// is bounded by the largest chunk, not by the input: a stdout log of many
// gigabytes holding hundreds of dumps among log lines is read in one pass.

// Limits of the streaming reader. Everything it reads is hostile input.
const (
	// MaxDumpBytes bounds the text of one dump. Real dumps stay far below
	// (a 4,000-thread dump with deep stacks is about 10 MB); a larger one
	// is refused rather than read without bound.
	MaxDumpBytes = 256 << 20
	// MaxLineBytes bounds one line. A longer line is skipped with a
	// warning: no line of a dump comes near it.
	MaxLineBytes = 1 << 20

	// tailLimit is how much foreign text after a dump's trailer is kept in
	// case a deadlock report follows it among log lines; past it, the dump
	// is complete.
	tailLimit = 1 << 20
	// runLimit ends a dump that lost its trailer: that many bytes in a row
	// of lines no dump has (log lines) mean the dump was cut.
	runLimit = 1 << 20
	// threadLimit ends a dump that lost its trailer when a single thread's
	// text would exceed it (a 60,000-frame stack is about 6 MB).
	threadLimit = 32 << 20
	// binaryWindow is how much of the input's start may hold no NUL byte:
	// one there means binary data.
	binaryWindow = 8 << 10
	// maxNULs is how many NUL bytes a text input may hold (a log padded by
	// a crash) before it is taken for binary data.
	maxNULs = 64 << 10
	// maxReaderWarnings bounds the warnings kept; the rest are counted.
	maxReaderWarnings = 20
	headSize          = 64 << 10
)

// Errors of the streaming reader.
var (
	// ErrBinary means the input is binary data, not text.
	ErrBinary = errors.New("not a thread dump (binary data)")
	// ErrDumpTooLarge means one dump's text exceeds MaxDumpBytes.
	ErrDumpTooLarge = errors.New("thread dump too large")
	// ErrInputIdle is what the io.Reader under a Reader returns, with no
	// data, to say that it has given everything written so far to a live
	// input (a followed log, a pipe) and that a while (about a second)
	// has passed since it last said so. It must wait between two of them.
	//
	// A HotSpot dump ends at the next dump, at the end of the input or
	// after 1 MB of other text, because a deadlock report may follow its
	// trailer; a live log may give none of these for hours. HotSpot prints
	// that report right after the trailer, so a dump whose trailer came
	// before the previous ErrInputIdle is complete: Next returns it. With
	// no such dump, Next returns ErrInputIdle itself, and nothing is lost:
	// a line cut in the middle is kept, and the next call goes on reading.
	// Gzip and the whole-document formats (JSON, javacore) wait through it.
	ErrInputIdle = errors.New("no more input for now")
)

// Splitter states for HotSpot text.
const (
	stOutside  = iota // between dumps: only the last lines are kept
	stDump            // inside a dump (after a header or a headerless thread line)
	stTail            // after the JNI trailer: a deadlock report may follow
	stDeadlock        // inside a deadlock report after the trailer
)

// Reading modes, chosen from the head of the input.
const (
	modeHotSpot = iota
	modeText    // Thread.dump_to_file text: split at the pid preamble
	modeWhole   // JSON and javacore: one document, read whole (bounded)
)

// Reader reads the thread dumps of a stream one at a time.
type Reader struct {
	src     io.Reader
	in      *bufio.Reader
	started bool
	mode    int
	err     error // sticky: returned once pending is drained
	gzErr   error // why the gzip stream ended early, if it did

	line    int // input lines read so far
	nuls    int
	scratch []byte

	pending []*Dump
	ndumps  int
	foreign string // a foreign format seen in lines outside dumps

	warnings     []string
	moreWarnings int

	// partial is true when scratch holds the start of a line not yet
	// complete (longer than the buffer, or cut by ErrInputIdle), and
	// tooLong when that line is past MaxLineBytes and being skipped.
	partial, tooLong bool
	// idles counts the ErrInputIdle seen; tailIdles is the count when the
	// current dump's trailer (or deadlock report) ended, at tailEnd in buf
	// (-1: no trailer in buf).
	idles, tailIdles, tailEnd int
	// headIdle is an ErrInputIdle that came while the head was read: it
	// counts once the lines that came before it are read.
	headIdle bool
	// off is how many (decoded) bytes readLine has taken from the input;
	// binChecked how many from its start the head's NUL check covered (less
	// than binaryWindow when a live input went idle in the head: the rest
	// of the window is checked as its lines come, so that a live input is
	// refused where a file holding the same bytes is).
	off, binChecked int

	// Chunk being assembled: buf holds lines bufLine.. of the input.
	buf     []byte
	bufLine int
	state   int
	// Starts (offsets into buf) of the last two lines appended, -1 if none.
	last1, last2 int
	// runStart is where the current run of foreign lines begins in buf, or
	// -1; runBytes is its length.
	runStart, runBytes int
	// sinceThread counts the bytes since the last thread header.
	sinceThread int
	// nameBytes is the length so far of a thread name that spans lines, or
	// -1 when no name is open.
	nameBytes int
	// textPID is the start of the previous line when it was a bare pid
	// (modeText), or -1.
	textPID int
}

// NewReader returns a Reader of the dumps in r: HotSpot text (several dumps,
// embedded in a log or not), Thread.dump_to_file text and JSON, and OpenJ9
// javacore; gzip, UTF-16 and a byte order mark are undone on the fly.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r, last1: -1, last2: -1, runStart: -1, textPID: -1, nameBytes: -1, tailEnd: -1}
}

// Warnings says what the reader itself found wrong with the input (lines
// skipped, a gzip stream cut short). The dumps carry their own warnings.
func (r *Reader) Warnings() []string {
	w := append([]string(nil), r.warnings...)
	if r.moreWarnings > 0 {
		w = append(w, fmt.Sprintf("%d more warnings about the input not shown", r.moreWarnings))
	}
	return w
}

func (r *Reader) warn(s string) {
	if len(r.warnings) < maxReaderWarnings {
		r.warnings = append(r.warnings, s)
	} else {
		r.moreWarnings++
	}
}

// Next returns the next dump, or io.EOF after the last one. An input that
// holds no dump at all gives ErrNoThreadDump or ErrUnsupportedFormat.
func (r *Reader) Next() (*Dump, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return nil, r.err
		}
		err := r.fill()
		if err == ErrInputIdle {
			// Not an end: the input may grow.
			return nil, err
		}
		r.err = err
	}
	d := r.pending[0]
	r.pending[0] = nil
	r.pending = r.pending[1:]
	r.ndumps++
	return d, nil
}

// fill reads until at least one dump is pending or the input ends. It
// returns the error that ends the stream (io.EOF at a clean end).
func (r *Reader) fill() error {
	if !r.started {
		if err := r.start(); err != nil {
			if err != ErrInputIdle {
				r.started = true
			}
			return err
		}
		r.started = true
		if r.mode == modeWhole {
			return r.readWhole()
		}
	}
	for len(r.pending) == 0 {
		if r.headIdle && !r.lineBuffered() {
			r.headIdle = false
			return r.idle()
		}
		ln, err := r.readLine()
		if err != nil {
			if err == ErrInputIdle {
				return r.idle()
			}
			if err != io.EOF {
				return err
			}
			return r.finish()
		}
		if r.mode == modeText {
			err = r.textLine(ln)
		} else {
			err = r.hotspotLine(ln)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// idle completes a HotSpot dump whose trailer came before the previous
// ErrInputIdle (see there); it returns ErrInputIdle when none is pending.
// The dump ends at its trailer (or deadlock report) even when a log line
// after it looked like the start of a thread name: what came a quiet
// second later is not the JVM's dump, which it writes at once.
func (r *Reader) idle() error {
	r.idles++
	if r.mode == modeHotSpot && r.tailEnd >= 0 && r.state != stDeadlock && r.idles-r.tailIdles >= 2 {
		r.state = stOutside
		if err := r.cutAt(r.tailEnd, len(r.buf)); err != nil {
			return err
		}
	}
	if len(r.pending) == 0 {
		return ErrInputIdle
	}
	return nil
}

// lineBuffered reports whether a whole line is buffered.
func (r *Reader) lineBuffered() bool {
	b, _ := r.in.Peek(r.in.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// idleWait reads through ErrInputIdle, for readers that cannot stop in the
// middle: gzip (its errors are sticky) and the whole-document formats.
type idleWait struct{ r io.Reader }

func (w idleWait) Read(p []byte) (int, error) {
	for {
		n, err := w.r.Read(p)
		if n > 0 || !errors.Is(err, ErrInputIdle) {
			if errors.Is(err, ErrInputIdle) {
				err = nil
			}
			return n, err
		}
	}
}

// finish parses what is left and says how the stream ended.
func (r *Reader) finish() error {
	if r.gzErr != nil {
		r.warn(fmt.Sprintf("the gzip data ends early or is damaged after line %d (%v): the last dump may be cut", r.line, r.gzErr))
	}
	if r.state != stOutside || r.mode == modeText {
		r.flush(len(r.buf))
	}
	r.buf = nil
	if len(r.pending) == 0 && r.ndumps == 0 {
		if r.foreign != "" {
			return fmt.Errorf("%w: this looks like %s", ErrUnsupportedFormat, r.foreign)
		}
		return ErrNoThreadDump
	}
	return io.EOF
}

// gzipSource turns the errors of a damaged or cut gzip stream into an end
// of input: what was decompressed is still read, as Parse always did.
type gzipSource struct {
	zr  *gzip.Reader
	err *error
}

func (g gzipSource) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		*g.err = err
		err = io.EOF
	}
	return n, err
}

// start undoes compression and encodings and picks the reading mode from
// the head of the input.
func (r *Reader) start() error {
	if r.in == nil { // a start that met ErrInputIdle is tried again
		r.in = bufio.NewReaderSize(r.src, headSize)
	}
	for range 3 { // gzip inside gzip happens (a .gz of a .gz log)
		magic, err := r.in.Peek(2)
		if errors.Is(err, ErrInputIdle) {
			return ErrInputIdle
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read thread dump: %w", err)
		}
		if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		zr, err := gzip.NewReader(idleWait{r.in})
		if err != nil {
			return fmt.Errorf("read gzip thread dump: %w", err)
		}
		r.in = bufio.NewReaderSize(gzipSource{zr: zr, err: &r.gzErr}, headSize)
	}
	head, err := r.peekHead()
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(head, []byte("\xef\xbb\xbf")):
		_, _ = r.in.Discard(3)
	case bytes.HasPrefix(head, []byte("\xff\xfe")), bytes.HasPrefix(head, []byte("\xfe\xff")):
		big := head[0] == 0xfe
		_, _ = r.in.Discard(2)
		r.in = bufio.NewReaderSize(&utf16Reader{src: r.in, big: big}, headSize)
	case len(head) >= 64 && looksUTF16(unsafe.String(unsafe.SliceData(head), len(head))):
		r.in = bufio.NewReaderSize(&utf16Reader{src: r.in, big: head[0] == 0}, headSize)
	}
	if head, err = r.peekHead(); err != nil {
		return err
	}
	// Binary data (an image, /dev/zero, a core file) is refused at once
	// instead of being read to its end, which may never come.
	if bytes.IndexByte(head[:min(len(head), binaryWindow)], 0) >= 0 {
		return ErrBinary
	}
	r.binChecked = binaryWindow
	if r.headIdle {
		r.binChecked = len(head)
	}
	h := string(head)
	switch {
	case looksLikeThreadDumpJSON(h), looksLikeJavacore(h):
		r.mode = modeWhole
	case looksLikeThreadDumpText(h):
		r.mode = modeText
	default:
		if f := foreignFormat(h); f != "" {
			return fmt.Errorf("%w: this looks like %s", ErrUnsupportedFormat, f)
		}
	}
	return nil
}

// peekHead returns up to headSize bytes of the decoded input without
// consuming them.
func (r *Reader) peekHead() ([]byte, error) {
	if r.headIdle {
		// The input said it had no more: what came is the head.
		head, _ := r.in.Peek(r.in.Buffered())
		return head, nil
	}
	head, err := r.in.Peek(headSize)
	if errors.Is(err, ErrInputIdle) {
		// A live input need not fill the head: choose from what came, as
		// at the end of a short file, but from something.
		if len(head) == 0 {
			return nil, ErrInputIdle
		}
		r.headIdle = true
		return head, nil
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("read thread dump: %w", err)
	}
	return head, nil
}

// readWhole reads a one-document format (JSON, javacore) whole, up to
// MaxDumpBytes, and parses it.
func (r *Reader) readWhole() error {
	b, err := io.ReadAll(io.LimitReader(idleWait{r.in}, MaxDumpBytes+1))
	if err != nil {
		return fmt.Errorf("read thread dump: %w", err)
	}
	if err := r.checkBinary(b); err != nil {
		return err
	}
	if len(b) > MaxDumpBytes {
		return fmt.Errorf("%w: the input is over %d MB, more than any thread dump", ErrDumpTooLarge, MaxDumpBytes>>20)
	}
	if r.gzErr != nil {
		r.warn(fmt.Sprintf("the gzip data ends early or is damaged (%v): the dump may be cut", r.gzErr))
	}
	if len(b) == 0 {
		return ErrNoThreadDump
	}
	ds, err := parseText(unsafe.String(unsafe.SliceData(b), len(b)))
	if err != nil {
		return err
	}
	r.pending = ds
	r.err = io.EOF
	return nil
}

// readLine returns the next line without its newline; it is valid until the
// next call. A line longer than MaxLineBytes comes back empty, with a
// warning, so that line numbers stay those of the input. ErrInputIdle in
// the middle of a line keeps what came of it for the next call.
func (r *Reader) readLine() ([]byte, error) {
	frag, err := r.in.ReadSlice('\n')
	if e := r.checkBinary(frag); e != nil {
		return nil, e
	}
	if !r.partial {
		if err == nil {
			r.line++
			ln := frag[:len(frag)-1]
			return ln, r.countNULs(ln)
		}
		if err != bufio.ErrBufferFull {
			if errors.Is(err, ErrInputIdle) {
				if len(frag) > 0 {
					r.scratch = append(r.scratch[:0], frag...)
					r.partial, r.tooLong = true, false
				}
				return nil, ErrInputIdle
			}
			if len(frag) == 0 {
				if err != io.EOF {
					return nil, fmt.Errorf("read thread dump after line %d: %w", r.line, err)
				}
				return nil, io.EOF
			}
			// The last line has no newline; the next call sees the end.
			r.line++
			return frag, r.countNULs(frag)
		}
		r.scratch = append(r.scratch[:0], frag...)
		r.partial, r.tooLong = true, false
		frag, err = r.in.ReadSlice('\n')
		if e := r.checkBinary(frag); e != nil {
			return nil, e
		}
	}
	for {
		if !r.tooLong && len(r.scratch)+len(frag) > MaxLineBytes {
			r.tooLong = true
			if e := r.countNULs(r.scratch); e != nil {
				return nil, e
			}
			r.scratch = r.scratch[:0]
		}
		if r.tooLong {
			if e := r.countNULs(frag); e != nil {
				return nil, e
			}
		} else {
			r.scratch = append(r.scratch, frag...)
		}
		if err != bufio.ErrBufferFull {
			break
		}
		frag, err = r.in.ReadSlice('\n')
		if e := r.checkBinary(frag); e != nil {
			return nil, e
		}
	}
	if errors.Is(err, ErrInputIdle) {
		return nil, ErrInputIdle
	}
	r.partial = false
	r.line++
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read thread dump at line %d: %w", r.line, err)
	}
	if r.tooLong {
		r.warn(fmt.Sprintf("line %d is longer than %d KiB: skipped", r.line, MaxLineBytes>>10))
		return r.scratch[:0], nil
	}
	ln := bytes.TrimSuffix(r.scratch, []byte{'\n'})
	return ln, r.countNULs(ln)
}

// checkBinary takes the next bytes read from the input and fails when the
// part of them in the binary window that the head check did not cover
// holds a NUL byte.
func (r *Reader) checkBinary(b []byte) error {
	start := r.off
	r.off += len(b)
	if r.off <= r.binChecked || start >= binaryWindow {
		return nil
	}
	lo, hi := max(r.binChecked-start, 0), min(binaryWindow-start, len(b))
	if lo < hi && bytes.IndexByte(b[lo:hi], 0) >= 0 {
		return ErrBinary
	}
	return nil
}

// countNULs fails once the input holds more NUL bytes than text does.
func (r *Reader) countNULs(b []byte) error {
	if bytes.IndexByte(b, 0) < 0 {
		return nil
	}
	r.nuls += bytes.Count(b, []byte{0})
	if r.nuls > maxNULs {
		return fmt.Errorf("%w at line %d", ErrBinary, r.line)
	}
	return nil
}

// appendLine adds a line to the chunk and enforces the size bound.
func (r *Reader) appendLine(ln []byte) error {
	if len(r.buf) == 0 {
		r.bufLine = r.line
	}
	r.last2, r.last1 = r.last1, len(r.buf)
	r.buf = append(r.buf, ln...)
	r.buf = append(r.buf, '\n')
	if len(r.buf) > MaxDumpBytes {
		return fmt.Errorf("%w: the dump starting at line %d is over %d MB of text", ErrDumpTooLarge, r.bufLine, MaxDumpBytes>>20)
	}
	return nil
}

// keepLastLines trims the chunk to its last two lines (between dumps, only
// a timestamp or jcmd's "<pid>:" just before a header matters).
func (r *Reader) keepLastLines() {
	if r.last2 <= 0 {
		return
	}
	r.bufLine += bytes.Count(r.buf[:r.last2], []byte{'\n'})
	n := copy(r.buf, r.buf[r.last2:])
	r.buf = r.buf[:n]
	r.last1 -= r.last2
	r.last2 = 0
}

// flush parses buf[:end] as one chunk; what follows end is dropped.
func (r *Reader) flush(end int) {
	chunk := r.buf[:end]
	first := r.bufLine
	// The dumps point into the chunk: it is never reused.
	r.buf = make([]byte, 0, min(max(cap(r.buf)/2, 4096), MaxDumpBytes))
	r.last1, r.last2, r.runStart, r.runBytes, r.textPID, r.nameBytes, r.tailEnd = -1, -1, -1, 0, -1, -1, -1
	if len(chunk) == 0 {
		return
	}
	s := unsafe.String(unsafe.SliceData(chunk), len(chunk))
	var ds []*Dump
	if r.mode == modeText {
		ds, _ = parseThreadDumpText(s)
	} else {
		ds = parseHotSpot(s)
	}
	shiftLines(ds, first-1)
	r.pending = append(r.pending, ds...)
}

// cutAt ends the chunk at end and carries the lines from carry on into the
// next one.
func (r *Reader) cutAt(end, carry int) error {
	rest := append([]byte(nil), r.buf[carry:]...)
	restLine := r.bufLine + bytes.Count(r.buf[:carry], []byte{'\n'})
	r.flush(end)
	r.bufLine = restLine
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		r.last2, r.last1 = r.last1, len(r.buf)
		r.buf = append(r.buf, rest[:i+1]...)
		rest = rest[i+1:]
	}
	return nil
}

// hotspotLine feeds one line of HotSpot text to the splitter.
func (r *Reader) hotspotLine(ln []byte) error {
	if r.state == stDump || r.state == stTail {
		// A thread name is printed raw, so it may hold whole lines of dump
		// syntax, a header or a trailer among them. As the parser does
		// (names.go), a quoted line that completes no header opens a name
		// that runs to the line that completes one: no cut inside it.
		if r.nameBytes >= 0 {
			if err := r.appendLine(ln); err != nil {
				return err
			}
			r.nameBytes += len(ln) + 1
			if closesHeader(ln) || r.nameBytes > maxNameBytes {
				r.nameBytes = -1
			}
			return nil
		}
		if len(ln) > 1 && ln[0] == '"' && !quotedHeader(ln) && !bytes.HasSuffix(bytes.TrimSuffix(ln, []byte{'\r'}), []byte("\":")) {
			r.nameBytes = 0
			r.state = stDump
			r.runStart, r.runBytes = -1, 0
			return r.appendLine(ln)
		}
		if r.state == stTail && quotedHeader(ln) {
			// More threads after a trailer: the dump (or a headerless
			// one) goes on, and the parser sorts it out.
			r.state = stDump
			r.runStart, r.runBytes = -1, 0
		}
	}
	t := bytes.TrimLeft(ln, " \t")
	// Inside a dump, a "Full thread dump" line that closes a thread
	// header ends a multi-line name whose first line was read as a
	// header: the parser reads it so (hotspot.go, danglingClose), and the
	// dump is not cut there.
	if bytes.HasPrefix(t, []byte("Full thread dump")) && !(r.state != stOutside && ln[0] != '"' && closesHeader(ln)) {
		// Keep the timestamp and jcmd "<pid>:" lines just before the
		// header with the new dump.
		carry := len(r.buf)
		for _, s := range []int{r.last1, r.last2} {
			if s < 0 || s != carry-lineLen(r.buf, s) {
				break
			}
			if !preambleLine(r.buf[s:carry]) {
				break
			}
			carry = s
		}
		end := carry
		if r.state == stOutside {
			end = 0
		}
		if err := r.cutAt(end, carry); err != nil {
			return err
		}
		r.state = stDump
		r.sinceThread = 0
		return r.appendLine(ln)
	}
	switch r.state {
	case stOutside:
		if quotedHeader(ln) {
			r.state = stDump // thread lines without a header
			r.sinceThread = 0
			return r.appendLine(ln)
		}
		if r.ndumps == 0 && len(r.pending) == 0 && r.foreign == "" {
			r.foreign = foreignLine(ln)
		}
		if err := r.appendLine(ln); err != nil {
			return err
		}
		r.keepLastLines()
		return nil
	case stDump:
		start := len(r.buf)
		if err := r.appendLine(ln); err != nil {
			return err
		}
		if bytes.HasPrefix(t, []byte("JNI global ref")) {
			r.state = stTail
			r.tailIdles, r.tailEnd = r.idles, len(r.buf)
			r.runStart, r.runBytes = len(r.buf), 0
			return nil
		}
		if len(ln) > 0 && ln[0] == '"' {
			r.sinceThread = 0
		}
		r.sinceThread += len(ln) + 1
		if r.sinceThread > threadLimit {
			// No stack is that long: the trailer was lost, and indented
			// log lines (exception traces) follow.
			r.state = stOutside
			return r.cutAt(len(r.buf), len(r.buf))
		}
		if dumpLine(ln, t) {
			r.runStart, r.runBytes = -1, 0
			return nil
		}
		if r.runStart < 0 {
			r.runStart = start
		}
		r.runBytes += len(ln) + 1
		if r.runBytes > runLimit {
			// The dump lost its trailer and a log goes on after it.
			r.state = stOutside
			return r.cutAt(r.runStart, len(r.buf))
		}
		return nil
	case stTail:
		if err := r.appendLine(ln); err != nil {
			return err
		}
		if bytes.HasPrefix(t, []byte("Found one Java-level deadlock:")) {
			r.state = stDeadlock
			return nil
		}
		r.runBytes += len(ln) + 1
		if r.runBytes > tailLimit {
			r.state = stOutside
			return r.cutAt(r.runStart, len(r.buf))
		}
		return nil
	default: // stDeadlock
		if err := r.appendLine(ln); err != nil {
			return err
		}
		if bytes.HasPrefix(t, []byte("Found ")) && bytes.Contains(t, []byte("deadlock")) && !bytes.HasPrefix(t, []byte("Found one Java-level deadlock:")) {
			r.state = stTail
			r.tailIdles, r.tailEnd = r.idles, len(r.buf)
			r.runStart, r.runBytes = len(r.buf), 0
		}
		return nil
	}
}

// textLine feeds one line of Thread.dump_to_file text: a dump starts at a
// line holding only the pid that an RFC 3339 time follows.
func (r *Reader) textLine(ln []byte) error {
	start := len(r.buf)
	if err := r.appendLine(ln); err != nil {
		return err
	}
	prev := r.textPID
	r.textPID = -1
	trimmed := bytes.TrimSpace(ln)
	if prev >= 0 {
		if _, err := time.Parse(time.RFC3339Nano, string(trimmed)); err == nil && prev > 0 {
			return r.cutAt(prev, prev)
		}
	}
	if len(trimmed) > 0 && len(bytes.Trim(trimmed, "0123456789")) == 0 {
		r.textPID = start
	}
	return nil
}

// lineLen is the length, newline included, of the line starting at s.
func lineLen(b []byte, s int) int {
	return bytes.IndexByte(b[s:], '\n') + 1
}

// preambleLine reports whether a line (newline included) may precede a
// header and belong to its dump: a timestamp, jcmd's "<pid>:", or blank.
func preambleLine(b []byte) bool {
	s := strings.TrimSpace(unsafe.String(unsafe.SliceData(b), len(b)))
	return s == "" || isTimestampLine(s) || isPIDPreamble(s)
}

// quotedHeader reports whether a line is a thread header (which opens a dump
// even without a "Full thread dump" line).
func quotedHeader(ln []byte) bool {
	if len(ln) < 2 || ln[0] != '"' {
		return false
	}
	s := strings.TrimSuffix(unsafe.String(unsafe.SliceData(ln), len(ln)), "\r")
	q := strings.LastIndexByte(s, '"')
	if i := strings.Index(s, "\" Id="); i > 0 && strings.Contains(s, " owned by \"") {
		q = i
	}
	return q > 0 && looksLikeHeaderRest(s[q+1:])
}

// closesHeader reports whether a line ends a thread name: its last quote
// is followed by a header's fields.
func closesHeader(ln []byte) bool {
	s := strings.TrimSuffix(unsafe.String(unsafe.SliceData(ln), len(ln)), "\r")
	q := strings.LastIndexByte(s, '"')
	return q >= 0 && looksLikeHeaderRest(s[q+1:])
}

// dumpLine reports whether a line can be part of a HotSpot dump; runs of
// other lines (log output) end a dump that lost its trailer.
func dumpLine(ln, t []byte) bool {
	if len(t) == 0 || ln[0] == '\t' || ln[0] == ' ' || ln[0] == '"' || t[0] == '\r' {
		return true
	}
	for _, p := range []string{"0x", "}", "_java_thread_list", "_to_delete_list", "Threads class SMR", "Found ", "=====", "Java stack information", "JNI "} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}

// foreignLine names a foreign dump format a line belongs to, or "".
func foreignLine(ln []byte) string {
	s := unsafe.String(unsafe.SliceData(ln), len(ln))
	if strings.HasPrefix(s, "----- pid ") || strings.HasPrefix(s, "goroutine 1 [") || strings.HasPrefix(s, "Thread 1 (LWP ") {
		return foreignFormat("\n" + s)
	}
	return foreignFormat(s)
}

// shiftLines turns a chunk's line numbers into the input's.
func shiftLines(ds []*Dump, off int) {
	if off == 0 {
		return
	}
	for _, d := range ds {
		d.StartLine += off
		for i := range d.UnknownSamples {
			d.UnknownSamples[i].Line += off
		}
		for i := range d.Threads {
			t := &d.Threads[i]
			if t.Line > 0 {
				t.Line += off
			}
			if t.Mounted != nil && t.Mounted.Line > 0 {
				t.Mounted.Line += off
			}
		}
		for i, w := range d.Warnings {
			d.Warnings[i] = shiftLineRefs(w, off)
		}
	}
}

// shiftLineRefs adds off to every "line N" in a warning.
func shiftLineRefs(w string, off int) string {
	const key = "line "
	var b strings.Builder
	for {
		i := strings.Index(w, key)
		if i < 0 {
			break
		}
		j := i + len(key)
		k := j
		for k < len(w) && w[k] >= '0' && w[k] <= '9' {
			k++
		}
		b.WriteString(w[:j])
		if k > j {
			b.WriteString(itoa(int(parseInt(w[j:k])) + off))
		}
		w = w[k:]
	}
	if b.Len() == 0 {
		return w
	}
	b.WriteString(w)
	return b.String()
}

// utf16Reader transcodes UTF-16 to UTF-8 as a stream.
type utf16Reader struct {
	src  io.Reader
	big  bool
	in   []byte // undecoded bytes (an odd byte, a high surrogate)
	out  []byte
	done bool
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.done {
			return 0, io.EOF
		}
		if cap(u.in) == 0 {
			u.in = make([]byte, 0, 32<<10)
		}
		n, err := u.src.Read(u.in[len(u.in):cap(u.in)])
		u.in = u.in[:len(u.in)+n]
		if err != nil {
			if err != io.EOF {
				return 0, err
			}
			u.done = true
		}
		units := make([]uint16, len(u.in)/2)
		for i := range units {
			if u.big {
				units[i] = uint16(u.in[2*i])<<8 | uint16(u.in[2*i+1])
			} else {
				units[i] = uint16(u.in[2*i+1])<<8 | uint16(u.in[2*i])
			}
		}
		keep := len(u.in) % 2
		// A high surrogate at the end waits for its pair.
		if !u.done && len(units) > 0 && utf16.IsSurrogate(rune(units[len(units)-1])) && units[len(units)-1] < 0xdc00 {
			units = units[:len(units)-1]
			keep += 2
		}
		for _, c := range utf16.Decode(units) {
			u.out = utf8.AppendRune(u.out, c)
		}
		u.in = append(u.in[:0], u.in[len(u.in)-keep:]...)
		if u.done {
			u.in = u.in[:0]
		}
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	if len(u.out) == 0 {
		u.out = u.out[:0:0]
	}
	return n, nil
}
