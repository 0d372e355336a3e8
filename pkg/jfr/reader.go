package jfr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// DefaultMaxChunkSize is the largest chunk a Reader accepts unless told
// otherwise. The JVM's default chunk size is 12 MB.
const DefaultMaxChunkSize = 512 << 20

// ErrNotJFR is returned (wrapped) when a stream does not start with a chunk
// header.
var ErrNotJFR = errors.New("not a JFR recording")

// Options select what a Reader returns.
type Options struct {
	// EventTypes lists the event type names to return, e.g.
	// "jdk.JavaMonitorEnter"; events of other types are skipped by size
	// without being decoded. Empty means every event type.
	EventTypes []string
	// MaxChunkSize bounds the memory one chunk may take; 0 means
	// DefaultMaxChunkSize. Larger chunks are refused with an error.
	MaxChunkSize int64
}

// Reader streams the events of a JFR recording, chunk by chunk. It holds one
// chunk in memory at a time (plus whatever chunks the caller's events still
// refer to).
type Reader struct {
	r      *countingReader
	opts   Options
	wanted map[string]bool

	c    *chunk
	prev *chunk // the chunk before c, see chunk.previous
	// Event types to decode in the current chunk, by type id: a slice
	// for the small ids the JVM assigns (every event in the chunk is
	// looked up here, wanted or not), a map for any others.
	want      []*typeDesc
	wantLarge map[int64]*typeDesc
	index     int
	lastMD    *metadata
	// lastMDBody is the previous metadata event after its id: chunks of
	// one recording repeat it, so it is parsed once.
	lastMDBody []byte
	err        error
	stopped    bool // an unfinished chunk ends the stream
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewReader returns a Reader of the recording in r.
func NewReader(r io.Reader, opts Options) *Reader {
	if opts.MaxChunkSize <= 0 {
		opts.MaxChunkSize = DefaultMaxChunkSize
	}
	rd := &Reader{r: &countingReader{r: r}, opts: opts}
	if len(opts.EventTypes) > 0 {
		rd.wanted = make(map[string]bool, len(opts.EventTypes))
		for _, t := range opts.EventTypes {
			rd.wanted[t] = true
		}
	}
	return rd
}

// Chunk describes the chunk of the event Next returned last.
func (r *Reader) Chunk() ChunkInfo {
	if r.c == nil {
		return ChunkInfo{}
	}
	return r.c.info
}

// Next returns the next selected event, io.EOF after the last one, or an
// error for damaged input. The events before the damage have been returned
// already; the error (a *FormatError for format violations) names the
// offset. After an error Next keeps returning it.
func (r *Reader) Next() (*Event, error) {
	for r.err == nil {
		if r.c == nil {
			if r.stopped {
				r.err = io.EOF
				break
			}
			if err := r.readChunk(); err != nil {
				r.err = err
				break
			}
		}
		ev, err := r.nextInChunk()
		if err != nil {
			r.err = err
			break
		}
		if ev != nil {
			return ev, nil
		}
		r.prev, r.c = r.c, nil
	}
	return nil, r.err
}

// readChunk reads the next chunk into r.c, ready for nextInChunk. It runs
// in steps, each of which can end the stream with an error: the header is
// checked before the chunk is read, the events are framed before the
// metadata is looked for (the framing finds it), and the metadata is
// parsed before the checkpoints (whose pools it describes).
func (r *Reader) readChunk() error {
	start := r.r.n
	var hdr [headerSize]byte
	h, err := r.readChunkHeader(start, &hdr)
	if err != nil {
		return err
	}
	buf, err := readGrowing(r.r, hdr[:], int(h.size))
	if err != nil {
		return &FormatError{Offset: start + int64(len(buf)), Msg: fmt.Sprintf("chunk of %d bytes is truncated after %d: %v", h.size, len(buf), err)}
	}
	c, err := r.newChunk(start, &hdr, h, buf)
	if err != nil {
		return err
	}
	metaAt, cps := c.frameEvents()
	if err := r.chunkMetadata(c, metaAt); err != nil {
		return err
	}
	if err := c.readCheckpoints(cps); err != nil {
		return err
	}
	r.selectTypes(c.meta)
	c.pos = headerSize
	if r.prev != nil {
		r.prev.prev = nil // keep one chunk back, not the whole stream
		c.prev = r.prev
	}
	r.c = c
	return nil
}

// chunkHeader holds the fields of a chunk header that readChunk checks
// before it reads the rest of the chunk.
type chunkHeader struct {
	major, minor uint16
	size         int64
	state        byte
}

// readChunkHeader reads the header of the chunk at offset start into hdr
// and refuses what cannot be read: a stream that is not JFR (only for the
// first chunk: after one, a missing header is damage, and end of input is
// the end of the recording), another format version, a chunk the JVM is
// rewriting, and sizes that cannot be or are over the limit.
func (r *Reader) readChunkHeader(start int64, hdr *[headerSize]byte) (chunkHeader, error) {
	n, err := io.ReadFull(r.r, hdr[:])
	if err == io.EOF {
		if r.index == 0 {
			return chunkHeader{}, fmt.Errorf("jfr: empty input: %w", ErrNotJFR)
		}
		return chunkHeader{}, io.EOF
	}
	if n < 4 || !bytes.Equal(hdr[:4], []byte("FLR\x00")) {
		if r.index == 0 {
			return chunkHeader{}, fmt.Errorf("jfr: no FLR magic at the start: %w", ErrNotJFR)
		}
		return chunkHeader{}, &FormatError{Offset: start, Msg: "no chunk header (FLR magic) after the previous chunk"}
	}
	if err != nil {
		return chunkHeader{}, &FormatError{Offset: start + int64(n), Msg: "truncated chunk header"}
	}
	h := chunkHeader{
		major: binary.BigEndian.Uint16(hdr[4:]),
		minor: binary.BigEndian.Uint16(hdr[6:]),
		size:  int64(binary.BigEndian.Uint64(hdr[8:])),
		state: hdr[fileStateOffset],
	}
	if h.major != 2 {
		return chunkHeader{}, &FormatError{Offset: start + 4, Msg: fmt.Sprintf("JFR format version %d.%d is not supported (2.x is: JDK 11+ and 8u262+)", h.major, h.minor)}
	}
	if h.state == fileStateUpdating {
		return chunkHeader{}, &FormatError{Offset: start + fileStateOffset, Msg: "chunk header is being rewritten by the JVM; read again"}
	}
	if hdr[67]&4 != 0 {
		// Start ticks relative to the previous event: no JVM we know
		// writes them, and decoding them needs every event, even skipped
		// ones, so refuse rather than return wrong times.
		return chunkHeader{}, &FormatError{Offset: start + 67, Msg: "compressed ticks are not supported"}
	}
	if h.size < headerSize {
		return chunkHeader{}, &FormatError{Offset: start + 8, Msg: fmt.Sprintf("chunk size %d is smaller than its header", h.size)}
	}
	if h.size > r.opts.MaxChunkSize {
		return chunkHeader{}, &FormatError{Offset: start + 8, Msg: fmt.Sprintf("chunk size %d exceeds the %d byte limit", h.size, r.opts.MaxChunkSize)}
	}
	return h, nil
}

// newChunk makes the chunk of buf, read at offset start, with its clock
// and ChunkInfo from the header. The chunk counts as read from here on,
// whatever the later steps find: it has an index, and an unfinished one
// ends the stream.
func (r *Reader) newChunk(start int64, hdr *[headerSize]byte, h chunkHeader, buf []byte) (*chunk, error) {
	c := &chunk{
		buf:     buf,
		pools:   make(map[*typeDesc]map[int64]int),
		strings: make(map[*typeDesc]map[int64]string),
		decoded: make(map[*typeDesc]map[int64]value),
	}
	c.startNanos = int64(binary.BigEndian.Uint64(hdr[32:]))
	durNanos := int64(binary.BigEndian.Uint64(hdr[40:]))
	c.startTicks = int64(binary.BigEndian.Uint64(hdr[48:]))
	tps := int64(binary.BigEndian.Uint64(hdr[56:]))
	if tps <= 0 {
		return nil, &FormatError{Offset: start + 56, Msg: fmt.Sprintf("ticks per second %d", tps)}
	}
	c.nsPerTick = 1e9 / float64(tps)
	c.info = ChunkInfo{
		Index: r.index, Offset: start, Size: h.size, Major: int(h.major), Minor: int(h.minor),
		Start: time.Unix(0, c.startNanos).UTC(), Duration: time.Duration(durNanos),
		TicksPerSecond: tps, Unfinished: h.state != 0,
	}
	r.index++
	if h.state != 0 {
		// The rest of the file is this chunk's unflushed tail, not another
		// chunk.
		r.stopped = true
	}
	return c, nil
}

// frameEvents frames every event of the chunk once: this finds the
// checkpoints wherever the delta chain would have led and tells how far
// the chunk is intact (c.end; c.scanErr says what stopped the framing
// short). It returns where the metadata events start, and where each
// checkpoint event starts and ends.
func (c *chunk) frameEvents() (metaAt []int, cps [][2]int) {
	buf := c.buf
	d := c.dec(headerSize)
	c.end = headerSize
	for d.pos < len(buf) {
		at := d.pos
		sz := d.varint()
		typ := d.varint()
		if d.err == nil && (sz < 2 || sz > int64(len(buf)-at)) {
			d.fail("event size %d does not fit the chunk (%d bytes left)", sz, len(buf)-at)
		}
		if d.err != nil {
			d.err.(*FormatError).Offset = c.info.Offset + int64(at)
			c.scanErr = d.err
			break
		}
		switch typ {
		case typeMetadata:
			metaAt = append(metaAt, at)
		case typeCheckpoint:
			cps = append(cps, [2]int{at, at + int(sz)})
		}
		d.pos = at + int(sz)
		c.end = d.pos
	}
	return metaAt, cps
}

// chunkMetadata sets c.meta from one of the metadata events at metaAt.
// The header's metadata offset is the newest description of the types;
// it falls back to the last one found when that is damaged. Chunks of one
// recording repeat their metadata, and recordings of one JVM share it, so
// the body is parsed only when neither the previous chunk's nor the
// process-wide cache has it.
func (r *Reader) chunkMetadata(c *chunk, metaAt []int) error {
	start, buf := c.info.Offset, c.buf
	_, _, _, _, metaOff := c.header()
	mpos := -1
	for _, at := range metaAt {
		if int64(at) == metaOff {
			mpos = at
		}
	}
	if mpos < 0 && len(metaAt) > 0 {
		mpos = metaAt[len(metaAt)-1]
	}
	if mpos < 0 {
		if c.scanErr != nil {
			return c.scanErr
		}
		return &FormatError{Offset: start + 24, Msg: "chunk has no metadata event"}
	}
	msize := d0size(buf, mpos)
	md := c.dec(mpos)
	md.b = buf[:msize]
	md.varint()
	md.varint()
	mdStart := md.pos
	md.varint() // start
	md.varint() // duration
	md.varint() // metadata id: not trusted across concatenated recordings
	body := buf[md.pos:msize]
	switch {
	case md.err == nil && r.lastMD != nil && bytes.Equal(r.lastMDBody, body):
		c.meta = r.lastMD
	case md.err == nil && cachedMetadata(body) != nil:
		c.meta = cachedMetadata(body)
		r.lastMD, r.lastMDBody = c.meta, append(r.lastMDBody[:0], body...)
	default:
		md.pos = mdStart
		m, err := parseMetadata(md)
		if err != nil {
			var fe *FormatError
			if errors.As(err, &fe) {
				return err
			}
			return &FormatError{Offset: start + int64(mpos), Msg: err.Error()}
		}
		c.meta = m
		r.lastMD, r.lastMDBody = m, append(r.lastMDBody[:0], body...)
		storeMetadata(body, m)
	}
	return nil
}

// readCheckpoints reads the constant pools of the checkpoint events cps
// (start and end of each, from frameEvents); the first damaged one ends
// the chunk.
func (c *chunk) readCheckpoints(cps [][2]int) error {
	for _, cp := range cps {
		d := c.dec(cp[0])
		d.b = c.buf[:cp[1]]
		d.varint()
		d.varint()
		c.readCheckpoint(d, cp[1])
		if d.err != nil {
			return d.err
		}
	}
	return nil
}

// selectTypes indexes the event types of meta that the Reader returns,
// by type id, for nextInChunk to look every event up in.
func (r *Reader) selectTypes(meta *metadata) {
	r.want, r.wantLarge = r.want[:0], nil
	for id, t := range meta.types {
		if !t.event || (r.wanted != nil && !r.wanted[t.name]) {
			continue
		}
		if id >= 0 && id < maxDenseTypeID {
			for int64(len(r.want)) <= id {
				r.want = append(r.want, nil)
			}
			r.want[id] = t
			continue
		}
		if r.wantLarge == nil {
			r.wantLarge = make(map[int64]*typeDesc)
		}
		r.wantLarge[id] = t
	}
}

// d0size returns where the event at pos ends (its framing was checked).
func d0size(buf []byte, pos int) int {
	d := decoder{b: buf, pos: pos}
	return pos + int(d.varint())
}

// readGrowing reads until buf holds size bytes. It grows the buffer as data
// arrives, so a forged size on a short stream costs no more than the stream.
func readGrowing(r io.Reader, head []byte, size int) ([]byte, error) {
	initial := size
	if initial > 1<<20 {
		initial = 1 << 20
	}
	buf := make([]byte, len(head), initial)
	copy(buf, head)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			next := 2 * cap(buf)
			if next > size {
				next = size
			}
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < size {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

func (r *Reader) nextInChunk() (*Event, error) {
	c := r.c
	b := c.buf
	for c.pos < c.end {
		at := c.pos
		d := decoder{b: b[:c.end], pos: at, base: c.info.Offset}
		sz := d.varint()
		typ := d.varint()
		next := at + int(sz)
		c.pos = next
		var t *typeDesc
		if uint64(typ) < uint64(len(r.want)) {
			t = r.want[typ]
		} else if r.wantLarge != nil {
			t = r.wantLarge[typ]
		}
		if t == nil {
			continue
		}
		d.b = b[:next]
		ev := r.newEvent(t, c)
		c.decodeFields(&d, t, ev.vals)
		if d.err != nil {
			return nil, d.err
		}
		if t.iStart >= 0 {
			ev.Start = c.ticksToTime(ev.vals[t.iStart].i)
		}
		if t.iDuration >= 0 {
			ev.Duration = time.Duration(c.ticksToNanos(ev.vals[t.iDuration].i))
		}
		if t.iThread >= 0 {
			ev.Thread = c.thread(t.fields[t.iThread].typ, ev.vals[t.iThread])
		}
		if t.iStack >= 0 {
			ev.Stack = c.stack(t.fields[t.iStack].typ, ev.vals[t.iStack])
		}
		return ev, nil
	}
	if c.scanErr != nil {
		return nil, c.scanErr
	}
	return nil, nil
}

// maxDenseTypeID bounds the type ids looked up by slice; the JVM numbers
// its types from a few hundred up, a forged id goes to the map.
const maxDenseTypeID = 1 << 14

// Events and their values are carved from per-chunk slabs: one allocation
// per slab instead of one per event. A slab lives as long as any of its
// events, which is small next to the chunk bytes an Event keeps anyway.
const (
	eventSlab = 64
	valueSlab = 512
)

func (r *Reader) newEvent(t *typeDesc, c *chunk) *Event {
	if len(c.events) == 0 {
		c.events = make([]Event, eventSlab)
	}
	ev := &c.events[0]
	c.events = c.events[1:]
	n := len(t.fields)
	if n > valueSlab/8 {
		ev.vals = make([]value, n)
	} else {
		if cap(c.values)-len(c.values) < n {
			c.values = make([]value, 0, valueSlab)
		}
		l := len(c.values)
		c.values = c.values[:l+n]
		ev.vals = c.values[l : l+n : l+n]
	}
	ev.Type, ev.typ, ev.c = t.name, t, c
	return ev
}

// clampMul multiplies without wrapping around, for sentinel values such as
// Long.MIN_VALUE timeouts.
func clampMul(v, m int64) int64 {
	if m == 1 || v == 0 {
		return v
	}
	if v > math.MaxInt64/m {
		return math.MaxInt64
	}
	if v < math.MinInt64/m {
		return math.MinInt64
	}
	return v * m
}
