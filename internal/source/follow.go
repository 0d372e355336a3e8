package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Timing of a followed input. A JVM writes a dump in milliseconds; the
// quiet second after its trailer is what tells the dump reader it is
// complete (threaddump.ErrInputIdle), so a dump shows one to two seconds
// after it is written.
const (
	// followIdle is the least time between two ErrInputIdle.
	followIdle = time.Second
	// followPoll is how often a file at its end is checked for more,
	// rotation and truncation: a stat of the path and of the open file.
	followPoll = 100 * time.Millisecond
	// pipeChunk is the size of a read from a followed pipe, and
	// pipeChunks how many read ahead of the dump reader at most.
	pipeChunk  = 64 << 10
	pipeChunks = 4
)

// Followed is a log of thread dumps that is still being written (kill -3
// into a JVM's stdout, docker logs -f): its dumps as they complete. Next
// waits for the next dump until ctx ends; then the dump reader sees the
// end of its input, and Next returns what had come (a dump whose trailer
// came) and then io.EOF. A pipe ends Next with io.EOF when it closes.
type Followed struct {
	*Dumps
	in followInput
}

type followInput interface {
	io.Reader
	setContext(context.Context)
	notes() []string
}

// Follow opens name (StdinName: standard input) to be followed like
// tail -F: it reads what the file holds, then what is appended; a new file
// at the path (rotation) is read from its start once the old one is read
// to its end, and a file cut below what was read (truncation) is read again
// from its start.
func Follow(name string, stdin io.Reader) (*Followed, error) {
	var in followInput
	display := name
	if name == StdinName {
		display = "standard input"
		in = newPipeTail(stdin)
	} else {
		t, err := openFileTail(name)
		if err != nil {
			return nil, err
		}
		in = t
	}
	return &Followed{
		Dumps: &Dumps{r: newDumpReader(in), closer: readerCloser{in}, source: name, name: display},
		in:    in,
	}, nil
}

// Next returns the next complete dump, waiting for it until ctx ends.
func (f *Followed) Next(ctx context.Context) (*snapshot.Snapshot, error) {
	f.in.setContext(ctx)
	return f.Dumps.Next(ctx)
}

// Warnings adds to the dump reader's what happened to the file: rotations
// and truncations.
func (f *Followed) Warnings() []string {
	return append(f.Dumps.Warnings(), prefixed(f.name, f.in.notes())...)
}

type readerCloser struct{ r io.Reader }

func (c readerCloser) Close() error {
	if cl, ok := c.r.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// fileTail reads a growing file by path.
type fileTail struct {
	path string
	ctx  context.Context

	f   *os.File
	dev uint64
	ino uint64
	off int64

	lastIdle time.Time
	// lastByte is the last byte given; a file switched after a line cut
	// short gets a newline first, so that the next file's first line is
	// not glued to it.
	lastByte byte
	newline  bool

	rotations, truncations int
}

func openFileTail(path string) (*fileTail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("follow: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory, not a log file", path)
	}
	t := &fileTail{path: path, ctx: context.Background(), f: f, lastByte: '\n', lastIdle: time.Now()}
	t.dev, t.ino = fileID(st)
	return t, nil
}

func fileID(st os.FileInfo) (dev, ino uint64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), sys.Ino
	}
	return 0, 0
}

func (t *fileTail) setContext(ctx context.Context) { t.ctx = ctx }

func (t *fileTail) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if t.newline {
			t.newline, t.lastByte = false, '\n'
			p[0] = '\n'
			return 1, nil
		}
		n, err := t.f.Read(p)
		if n > 0 {
			t.off += int64(n)
			t.lastByte = p[n-1]
			return n, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		// At the end of what the file holds now.
		if t.ctx.Err() != nil {
			return 0, io.EOF
		}
		if t.reopened() {
			continue
		}
		wait := followIdle - time.Since(t.lastIdle)
		if wait <= 0 {
			t.lastIdle = time.Now()
			return 0, threaddump.ErrInputIdle
		}
		timer := time.NewTimer(min(wait, followPoll))
		select {
		case <-t.ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
}

// reopened handles, at the end of the open file, a new file at the path
// (rotation: the old one is read to its end, since it was) and a file
// shorter than what was read of it (truncation: read it again from its
// start). It reports whether there is something new to read.
func (t *fileTail) reopened() bool {
	if st, err := os.Stat(t.path); err == nil {
		if dev, ino := fileID(st); dev != t.dev || ino != t.ino {
			if cur, err := t.f.Stat(); err == nil && cur.Size() > t.off {
				return true // the old file grew before it was replaced: read it first
			}
			f, err := os.Open(t.path)
			if err != nil {
				return false // not readable yet: try again at the next poll
			}
			if st, err = f.Stat(); err != nil {
				f.Close()
				return false
			}
			t.f.Close()
			t.f, t.off = f, 0
			t.dev, t.ino = fileID(st)
			t.rotations++
			t.newline = t.lastByte != '\n'
			return true
		}
	}
	// A path that is gone (between the rename and the new file of a
	// rotation) leaves the open file to be read.
	st, err := t.f.Stat()
	if err != nil || st.Size() >= t.off {
		return false
	}
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return false
	}
	t.off = 0
	t.truncations++
	t.newline = t.lastByte != '\n'
	return true
}

func (t *fileTail) notes() []string {
	var n []string
	if t.rotations > 0 {
		n = append(n, fmt.Sprintf("a new file replaced it %s (rotation); the old one was read to its end, the new one from its start", times(t.rotations)))
	}
	if t.truncations > 0 {
		n = append(n, fmt.Sprintf("it was truncated %s; it was read again from its start", times(t.truncations)))
	}
	return n
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func (t *fileTail) Close() error { return t.f.Close() }

// pipeTail reads a pipe (standard input) that may stay open and quiet for
// hours. A goroutine reads it, a few chunks ahead at most, so that a Read
// can give up waiting when ctx ends or the input is quiet; the goroutine is
// left blocked in its read when ctx ends (the process is ending).
type pipeTail struct {
	ctx   context.Context
	full  chan []byte
	free  chan []byte
	errMu sync.Mutex
	err   error // why the pipe ended, once full is closed
	cur   []byte
	buf   []byte // cur's chunk, given back once read

	lastIdle time.Time
}

func newPipeTail(r io.Reader) *pipeTail {
	p := &pipeTail{ctx: context.Background(), full: make(chan []byte, pipeChunks), free: make(chan []byte, pipeChunks+1), lastIdle: time.Now()}
	for range pipeChunks + 1 {
		p.free <- make([]byte, pipeChunk)
	}
	go p.pump(r)
	return p
}

func (p *pipeTail) pump(r io.Reader) {
	for {
		b := <-p.free
		n, err := r.Read(b[:cap(b)])
		if n > 0 {
			p.full <- b[:n]
		} else {
			p.free <- b
		}
		if err != nil {
			p.errMu.Lock()
			p.err = err
			p.errMu.Unlock()
			close(p.full)
			return
		}
	}
}

func (p *pipeTail) setContext(ctx context.Context) { p.ctx = ctx }

func (p *pipeTail) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.buf != nil {
			p.free <- p.buf[:0]
			p.buf = nil
		}
		select {
		case c, ok := <-p.full:
			if !ok {
				return 0, p.end()
			}
			p.cur, p.buf = c, c
			continue
		default:
		}
		// Caught up with what has come.
		if p.ctx.Err() != nil {
			return 0, io.EOF
		}
		wait := followIdle - time.Since(p.lastIdle)
		if wait <= 0 {
			p.lastIdle = time.Now()
			return 0, threaddump.ErrInputIdle
		}
		timer := time.NewTimer(wait)
		select {
		case c, ok := <-p.full:
			timer.Stop()
			if !ok {
				return 0, p.end()
			}
			p.cur, p.buf = c, c
		case <-p.ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

func (p *pipeTail) end() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	if p.err == nil || errors.Is(p.err, io.EOF) {
		return io.EOF
	}
	return p.err
}

func (p *pipeTail) notes() []string { return nil }
