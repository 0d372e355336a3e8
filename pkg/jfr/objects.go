package jfr

import (
	"math"
	"strings"
)

// Thread is a java.lang.Thread constant. Within one chunk every reference to
// a thread yields the same *Thread; across chunks compare JavaThreadID (or
// OSThreadID, which is the Linux tid and the "nid" of a thread dump).
type Thread struct {
	OSName       string
	OSThreadID   int64
	JavaName     string
	JavaThreadID int64
	Virtual      bool // JDK 19+; false when the recording does not say
}

// Name is the Java name, or the OS name for threads without one.
func (t *Thread) Name() string {
	if t == nil {
		return ""
	}
	if t.JavaName != "" {
		return t.JavaName
	}
	return t.OSName
}

// Class is a java.lang.Class constant.
type Class struct {
	// Name is the binary name as Class.getName() gives it
	// ("java.util.concurrent.locks.ReentrantLock$NonfairSync"); the
	// recording stores it with slashes.
	Name      string
	Package   string // dotted, "" for the unnamed package
	Modifiers int
	Hidden    bool
}

// Method is a jdk.types.Method constant.
type Method struct {
	Class      *Class
	Name       string
	Descriptor string
	Modifiers  int
	Hidden     bool
}

// Frame is one frame of a stack trace, innermost first.
type Frame struct {
	Method        *Method
	Line          int
	BytecodeIndex int
	Type          string // "Interpreted", "JIT compiled", "Inlined", "Native", ...
}

// String renders the frame as a thread dump does: "pkg.Class.method(line N)".
func (f Frame) String() string {
	var b strings.Builder
	if f.Method != nil {
		if f.Method.Class != nil {
			b.WriteString(f.Method.Class.Name)
			b.WriteByte('.')
		}
		b.WriteString(f.Method.Name)
	}
	return b.String()
}

// StackTrace is a jdk.types.StackTrace constant; Frames[0] is the top.
type StackTrace struct {
	Truncated bool // the JVM stopped at its stack depth limit
	Frames    []Frame
}

// previous returns the chunk before c and its type named like t. The JVM
// sometimes writes an event just after a chunk rotation that refers to a
// constant it wrote into the previous chunk; the JDK's reader resolves it
// there, and so do we (one chunk back only, to bound memory).
func (c *chunk) previous(t *typeDesc) (*chunk, *typeDesc) {
	if c.prev == nil {
		return nil, nil
	}
	pt := c.prev.meta.byName[t.name]
	if pt == nil {
		return nil, nil
	}
	return c.prev, pt
}

// objField returns the named field of an object value decoded as t.
func objField(t *typeDesc, v value, name string) (*fieldDesc, value) {
	i := t.field(name)
	sub := v.elems()
	if i < 0 || v.kind != vObject || i >= len(sub) {
		return nil, value{}
	}
	return &t.fields[i], sub[i]
}

func (c *chunk) fieldInt(t *typeDesc, v value, name string) int64 {
	_, fv := objField(t, v, name)
	if fv.kind == vInt {
		return fv.i
	}
	return 0
}

func (c *chunk) fieldString(t *typeDesc, v value, name string) string {
	f, fv := objField(t, v, name)
	if f == nil {
		return ""
	}
	return c.str(f, fv, 0)
}

// str resolves a value to text: strings, keys into the string pool, and
// pool constants that wrap one string (jdk.types.Symbol, GCName, ThreadState,
// FrameType ...).
func (c *chunk) str(f *fieldDesc, v value, depth int) string {
	switch v.kind {
	case vString:
		return v.text()
	case vStrRef:
		return c.poolString(v.i)
	case vInt:
		return ""
	case vRef:
		if depth > 4 {
			return ""
		}
		cache := c.strings[f.typ]
		if s, ok := cache[v.i]; ok {
			return s
		}
		ev, ok := c.entry(f.typ, v.i)
		s := ""
		if ok {
			s = c.wrappedString(f.typ, ev, depth)
		} else if p, pt := c.previous(f.typ); p != nil {
			s = p.str(&fieldDesc{typ: pt}, v, depth+1)
		}
		if cache == nil {
			cache = make(map[int64]string)
			c.strings[f.typ] = cache
		}
		cache[v.i] = s
		return s
	case vObject:
		return ""
	}
	return ""
}

func (c *chunk) wrappedString(t *typeDesc, v value, depth int) string {
	if t.kind == kindString {
		return c.str(&fieldDesc{typ: t}, v, depth+1)
	}
	if v.kind != vObject || len(t.fields) != 1 || len(v.elems()) != 1 {
		return ""
	}
	f := &t.fields[0]
	if f.array || (f.typ.kind != kindString && f.typ.kind != kindStruct) {
		return ""
	}
	return c.str(f, v.elems()[0], depth+1)
}

func (c *chunk) poolString(key int64) string {
	t := c.meta.byName["java.lang.String"]
	if t == nil {
		return ""
	}
	return c.str(&fieldDesc{typ: t}, value{kind: vRef, i: key}, 0)
}

func (c *chunk) thread(t *typeDesc, v value) *Thread {
	if v.kind != vRef || v.i == 0 {
		return nil
	}
	if th, ok := c.threads.get(v.i); ok {
		return th
	}
	ev, ok := c.entry(t, v.i)
	var th *Thread
	if !ok {
		if p, pt := c.previous(t); p != nil {
			th = p.thread(pt, v)
		}
	} else {
		th = &Thread{
			OSName:       c.fieldString(t, ev, "osName"),
			OSThreadID:   c.fieldInt(t, ev, "osThreadId"),
			JavaName:     c.fieldString(t, ev, "javaName"),
			JavaThreadID: c.fieldInt(t, ev, "javaThreadId"),
			Virtual:      c.fieldInt(t, ev, "virtual") != 0,
		}
	}
	c.threads.put(v.i, th)
	return th
}

func (c *chunk) class(t *typeDesc, v value) *Class {
	if v.kind != vRef || v.i == 0 {
		return nil
	}
	if cl, ok := c.classes.get(v.i); ok {
		return cl
	}
	ev, ok := c.entry(t, v.i)
	var cl *Class
	if !ok {
		if p, pt := c.previous(t); p != nil {
			cl = p.class(pt, v)
		}
	} else {
		cl = &Class{
			Name:      strings.ReplaceAll(c.fieldString(t, ev, "name"), "/", "."),
			Modifiers: int(c.fieldInt(t, ev, "modifiers")),
			Hidden:    c.fieldInt(t, ev, "hidden") != 0,
		}
		if f, pv := objField(t, ev, "package"); f != nil && pv.kind == vRef && pv.i != 0 {
			if pe, ok := c.entry(f.typ, pv.i); ok {
				cl.Package = strings.ReplaceAll(c.fieldString(f.typ, pe, "name"), "/", ".")
			}
		}
	}
	c.classes.put(v.i, cl)
	return cl
}

func (c *chunk) method(t *typeDesc, v value) *Method {
	if v.kind != vRef {
		return nil
	}
	if m, ok := c.methods.get(v.i); ok {
		return m
	}
	ev, ok := c.entry(t, v.i)
	var m *Method
	if !ok {
		if p, pt := c.previous(t); p != nil {
			m = p.method(pt, v)
		}
	} else {
		m = &Method{
			Name:       c.fieldString(t, ev, "name"),
			Descriptor: c.fieldString(t, ev, "descriptor"),
			Modifiers:  int(c.fieldInt(t, ev, "modifiers")),
			Hidden:     c.fieldInt(t, ev, "hidden") != 0,
		}
		if f, cv := objField(t, ev, "type"); f != nil {
			m.Class = c.class(f.typ, cv)
		}
	}
	c.methods.put(v.i, m)
	return m
}

func (c *chunk) stack(t *typeDesc, v value) *StackTrace {
	if v.kind != vRef || v.i == 0 {
		return nil
	}
	if st, ok := c.stacks.get(v.i); ok {
		return st
	}
	ev, ok := c.entry(t, v.i)
	var st *StackTrace
	if !ok {
		if p, pt := c.previous(t); p != nil {
			st = p.stack(pt, v)
		}
	} else {
		st = &StackTrace{Truncated: c.fieldInt(t, ev, "truncated") != 0}
		if f, fv := objField(t, ev, "frames"); f != nil && fv.kind == vArray {
			ft := f.typ
			st.Frames = make([]Frame, 0, len(fv.elems()))
			for _, e := range fv.elems() {
				if f.pool { // async-profiler and JDK agree on inline frames; be lenient
					pe, ok := c.entry(ft, e.i)
					if !ok {
						continue
					}
					e = pe
				}
				fr := Frame{
					Line:          int(c.fieldInt(ft, e, "lineNumber")),
					BytecodeIndex: int(c.fieldInt(ft, e, "bytecodeIndex")),
					Type:          c.fieldString(ft, e, "type"),
				}
				if mf, mv := objField(ft, e, "method"); mf != nil {
					fr.Method = c.method(mf.typ, mv)
				}
				st.Frames = append(st.Frames, fr)
			}
		}
	}
	c.stacks.put(v.i, st)
	return st
}

// genericBudget bounds the values one Event.Value call converts: constants
// may refer to each other many times over, which would otherwise grow
// exponentially with the depth.
const genericBudget = 4096

// generic converts a value to plain Go data for Event.Value; *budget counts
// down the values it may still convert.
func (c *chunk) generic(f *fieldDesc, v value, depth int, budget *int) any {
	if depth > 8 || *budget <= 0 {
		return nil
	}
	*budget--
	switch v.kind {
	case vArray:
		out := make([]any, len(v.elems()))
		one := *f
		one.array = false
		for i, e := range v.elems() {
			out[i] = c.generic(&one, e, depth+1, budget)
		}
		return out
	case vInt:
		switch {
		case f.typ.kind == kindBool:
			return v.i != 0
		case f.unsign:
			return uint64(v.i)
		}
		return v.i
	case vFloat:
		return math.Float64frombits(uint64(v.i))
	case vString, vStrRef:
		return c.str(f, v, 0)
	case vRef:
		switch f.typ.name {
		case "java.lang.Thread":
			return c.thread(f.typ, v)
		case "java.lang.Class":
			return c.class(f.typ, v)
		case "jdk.types.StackTrace":
			return c.stack(f.typ, v)
		case "jdk.types.Method":
			return c.method(f.typ, v)
		}
		if len(f.typ.fields) == 1 {
			return c.str(f, v, 0)
		}
		ev, ok := c.entry(f.typ, v.i)
		if !ok {
			return nil
		}
		return c.object(f.typ, ev, depth+1, budget)
	case vObject:
		return c.object(f.typ, v, depth+1, budget)
	}
	return nil
}

func (c *chunk) object(t *typeDesc, v value, depth int, budget *int) map[string]any {
	m := make(map[string]any, len(t.fields))
	for i := range t.fields {
		if sub := v.elems(); i < len(sub) {
			m[t.fields[i].name] = c.generic(&t.fields[i], sub[i], depth, budget)
		}
	}
	return m
}
