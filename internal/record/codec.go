package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// encoder appends the compact binary form of values to a buffer; decoder
// reads them back. Integers are varints, strings go through a table shared
// by the frames since the last keyframe (thread names repeat every tick).
type encoder struct {
	b       []byte
	strings map[string]uint64
	// version is the format version written (tests write older ones).
	version byte
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) int(v int)        { e.varint(int64(v)) }
func (e *encoder) byte(v byte)      { e.b = append(e.b, v) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *encoder) float(v float64)          { e.uvarint(math.Float64bits(v)) }
func (e *encoder) duration(d time.Duration) { e.varint(int64(d)) }
func (e *encoder) bytes(v []byte) {
	e.uvarint(uint64(len(v)))
	e.b = append(e.b, v...)
}

// str writes a string by its table index; a new string is written out
// after the index that names it (the table's next slot).
func (e *encoder) str(s string) {
	if i, ok := e.strings[s]; ok {
		e.uvarint(i)
		return
	}
	i := uint64(len(e.strings))
	e.strings[s] = i
	e.uvarint(i)
	e.bytes([]byte(s))
}

func (e *encoder) strs(v []string) {
	e.uvarint(uint64(len(v)))
	for _, s := range v {
		e.str(s)
	}
}

// errCorrupt means the frame's content does not decode: its checksum
// matched, so the writer and reader disagree (or it was forged).
var errCorrupt = errors.New("frame content does not decode")

type decoder struct {
	b       []byte
	err     error
	strings *[]string
	// version is the file's format version: what the frames hold.
	version byte
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int                { return int(d.varint()) }
func (d *decoder) float() float64          { return math.Float64frombits(d.uvarint()) }
func (d *decoder) duration() time.Duration { return time.Duration(d.varint()) }
func (d *decoder) bool() bool              { return d.byte() != 0 }
func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a length and checks it against what is left, so a hostile
// length cannot make the reader allocate what the frame cannot hold.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/max(minSize, 1)+1) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count(1)
	if d.err != nil || n > len(d.b) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	i := d.uvarint()
	if d.err != nil {
		return ""
	}
	t := *d.strings
	switch {
	case i < uint64(len(t)):
		return t[i]
	case i == uint64(len(t)):
		s := string(d.bytes())
		if d.err == nil {
			*d.strings = append(t, s)
		}
		return s
	}
	d.fail()
	return ""
}

func (d *decoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) done() error {
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes left over", errCorrupt, len(d.b))
	}
	return nil
}
