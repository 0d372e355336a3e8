// Package record writes and reads ctprof recordings: every Snapshot of a
// live run, appended as it is taken, so `ctprof report` can replay the run
// through the same Aggregator later.
//
// The file is crash-safe: a magic line and a header frame, then one frame
// per snapshot, each a length, a CRC-32C and a flate-compressed payload
// written with a single write. A run killed mid-write leaves at most a
// partial last frame, which the reader reports and skips. Snapshots are
// delta-encoded against the previous frame, with a keyframe every
// KeyframeEvery frames so that damage stays local (docs/recording.md).
package record

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// FormatVersion is the version this ctprof writes and the newest it reads.
// Version 2 adds each futex wait's expected value and timeout flag;
// version 3 the waits and GC pauses a JVM recorded (JFR, attach --jfr);
// version 4 the host's CPU time, its biggest CPU consumers and the
// target's cgroup quotas (hostcpu.go); version 5 what each futex's lock
// said of its holder (holder.go); version 6 the native user stacks of
// the threads blocked in a system call (stack.go); version 7 what a tick
// said of a stopped process or a JVM that did not answer (hung.go);
// version 8 the clients on the target's Unix sockets (unixconns.go);
// version 9 each blocked thread's stack pointer and program counter at its
// system call (the native wait rule tells waits on one word apart by
// them); version 10 each thread's process in a tree of processes, what
// the epoll set it waits on watches, and each native frame's file and
// line; version 11 the system call a mutex's holder held it across;
// version 12 the file a thread blocked in a file-lock call waits to lock.
// Older files are still read (what they lack reads as zero or empty).
const FormatVersion = 12

// Magic starts every recording; the version byte follows it.
const Magic = "CTPROF-RECORDING\n"

// KeyframeEvery is how often a frame is self-contained.
const KeyframeEvery = 60

// Frame types.
const (
	frameHeader   = 'H'
	frameKey      = 'K'
	frameDelta    = 'D'
	frameOverhead = 8 // length and checksum
	// maxFrame bounds a frame's stated length: a hostile or damaged length
	// must not make the reader allocate gigabytes.
	maxFrame = 256 << 20
	// maxDumpText bounds the raw thread dump a snapshot records: 128 MB is
	// a dump of some 50,000 threads with deep stacks (4,000 threads print
	// about 2.5 MB). A larger dump is not recorded (DroppedDumps).
	maxDumpText = 128 << 20
	// maxPayload bounds what one frame decompresses to: the dump text plus
	// the thread tables (about 100 bytes per thread before compression, so
	// 64 MB is over 500,000 threads). A frame past it is damage: the reader
	// skips it instead of inflating a compression bomb.
	maxPayload = maxDumpText + 64<<20
)

// crcTable is made on first use: building it costs every ctprof command
// 0.15 ms at start, and most never read or write a recording.
var crcTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// Errors callers act on.
var (
	// ErrNotRecording: the file is not a ctprof recording.
	ErrNotRecording = errors.New("not a ctprof recording")
	// ErrNewerFormat: the recording was written by a newer ctprof.
	ErrNewerFormat = errors.New("recording written by a newer ctprof")
)

// Header describes the recorded run.
type Header struct {
	// Version is the ctprof version that wrote the file.
	Version  string          `json:"ctprof_version"`
	Start    time.Time       `json:"start"`
	Target   snapshot.Target `json:"target"`
	Interval time.Duration   `json:"interval_ns"`
	Port     int             `json:"port,omitempty"`
	Host     string          `json:"host,omitempty"`
}

// Writer appends snapshots to a recording.
type Writer struct {
	f       *os.File
	path    string
	size    int64 // bytes of complete frames
	frames  int
	prev    threadState
	strings map[string]uint64
	zbuf    bytes.Buffer
	zw      *flate.Writer
	failed  error
	// version is the format written: FormatVersion but in tests.
	version byte
	// DroppedDumps counts snapshots whose parsed dump had no raw text to
	// record (a replay cannot re-create those dumps).
	DroppedDumps int
}

// Create starts a recording at path; an existing file is not overwritten.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists: choose another name or remove it first", path)
		}
		return nil, fmt.Errorf("create recording: %w", err)
	}
	zw, _ := flate.NewWriter(nil, flate.BestSpeed)
	w := &Writer{f: f, path: path, zw: zw, version: FormatVersion}
	hb, err := json.Marshal(h)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create recording: %w", err)
	}
	head := append([]byte(Magic), FormatVersion)
	if _, err := f.Write(head); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	w.size = int64(len(head))
	if err := w.writeFrame(frameHeader, hb); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Append adds one snapshot. After a write error (a full disk) the file is
// cut back to its last complete frame, stays readable, and every further
// Append returns the error.
func (w *Writer) Append(s *snapshot.Snapshot) error {
	if w.failed != nil {
		return w.failed
	}
	if s.Dump != nil && s.DumpText == nil {
		w.DroppedDumps++
	}
	if len(s.DumpText) > maxDumpText {
		// A frame the reader would refuse is not written.
		c := *s
		c.DumpText = nil
		c.Dump = nil
		s = &c
		w.DroppedDumps++
	}
	key := w.frames%KeyframeEvery == 0 || len(w.strings) > 1<<16
	if key {
		w.strings = map[string]uint64{}
		w.prev = nil
	}
	e := &encoder{strings: w.strings, version: w.version}
	w.prev = encodeSnapshot(e, s, w.prev, key)
	typ := byte(frameDelta)
	if key {
		typ = frameKey
	}
	if err := w.writeFrame(typ, e.b); err != nil {
		return err
	}
	w.frames++
	return nil
}

// writeFrame compresses payload and writes type, length, checksum and data
// with one write.
func (w *Writer) writeFrame(typ byte, payload []byte) error {
	w.zbuf.Reset()
	w.zbuf.Write(make([]byte, frameOverhead+1))
	w.zw.Reset(&w.zbuf)
	if _, err := w.zw.Write(payload); err != nil {
		return err
	}
	if err := w.zw.Close(); err != nil {
		return err
	}
	b := w.zbuf.Bytes()
	b[frameOverhead] = typ
	body := b[frameOverhead:]
	binary.LittleEndian.PutUint32(b[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(body, crcTable()))
	n, err := w.f.Write(b)
	if err != nil {
		// Leave no partial frame behind, so what was recorded stays
		// readable and nothing follows a gap.
		_ = w.f.Truncate(w.size)
		_, _ = w.f.Seek(w.size, io.SeekStart)
		w.failed = fmt.Errorf("write %s (recording stopped after %d samples): %w", w.path, w.frames, err)
		return w.failed
	}
	w.size += int64(n)
	return nil
}

// Frames is the number of snapshots written.
func (w *Writer) Frames() int { return w.frames }

// Close flushes the file to disk and closes it.
func (w *Writer) Close() error {
	syncErr := w.f.Sync()
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	if syncErr != nil && w.failed == nil {
		return fmt.Errorf("sync %s: %w", w.path, syncErr)
	}
	return nil
}

// Reader replays a recording.
type Reader struct {
	f        io.Closer
	r        *bufio.Reader
	path     string
	header   Header
	offset   int64
	prev     threadState
	strings  []string
	frames   int
	warnings []string
	done     bool
	// lost counts the frames not replayed: damaged ones, the deltas after
	// them up to the next keyframe, and a partial last frame.
	lost int
	// needKey is set after damage: deltas are skipped until a keyframe.
	needKey bool
	// moreDamage counts damage warnings past maxDamageWarnings.
	moreDamage int
	summarized bool
	// size is the file's size at Open: a hint for buffers, not a bound.
	size int64
	// inflater is reused across frames: each new one allocates its 32 KB
	// window.
	inflater io.ReadCloser
	// version is the file's format version.
	version byte
}

// Open opens a recording and reads its header.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return NewReader(f, path, size)
}

// NewReader reads a recording's header from src, which it closes on
// error. size is a hint for buffers (the file's size at Open), not a
// bound: a recording may still grow while it is read.
func NewReader(src io.ReadCloser, path string, size int64) (*Reader, error) {
	// The buffer and the first frame's piece are sized to the file (up to
	// 1 MB): a small or damaged file must not cost megabytes of zeroed
	// memory to open (the fuzzer's minimizer opens tens of thousands).
	r := &Reader{f: src, r: bufio.NewReaderSize(src, int(min(max(size, 4096), 1<<20))), path: path, size: size}
	head := make([]byte, len(Magic)+1)
	if _, err := io.ReadFull(r.r, head); err != nil || string(head[:len(Magic)]) != Magic {
		src.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrNotRecording)
	}
	if v := head[len(Magic)]; v > FormatVersion {
		src.Close()
		return nil, fmt.Errorf("%s: %w (format %d; this ctprof reads up to %d): use a newer ctprof", path, ErrNewerFormat, v, FormatVersion)
	}
	r.version = head[len(Magic)]
	r.offset = int64(len(head))
	typ, body, err := r.frame()
	if err != nil || typ != frameHeader {
		src.Close()
		if err == nil {
			err = errors.New("the first frame is not the header")
		}
		return nil, fmt.Errorf("%s: %w: %v", path, ErrNotRecording, err)
	}
	if err := json.Unmarshal(body, &r.header); err != nil {
		src.Close()
		return nil, fmt.Errorf("%s: bad header: %w", path, err)
	}
	return r, nil
}

// Header describes the recorded run.
func (r *Reader) Header() Header { return r.header }

// Warnings says what was wrong with the file (a cut-off end, a damaged
// frame), once the replay has met it.
func (r *Reader) Warnings() []string { return append([]string(nil), r.warnings...) }

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// errPartial and errDamaged tell frame's caller what kind of end it met.
var (
	errPartial = errors.New("partial frame")
	errDamaged = errors.New("damaged frame")
)

// frame reads the next frame: its type and decompressed payload.
func (r *Reader) frame() (byte, []byte, error) {
	var head [frameOverhead]byte
	n, err := io.ReadFull(r.r, head[:])
	if err == io.EOF {
		return 0, nil, io.EOF
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %d of %d header bytes", errPartial, n, frameOverhead)
	}
	length := binary.LittleEndian.Uint32(head[0:])
	sum := binary.LittleEndian.Uint32(head[4:])
	if length == 0 || length > maxFrame {
		return 0, nil, fmt.Errorf("%w: impossible length %d", errDamaged, length)
	}
	body := make([]byte, 0, min(int64(length), 1<<20, max(r.size-r.offset-frameOverhead, 64)))
	body, err = readN(r.r, body, int(length))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %d of %d bytes", errPartial, len(body), length)
	}
	// The frame's bytes are read: whatever is wrong inside it, the next
	// frame starts after it.
	r.offset += int64(frameOverhead) + int64(length)
	if crc32.Checksum(body, crcTable()) != sum {
		return 0, nil, fmt.Errorf("%w: checksum mismatch", errDamaged)
	}
	if r.inflater == nil {
		r.inflater = flate.NewReader(bytes.NewReader(body[1:]))
	} else if err := r.inflater.(flate.Resetter).Reset(bytes.NewReader(body[1:]), nil); err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errDamaged, err)
	}
	payload, over, err := readLimited(r.inflater, maxPayload, 8*len(body))
	if over {
		return 0, nil, fmt.Errorf("%w: it decompresses to more than %d MB, more than any snapshot", errDamaged, maxPayload>>20)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errDamaged, err)
	}
	return body[0], payload, nil
}

// readLimited reads r to its end into pieces allocated only as data
// arrives, and joins them only when all of it is within limit: a
// compression bomb costs at most limit bytes, never a doubling buffer
// beyond it. over says the data went past limit (the rest is not read).
//
// The first piece is sized from guess (the compressed size times a
// typical ratio), so a small frame does not cost a 64 KB piece.
func readLimited(r io.Reader, limit, guess int) (b []byte, over bool, err error) {
	var pieces [][]byte
	total := 0
	size := min(max(guess, 512), 64<<10)
	for {
		p := make([]byte, min(size, limit+1-total))
		n := 0
		var rerr error
		for n < len(p) && rerr == nil {
			var m int
			m, rerr = r.Read(p[n:])
			n += m
		}
		pieces = append(pieces, p[:n])
		total += n
		if total > limit {
			return nil, true, nil
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, false, rerr
		}
		size = min(2*size, 4<<20)
	}
	if len(pieces) == 1 {
		return pieces[0], false, nil
	}
	b = make([]byte, 0, total)
	for _, p := range pieces {
		b = append(b, p...)
	}
	return b, false, nil
}

// readN reads n bytes, growing b as data arrives rather than trusting n.
func readN(r io.Reader, b []byte, n int) ([]byte, error) {
	for len(b) < n {
		chunk := min(n-len(b), 1<<20)
		start := len(b)
		b = append(b, make([]byte, chunk)...)
		m, err := io.ReadFull(r, b[start:])
		b = b[:start+m]
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// Next returns the next snapshot, or io.EOF at the end of the recording.
// Damage does not end the replay: a damaged frame (a checksum mismatch, an
// undecodable or oversized payload) is skipped with a warning, and so are
// the delta frames after it up to the next keyframe, which cannot be
// decoded without it. Only an impossible frame length (the next frame
// cannot be found) or a partial last frame ends it. Warnings then says
// what was lost.
func (r *Reader) Next() (*snapshot.Snapshot, error) {
	for !r.done {
		at := r.offset
		typ, payload, err := r.frame()
		if err == io.EOF {
			break
		}
		if err == nil && typ != frameKey && typ != frameDelta {
			err = fmt.Errorf("%w: unknown frame type %q", errDamaged, typ)
		}
		if err != nil {
			r.lost++
			r.needKey = true
			switch {
			case errors.Is(err, errPartial):
				r.done = true
				r.damage(fmt.Sprintf("recording ends with a partial frame at byte %d: the run was cut off; %d samples replayed", at, r.frames))
			case r.offset == at:
				// The length itself is wrong: nothing after it can be found.
				r.done = true
				r.damage(fmt.Sprintf("recording damaged at byte %d (%v): replay stops there; %d samples replayed", at, err, r.frames))
			default:
				r.damage(fmt.Sprintf("recording damaged at byte %d (%v): frame skipped, and the samples after it up to the next keyframe", at, err))
			}
			continue
		}
		if typ == frameKey {
			r.strings, r.prev = nil, nil
			r.needKey = false
		} else if r.needKey || (r.prev == nil && r.frames > 0) {
			r.lost++ // a delta without its keyframe
			r.needKey = true
			continue
		}
		d := &decoder{b: payload, strings: &r.strings, version: r.version}
		s, next := decodeSnapshot(d, r.prev, typ == frameKey)
		if derr := d.done(); derr != nil {
			r.lost++
			r.needKey = true
			r.damage(fmt.Sprintf("recording damaged at byte %d (%v: %v): frame skipped, and the samples after it up to the next keyframe", at, errDamaged, derr))
			continue
		}
		r.prev = next
		r.frames++
		return s, nil
	}
	if !r.done {
		r.done = true
	}
	if r.lost > 0 && !r.summarized {
		r.summarized = true
		if r.moreDamage > 0 {
			r.warnings = append(r.warnings, fmt.Sprintf("%d more damaged frames not listed", r.moreDamage))
		}
		r.warnings = append(r.warnings, fmt.Sprintf("%s damaged or cut off; the summary covers %d samples", plural(r.lost, "frame"), r.frames))
	}
	return nil, io.EOF
}

// maxDamageWarnings bounds the per-frame warnings of a badly damaged file.
const maxDamageWarnings = 10

func (r *Reader) damage(w string) {
	if len(r.warnings) < maxDamageWarnings {
		r.warnings = append(r.warnings, w)
	} else {
		r.moreDamage++
	}
}

// Lost is the number of frames the replay could not use.
func (r *Reader) Lost() int { return r.lost }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
