package jfr

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// FormatError reports input that does not follow the JFR format. Offset is
// the absolute byte offset in the stream where the problem was found.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("jfr: offset %d: %s", e.Offset, e.Msg)
}

// decoder reads JFR values from one chunk held in memory. Errors are sticky:
// after the first one every read returns zero and err stays set, so hot loops
// check err once per value instead of once per byte.
type decoder struct {
	b    []byte
	pos  int
	base int64 // absolute offset of b[0] in the stream, for errors
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &FormatError{Offset: d.base + int64(d.pos), Msg: fmt.Sprintf(format, args...)}
	}
	d.pos = len(d.b)
}

// varint reads JFR's compressed integer: 7 bits per byte, least significant
// group first, high bit set when more follow; the ninth byte carries 8 bits.
func (d *decoder) varint() int64 {
	b := d.b
	p := d.pos
	if p < len(b) && b[p] < 0x80 {
		d.pos = p + 1
		return int64(b[p])
	}
	if p+9 <= len(b) {
		// Nine bytes are left, the longest encoding: no bounds checks per
		// byte. Event times and addresses take 5 to 9 bytes.
		w := b[p : p+9]
		var v uint64
		for i := 0; i < 8; i++ {
			c := w[i]
			v |= uint64(c&0x7f) << (7 * i)
			if c < 0x80 {
				d.pos = p + i + 1
				return int64(v)
			}
		}
		d.pos = p + 9
		return int64(v | uint64(w[8])<<56)
	}
	var v uint64
	for i := 0; i < 8; i++ {
		if p >= len(b) {
			d.fail("truncated integer")
			return 0
		}
		c := b[p]
		p++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.pos = p
			return int64(v)
		}
	}
	if p >= len(b) {
		d.fail("truncated integer")
		return 0
	}
	v |= uint64(b[p]) << 56
	d.pos = p + 1
	return int64(v)
}

// count reads a length or element count and checks that at least min bytes
// per element remain, so a forged count cannot make us allocate or loop far
// beyond the input.
func (d *decoder) count(what string, min int) int {
	n := d.varint()
	if d.err != nil {
		return 0
	}
	if min < 1 {
		min = 1
	}
	left := int64(len(d.b) - d.pos)
	if n < 0 || n > left || n*int64(min) > left {
		d.fail("%s count %d exceeds the %d bytes left", what, n, len(d.b)-d.pos)
		return 0
	}
	return int(n)
}

func (d *decoder) u8() byte {
	if d.pos >= len(d.b) {
		d.fail("truncated byte")
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *decoder) skip(n int) {
	if n < 0 || n > len(d.b)-d.pos {
		d.fail("truncated: need %d bytes, %d left", n, len(d.b)-d.pos)
		return
	}
	d.pos += n
}

func (d *decoder) f32() float64 {
	if len(d.b)-d.pos < 4 {
		d.fail("truncated float")
		return 0
	}
	v := math.Float32frombits(binary.BigEndian.Uint32(d.b[d.pos:]))
	d.pos += 4
	return float64(v)
}

func (d *decoder) f64() float64 {
	if len(d.b)-d.pos < 8 {
		d.fail("truncated double")
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(d.b[d.pos:]))
	d.pos += 8
	return v
}

// String encodings (the first byte of every encoded string).
const (
	strNull     = 0
	strEmpty    = 1
	strPool     = 2 // varint key into the java.lang.String constant pool
	strUTF8     = 3
	strCharArr  = 4 // varint count of UTF-16 code units, each a varint
	strLatin1   = 5
	maxStrBytes = 16 << 20
)

// str reads an encoded string. For strPool it returns the key and pool=true;
// the caller resolves it.
func (d *decoder) str() (s string, key int64, pool bool) {
	enc := d.u8()
	switch enc {
	case strNull, strEmpty:
		return "", 0, false
	case strPool:
		return "", d.varint(), true
	case strUTF8, strLatin1:
		n := d.count("string byte", 1)
		if n > maxStrBytes {
			d.fail("string of %d bytes exceeds the %d byte limit", n, maxStrBytes)
			return "", 0, false
		}
		raw := d.b[d.pos : d.pos+n]
		d.pos += n
		if enc == strUTF8 {
			if utf8.Valid(raw) {
				return string(raw), 0, false
			}
			// Java's modified UTF-8 (e.g. encoded NUL) is not valid Go
			// UTF-8; keep what decodes and replace the rest.
			return string([]rune(string(raw))), 0, false
		}
		return latin1(raw), 0, false
	case strCharArr:
		n := d.count("string char", 1)
		if n > maxStrBytes/2 {
			d.fail("string of %d chars exceeds the limit", n)
			return "", 0, false
		}
		// The JVM writes most strings this way; nearly all are ASCII, which
		// fit in one byte each and need no UTF-16 decoding.
		ascii := make([]byte, 0, n)
		start := d.pos
		for i := 0; i < n; i++ {
			if d.pos < len(d.b) && d.b[d.pos] < 0x80 {
				ascii = append(ascii, d.b[d.pos])
				d.pos++
				continue
			}
			d.pos = start
			units := make([]uint16, n)
			for i := range units {
				units[i] = uint16(d.varint())
			}
			if d.err != nil {
				return "", 0, false
			}
			return string(utf16.Decode(units)), 0, false
		}
		return string(ascii), 0, false
	default:
		d.fail("unknown string encoding %d", enc)
		return "", 0, false
	}
}

// skipStr skips an encoded string without building it.
func (d *decoder) skipStr() {
	switch enc := d.u8(); enc {
	case strNull, strEmpty:
	case strPool:
		d.varint()
	case strUTF8, strLatin1:
		d.skip(d.count("string byte", 1))
	case strCharArr:
		n := d.count("string char", 1)
		for i := 0; i < n && d.err == nil; i++ {
			d.varint()
		}
	default:
		d.fail("unknown string encoding %d", enc)
	}
}

func latin1(raw []byte) string {
	ascii := true
	for _, c := range raw {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(raw)
	}
	r := make([]rune, len(raw))
	for i, c := range raw {
		r[i] = rune(c)
	}
	return string(r)
}
