package jfr

import (
	"encoding/binary"
	"math"
	"time"
)

const (
	headerSize      = 68
	typeMetadata    = 0
	typeCheckpoint  = 1
	fileStateOffset = 64
	// fileStateUpdating marks a header the JVM is rewriting at this moment.
	fileStateUpdating = 255
)

// vkind says which member of value holds the data.
type vkind uint8

const (
	vNone   vkind = iota
	vInt          // i (booleans, chars and all integers)
	vFloat        // i holds math.Float64bits
	vString       // s
	vStrRef       // i is a key into the java.lang.String pool
	vRef          // i is a key into the field type's pool
	vObject       // sub holds the fields
	vArray        // sub holds the elements
)

// value is kept small (24 bytes) because events hold several; strings and
// nested values, rare in lock events, live behind x.
type value struct {
	i    int64
	x    *valueExt
	kind vkind
}

type valueExt struct {
	s   string
	sub []value
}

func (v value) text() string {
	if v.x == nil {
		return ""
	}
	return v.x.s
}

func (v value) elems() []value {
	if v.x == nil {
		return nil
	}
	return v.x.sub
}

// ChunkInfo describes the chunk the last event came from.
type ChunkInfo struct {
	Index          int   // 0 for the first chunk of the stream
	Offset         int64 // of the chunk header in the stream
	Size           int64
	Major, Minor   int
	Start          time.Time
	Duration       time.Duration
	TicksPerSecond int64
	// Unfinished is set for a chunk the JVM was still writing (a file from
	// its repository): only its flushed part was read.
	Unfinished bool
}

// chunk is one chunk held in memory with its metadata and constant pools.
type chunk struct {
	info       ChunkInfo
	buf        []byte
	meta       *metadata
	startNanos int64
	startTicks int64
	nsPerTick  float64

	pools map[*typeDesc]map[int64]int // pool type -> key -> offset in buf
	prev  *chunk                      // the chunk before, for late references

	threads keyCache[*Thread]
	classes keyCache[*Class]
	methods keyCache[*Method]
	stacks  keyCache[*StackTrace]
	strings map[*typeDesc]map[int64]string
	decoded map[*typeDesc]map[int64]value

	events []Event // unused part of the current event slab
	values []value // values slab; the part beyond len is unused

	pos     int   // next event
	end     int   // events are framed correctly up to here
	scanErr error // why framing stopped before the chunk's end, if it did
}

func (c *chunk) header() (major, minor int, size, cpOff, metaOff int64) {
	b := c.buf
	major = int(binary.BigEndian.Uint16(b[4:]))
	minor = int(binary.BigEndian.Uint16(b[6:]))
	size = int64(binary.BigEndian.Uint64(b[8:]))
	cpOff = int64(binary.BigEndian.Uint64(b[16:]))
	metaOff = int64(binary.BigEndian.Uint64(b[24:]))
	return
}

func (c *chunk) dec(pos int) *decoder {
	return &decoder{b: c.buf, pos: pos, base: c.info.Offset}
}

func (c *chunk) ticksToNanos(d int64) int64 {
	if c.nsPerTick == 1 {
		return d
	}
	return int64(float64(d) * c.nsPerTick)
}

func (c *chunk) ticksToTime(t int64) time.Time {
	return time.Unix(0, c.startNanos+c.ticksToNanos(t-c.startTicks)).UTC()
}

// decodeField reads one field's value (array, pool key or inline value).
func (c *chunk) decodeField(d *decoder, f *fieldDesc, depth int) value {
	if f.array {
		n := d.count("array element", f.elemMin())
		if n > 0 && f.typ.minSize == 0 && !f.pool {
			d.fail("array of %d empty %s values", n, f.typ.name)
			return value{}
		}
		elems := make([]value, n)
		for i := range elems {
			elems[i] = c.decodeOne(d, f, depth+1)
			if d.err != nil {
				return value{}
			}
		}
		return value{kind: vArray, x: &valueExt{sub: elems}}
	}
	return c.decodeOne(d, f, depth)
}

func (f *fieldDesc) elemMin() int {
	if f.pool {
		return 1
	}
	return f.typ.minSize
}

func (c *chunk) decodeOne(d *decoder, f *fieldDesc, depth int) value {
	if f.pool {
		return value{kind: vRef, i: d.varint()}
	}
	return c.decodeType(d, f.typ, depth)
}

func (c *chunk) decodeType(d *decoder, t *typeDesc, depth int) value {
	switch t.kind {
	case kindBool, kindByte:
		return value{kind: vInt, i: int64(int8(d.u8()))}
	case kindLong:
		return value{kind: vInt, i: d.varint()}
	case kindInt:
		// Java ints travel as their 32 bits: -1 arrives as 0xffffffff.
		return value{kind: vInt, i: int64(int32(d.varint()))}
	case kindShort:
		return value{kind: vInt, i: int64(int16(d.varint()))}
	case kindChar:
		return value{kind: vInt, i: int64(uint16(d.varint()))}
	case kindFloat:
		return value{kind: vFloat, i: int64(math.Float64bits(d.f32()))}
	case kindDouble:
		return value{kind: vFloat, i: int64(math.Float64bits(d.f64()))}
	case kindString:
		s, key, pool := d.str()
		if pool {
			return value{kind: vStrRef, i: key}
		}
		return value{kind: vString, x: &valueExt{s: s}}
	}
	if depth > maxDecodeDepth {
		d.fail("values nested deeper than %d", maxDecodeDepth)
		return value{}
	}
	fields := make([]value, len(t.fields))
	for i := range t.fields {
		fields[i] = c.decodeField(d, &t.fields[i], depth+1)
		if d.err != nil {
			return value{}
		}
	}
	return value{kind: vObject, x: &valueExt{sub: fields}}
}

// decodeFields reads the fields of a struct type into vals, with the common
// event field kinds (pool keys, integers) decoded in line.
func (c *chunk) decodeFields(d *decoder, t *typeDesc, vals []value) {
	for i := range t.fields {
		f := &t.fields[i]
		switch {
		case f.array:
			vals[i] = c.decodeField(d, f, 1)
		case f.pool:
			vals[i] = value{kind: vRef, i: d.varint()}
		case f.typ.kind == kindLong:
			vals[i] = value{kind: vInt, i: d.varint()}
		default:
			vals[i] = c.decodeType(d, f.typ, 1)
		}
		if d.err != nil {
			return
		}
	}
}

// skipType advances past one value of t without building it; constant pools
// are indexed this way.
func (c *chunk) skipType(d *decoder, t *typeDesc, depth int) {
	switch t.kind {
	case kindBool, kindByte:
		d.skip(1)
		return
	case kindShort, kindChar, kindInt, kindLong:
		d.varint()
		return
	case kindFloat:
		d.skip(4)
		return
	case kindDouble:
		d.skip(8)
		return
	case kindString:
		d.skipStr()
		return
	}
	if depth > maxDecodeDepth {
		d.fail("values nested deeper than %d", maxDecodeDepth)
		return
	}
	for i := range t.fields {
		f := &t.fields[i]
		n := 1
		if f.array {
			n = d.count("array element", f.elemMin())
			if n > 0 && f.typ.minSize == 0 && !f.pool {
				d.fail("array of %d empty %s values", n, f.typ.name)
			}
		}
		for j := 0; j < n && d.err == nil; j++ {
			if f.pool {
				d.varint()
			} else {
				c.skipType(d, f.typ, depth+1)
			}
		}
		if d.err != nil {
			return
		}
	}
}

// readCheckpoint indexes the constant pools of the checkpoint event whose
// payload starts at d.pos (after size and type id) and ends at end.
func (c *chunk) readCheckpoint(d *decoder, end int) {
	d.varint() // start time
	d.varint() // duration
	d.varint() // delta to the previous checkpoint; we find them by scanning
	d.u8()     // JDK 11: flush flag; later: checkpoint kind bits
	pools := d.count("constant pool", 2)
	for i := 0; i < pools && d.err == nil; i++ {
		tid := d.varint()
		t := c.meta.types[tid]
		if t == nil {
			if d.err == nil {
				d.fail("constant pool of undeclared type id %d", tid)
			}
			return
		}
		n := d.count("constant", 1+t.minSize)
		idx := c.pools[t]
		if idx == nil {
			idx = make(map[int64]int, n)
			c.pools[t] = idx
		}
		for j := 0; j < n && d.err == nil; j++ {
			key := d.varint()
			if _, dup := idx[key]; !dup {
				idx[key] = d.pos
			}
			c.skipType(d, t, 0)
		}
	}
	if d.err == nil && d.pos > end {
		d.fail("checkpoint overruns its size")
	}
}

// entry decodes the constant with key in t's pool. Decoded constants are
// kept, so asking for a large one again costs nothing: each constant's bytes
// are decoded at most once per chunk.
func (c *chunk) entry(t *typeDesc, key int64) (value, bool) {
	cache := c.decoded[t]
	if v, ok := cache[key]; ok {
		return v, v.kind != vNone
	}
	off, ok := c.pools[t][key]
	if !ok {
		return value{}, false
	}
	d := c.dec(off)
	v := c.decodeType(d, t, 0)
	if d.err != nil {
		v = value{}
	}
	if cache == nil {
		cache = make(map[int64]value)
		c.decoded[t] = cache
	}
	cache[key] = v
	return v, v.kind != vNone
}

// maxDenseKey bounds the constant pool keys cached by slice. The JVM
// numbers threads, classes, methods and stack traces from 1 up, so the
// per-event lookups of Thread and Stack index a slice; other keys (a
// forged or sparse numbering) go to a map.
const maxDenseKey = 1 << 16

// keyCache maps constant pool keys to what they resolved to, including nil
// for keys that resolve to nothing.
type keyCache[T any] struct {
	dense  []keyEntry[T]
	sparse map[int64]T
}

type keyEntry[T any] struct {
	v  T
	ok bool
}

func (k *keyCache[T]) get(key int64) (T, bool) {
	if uint64(key) < uint64(len(k.dense)) {
		e := k.dense[key]
		return e.v, e.ok
	}
	v, ok := k.sparse[key]
	return v, ok
}

func (k *keyCache[T]) put(key int64, v T) {
	if key >= 0 && key < maxDenseKey {
		if key >= int64(len(k.dense)) {
			n := 2 * len(k.dense)
			if n < 64 {
				n = 64
			}
			for int64(n) <= key {
				n *= 2
			}
			if n > maxDenseKey {
				n = maxDenseKey
			}
			grown := make([]keyEntry[T], n)
			copy(grown, k.dense)
			k.dense = grown
		}
		k.dense[key] = keyEntry[T]{v, true}
		return
	}
	if k.sparse == nil {
		k.sparse = make(map[int64]T)
	}
	k.sparse[key] = v
}
