package jfr

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
)

// The metadata event describes every type the JVM knows (about 100 KB on
// JDK 17) and is the same in every chunk a JVM writes, so parsed metadata is
// shared across Readers: ctprof re-reads one JVM's new chunks every few
// seconds. A few entries bound the memory.
const metaCacheEntries = 4

var metaCache struct {
	sync.Mutex
	entries  []metaCacheEntry // most recently stored last
	disabled bool             // for benchmarks of the cold path
}

type metaCacheEntry struct {
	sum  uint32
	body []byte
	md   *metadata
}

func cachedMetadata(body []byte) *metadata {
	sum := crc32.ChecksumIEEE(body)
	metaCache.Lock()
	defer metaCache.Unlock()
	if metaCache.disabled {
		return nil
	}
	for _, e := range metaCache.entries {
		if e.sum == sum && bytes.Equal(e.body, body) {
			return e.md
		}
	}
	return nil
}

func storeMetadata(body []byte, md *metadata) {
	metaCache.Lock()
	defer metaCache.Unlock()
	if metaCache.disabled {
		return
	}
	if len(metaCache.entries) == metaCacheEntries {
		metaCache.entries = append(metaCache.entries[:0], metaCache.entries[1:]...)
	}
	metaCache.entries = append(metaCache.entries, metaCacheEntry{crc32.ChecksumIEEE(body), append([]byte(nil), body...), md})
}

// kind is how a value of a type is laid out in the binary data.
type kind uint8

const (
	kindStruct kind = iota // fields inline, in metadata order
	kindBool               // one byte
	kindByte               // one byte
	kindShort              // varint
	kindChar               // varint
	kindInt                // varint
	kindLong               // varint
	kindFloat              // 4 bytes big-endian
	kindDouble             // 8 bytes big-endian
	kindString             // encoded string
)

var primitiveKinds = map[string]kind{
	"boolean": kindBool, "byte": kindByte, "short": kindShort, "char": kindChar,
	"int": kindInt, "long": kindLong, "float": kindFloat, "double": kindDouble,
	"java.lang.String": kindString,
}

// unit is what a number field means, from its jdk.jfr.Timespan or
// jdk.jfr.Timestamp annotation.
type unit uint8

const (
	unitNone unit = iota
	spanTicks
	spanNanos
	spanMicros
	spanMillis
	spanSeconds
	stampTicks
	stampMillis // milliseconds since the epoch
)

var spanUnits = map[string]unit{"TICKS": spanTicks, "NANOSECONDS": spanNanos, "MICROSECONDS": spanMicros, "MILLISECONDS": spanMillis, "SECONDS": spanSeconds}
var stampUnits = map[string]unit{"TICKS": stampTicks, "MILLISECONDS_SINCE_EPOCH": stampMillis}

// typeDesc is one class of the metadata event: an event type, a constant
// pool type, an inline struct or a primitive.
type typeDesc struct {
	id      int64
	name    string
	super   string
	kind    kind
	fields  []fieldDesc
	event   bool
	minSize int // fewest bytes one value can take; bounds forged counts

	// Positions of the fields every event has, or -1.
	iStart, iDuration, iThread, iStack int
}

type fieldDesc struct {
	name   string
	typ    *typeDesc
	pool   bool // the value is a varint key into typ's constant pool
	array  bool // a varint count, then that many values
	unit   unit
	unsign bool
}

func (t *typeDesc) field(name string) int {
	for i := range t.fields {
		if t.fields[i].name == name {
			return i
		}
	}
	return -1
}

// metadata is the parsed metadata event of a chunk.
type metadata struct {
	id     int64
	types  map[int64]*typeDesc
	byName map[string]*typeDesc
}

const (
	maxElementDepth = 16
	maxDecodeDepth  = 64
)

// rawField is a field element before all type ids are known.
type rawField struct {
	owner  *typeDesc
	name   string
	typeID string
	pool   bool
	dim    string
	at     int // index in owner.fields once placed, or -1
}

// rawAnnotation is an annotation element of the field p.fields[field].
type rawAnnotation struct {
	field        int
	class, value string
}

// metaParser walks the metadata element tree once, in document order,
// keeping only classes, their fields and the fields' annotations; nothing
// is built for the rest (settings, region, class annotations).
type metaParser struct {
	d      *decoder
	strs   []string
	attrs  [][2]string // the current element's attributes, reused
	types  []*typeDesc
	fields []rawField
	anns   []rawAnnotation
}

func (p *metaParser) str() string {
	i := p.d.varint()
	if i < 0 || i >= int64(len(p.strs)) {
		p.d.fail("metadata string index %d out of range (%d strings)", i, len(p.strs))
		return ""
	}
	return p.strs[i]
}

func (p *metaParser) attr(name string) string {
	for _, a := range p.attrs {
		if a[0] == name {
			return a[1]
		}
	}
	return ""
}

// element reads one element; parent is the name of the chain so far
// ("", "metadata", "class", "field").
func (p *metaParser) element(depth int, parent string) {
	d := p.d
	if depth > maxElementDepth {
		d.fail("metadata nested deeper than %d", maxElementDepth)
		return
	}
	name := p.str()
	n := d.count("metadata attribute", 2)
	p.attrs = p.attrs[:0]
	for i := 0; i < n && d.err == nil; i++ {
		k := p.str()
		p.attrs = append(p.attrs, [2]string{k, p.str()})
	}
	role := ""
	switch {
	case depth == 1 && name == "metadata":
		role = "metadata"
	case parent == "metadata" && name == "class":
		role = "class"
		t := &typeDesc{name: p.attr("name"), super: p.attr("superType"), iStart: -1, iDuration: -1, iThread: -1, iStack: -1}
		id, err := strconv.ParseInt(p.attr("id"), 10, 64)
		if err != nil {
			d.fail("metadata class %q has a bad id %q", t.name, p.attr("id"))
			return
		}
		t.id = id
		p.types = append(p.types, t)
	case parent == "class" && name == "field":
		role = "field"
		p.fields = append(p.fields, rawField{
			owner: p.types[len(p.types)-1], name: p.attr("name"), typeID: p.attr("class"),
			pool: p.attr("constantPool") == "true", dim: p.attr("dimension"), at: -1,
		})
	case parent == "field" && name == "annotation":
		p.anns = append(p.anns, rawAnnotation{len(p.fields) - 1, p.attr("class"), p.attr("value")})
	}
	n = d.count("metadata element", 3)
	for i := 0; i < n && d.err == nil; i++ {
		p.element(depth+1, role)
	}
}

// parseMetadata reads the metadata event at d.pos (just after its size and
// type id).
func parseMetadata(d *decoder) (*metadata, error) {
	d.varint() // start time
	d.varint() // duration
	id := d.varint()
	n := d.count("metadata string", 1)
	// All strings of the table share one backing string: thousands of
	// small allocations would cost more than the parsing itself.
	bounds := make([]int, n+1)
	var text []byte
	for i := 0; i < n; i++ {
		at := d.pos
		if d.pos+1 < len(d.b) && d.b[d.pos] == strCharArr {
			// Fast path for ASCII char arrays, the JVM's usual encoding.
			d.pos++
			cnt := d.count("string char", 1)
			j := 0
			for ; j < cnt && d.b[d.pos] < 0x80; j++ {
				text = append(text, d.b[d.pos])
				d.pos++
			}
			if j == cnt {
				bounds[i+1] = len(text)
				continue
			}
			text = text[:bounds[i]]
			d.pos = at
		}
		s, _, pool := d.str()
		if pool {
			d.fail("metadata string refers to a constant pool")
		}
		if d.err != nil {
			return nil, d.err
		}
		text = append(text, s...)
		bounds[i+1] = len(text)
	}
	all := string(text)
	strs := make([]string, n)
	for i := range strs {
		strs[i] = all[bounds[i]:bounds[i+1]]
	}
	// Rough sizes from a JDK 17 metadata event, so the slices rarely grow.
	left := len(d.b) - d.pos
	p := &metaParser{d: d, strs: strs, types: make([]*typeDesc, 0, left/256), fields: make([]rawField, 0, left/64), anns: make([]rawAnnotation, 0, left/96)}
	p.element(0, "")
	if d.err != nil {
		return nil, d.err
	}
	m := &metadata{id: id, types: make(map[int64]*typeDesc, len(p.types)), byName: make(map[string]*typeDesc, len(p.types))}
	for _, t := range p.types {
		t.kind = primitiveKinds[t.name]
		t.event = t.super == "jdk.jfr.Event"
		m.types[t.id] = t
		m.byName[t.name] = t
	}
	fieldAt := make([]*fieldDesc, len(p.fields)) // for the annotations
	for i := range p.fields {
		rf := &p.fields[i]
		t := rf.owner
		if t.kind != kindStruct {
			continue
		}
		fid, err := strconv.ParseInt(rf.typeID, 10, 64)
		ft := m.types[fid]
		if err != nil || ft == nil {
			return nil, fmt.Errorf("metadata: field %s.%s has unknown type %q", t.name, rf.name, rf.typeID)
		}
		f := fieldDesc{name: rf.name, typ: ft, pool: rf.pool}
		switch rf.dim {
		case "", "0":
		case "1":
			f.array = true
		default:
			return nil, fmt.Errorf("metadata: field %s.%s has unsupported dimension %q", t.name, f.name, rf.dim)
		}
		rf.at = len(t.fields)
		t.fields = append(t.fields, f)
	}
	for i := range p.fields {
		if rf := &p.fields[i]; rf.at >= 0 {
			fieldAt[i] = &rf.owner.fields[rf.at]
		}
	}
	for _, a := range p.anns {
		f := fieldAt[a.field]
		if f == nil {
			continue
		}
		aid, _ := strconv.ParseInt(a.class, 10, 64)
		at := m.types[aid]
		if at == nil {
			continue
		}
		switch at.name {
		case "jdk.jfr.Timespan":
			f.unit = spanUnits[a.value]
		case "jdk.jfr.Timestamp":
			f.unit = stampUnits[a.value]
		case "jdk.jfr.Unsigned":
			f.unsign = true
		}
	}
	for _, t := range p.types {
		if t.event {
			t.iStart, t.iDuration = t.field("startTime"), t.field("duration")
			t.iThread, t.iStack = t.field("eventThread"), t.field("stackTrace")
		}
	}
	// Sizes also reject types that contain themselves inline, which would
	// otherwise decode forever without consuming input.
	state := make(map[*typeDesc]uint8, len(m.types))
	for _, t := range m.types {
		if err := computeMinSize(t, state); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func computeMinSize(t *typeDesc, state map[*typeDesc]uint8) error {
	switch state[t] {
	case 1:
		return fmt.Errorf("metadata: type %s contains itself inline", t.name)
	case 2:
		return nil
	}
	state[t] = 1
	switch t.kind {
	case kindFloat:
		t.minSize = 4
	case kindDouble:
		t.minSize = 8
	case kindStruct:
		t.minSize = 0
		for i := range t.fields {
			f := &t.fields[i]
			if f.pool || f.array {
				t.minSize++
				continue
			}
			if err := computeMinSize(f.typ, state); err != nil {
				return err
			}
			t.minSize += f.typ.minSize
		}
	default:
		t.minSize = 1
	}
	state[t] = 2
	return nil
}
