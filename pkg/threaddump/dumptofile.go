package threaddump

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file reads `jcmd <pid> Thread.dump_to_file` (JDK 21+), which lists
// platform and virtual threads grouped by thread container, in JSON
// (-format=json) or plain text. Unlike Thread.print it gives no native
// thread ids, so its threads cannot be joined with OS threads.
//
// JSON (jdk.internal.vm.ThreadDumper): {"threadDump": {"processId", "time",
// "runtimeVersion", "threadContainers": [{"container", "parent", "owner",
// "threads": [{"tid", "name", "stack": [...], ...}], "threadCount"}]}}.
// JDK 21 writes numbers as strings and no state or lock data; JDK 25 adds
// "state", "virtual", "carrier", "blockedOn", "waitingOn", "parkBlocker"
// ({"object", "owner"?}) and "monitorsOwned" ([{"depth", "locks"}]).
// Objects are named "Class@identityhash".

// looksLikeThreadDumpJSON recognises the JSON document by its first key.
func looksLikeThreadDumpJSON(head string) bool {
	s := strings.TrimLeft(head, " \t\r\n")
	if !strings.HasPrefix(s, "{") {
		return false
	}
	s = strings.TrimLeft(s[1:], " \t\r\n")
	return strings.HasPrefix(s, `"threadDump"`)
}

// flexInt reads a JSON number or a string holding one (JDK 21 quotes them).
type flexInt int64

func (f *flexInt) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	var s string
	switch tok.Kind() {
	case 'n':
		*f = 0
		return nil
	case '"':
		if s = tok.String(); s == "" {
			*f = 0
			return nil
		}
	case '0':
		s = tok.String()
	default:
		return fmt.Errorf("not a number: %s", truncateForError([]byte(tok.String())))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", truncateForError([]byte(s)))
	}
	*f = flexInt(n)
	return nil
}

func truncateForError(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

type jsonThread struct {
	TID           flexInt     `json:"tid"`
	Name          string      `json:"name"`
	State         string      `json:"state"`
	Virtual       bool        `json:"virtual"`
	Carrier       flexInt     `json:"carrier"`
	Stack         []string    `json:"stack"`
	BlockedOn     string      `json:"blockedOn"`
	WaitingOn     string      `json:"waitingOn"`
	ParkBlocker   *jsonBlock  `json:"parkBlocker"`
	MonitorsOwned []jsonOwned `json:"monitorsOwned"`
}

type jsonBlock struct {
	Object string  `json:"object"`
	Owner  flexInt `json:"owner"`
}

type jsonOwned struct {
	Depth flexInt  `json:"depth"`
	Locks []string `json:"locks"`
}

// parseThreadDumpJSON reads one or more documents (a series of dumps
// appended to one file). It walks the document token by token, decoding
// one thread at a time, so a truncated file still yields every thread
// before the cut, with a warning. It reads with jsontext and json v2
// (go-json-experiment), several times faster than encoding/json's token
// API; names need not be valid UTF-8 (a thread name is any Java string),
// and a repeated member is not an error (the last one wins, as before).
func parseThreadDumpJSON(b []byte) ([]*Dump, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	var dumps []*Dump
	for {
		d := &Dump{Format: FormatThreadDumpJSON, JNIGlobalRefs: -1, JNIWeakRefs: -1, StartLine: 1 + bytes.Count(b[:dec.InputOffset()], []byte{'\n'})}
		err := decodeThreadDump(dec, d)
		if errors.Is(err, io.EOF) && len(d.Threads) == 0 && d.PID == 0 {
			break // no further document
		}
		if err != nil {
			if len(d.Threads) == 0 {
				if len(dumps) > 0 {
					dumps[len(dumps)-1].Warnings = append(dumps[len(dumps)-1].Warnings, fmt.Sprintf("text after the dump is not a thread dump: %v", err))
					break
				}
				return nil, fmt.Errorf("read Thread.dump_to_file JSON: %w", err)
			}
			d.Warnings = append(d.Warnings, fmt.Sprintf("the JSON document ends early or is malformed at byte %d (%v): %d threads read", dec.InputOffset(), err, len(d.Threads)))
			dumps = append(dumps, d)
			break
		}
		linkCarriers(d)
		dumps = append(dumps, d)
	}
	return dumps, nil
}

// decodeThreadDump reads {"threadDump": {...}} into d.
func decodeThreadDump(dec *jsontext.Decoder, d *Dump) error {
	return decodeObject(dec, func(key string) error {
		if key != "threadDump" {
			return skipValue(dec)
		}
		return decodeObject(dec, func(key string) error {
			switch key {
			case "processId":
				var pid flexInt
				if err := json.UnmarshalDecode(dec, &pid); err != nil {
					return err
				}
				d.PID = int(pid)
			case "time":
				var s string
				if err := json.UnmarshalDecode(dec, &s); err != nil {
					return err
				}
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
					d.Time = t
				}
			case "runtimeVersion":
				if err := json.UnmarshalDecode(dec, &d.VM); err != nil {
					return err
				}
			case "threadContainers":
				return decodeArray(dec, func() error { return decodeContainer(dec, d) })
			default:
				return skipValue(dec)
			}
			return nil
		})
	})
}

func decodeContainer(dec *jsontext.Decoder, d *Dump) error {
	container := ""
	return decodeObject(dec, func(key string) error {
		switch key {
		case "container":
			return json.UnmarshalDecode(dec, &container)
		case "threads":
			return decodeArray(dec, func() error {
				var jt jsonThread
				if err := json.UnmarshalDecode(dec, &jt); err != nil {
					return err
				}
				d.Threads = append(d.Threads, jt.thread(container))
				return nil
			})
		}
		return skipValue(dec)
	})
}

// thread converts a decoded thread to the model.
func (jt *jsonThread) thread(container string) Thread {
	t := Thread{
		Name: cleanName(jt.Name), ID: int64(jt.TID), Virtual: jt.Virtual, State: parseState(jt.State),
		Allocated: -1, DefinedClasses: -1, Container: container,
	}
	t.Frames = make([]Frame, 0, len(jt.Stack))
	for _, s := range jt.Stack {
		t.Frames = append(t.Frames, parseStackTraceElement(s))
	}
	if jt.Carrier > 0 {
		t.CarrierID = int64(jt.Carrier)
	}
	top := 0
	if len(t.Frames) == 0 {
		top = -1
	}
	switch {
	case jt.BlockedOn != "":
		t.Locks = append(t.Locks, LockEvent{Action: LockWaitingToLock, Lock: hashLock(jt.BlockedOn), Frame: top})
	case jt.WaitingOn != "":
		t.Locks = append(t.Locks, LockEvent{Action: LockWaitingOn, Lock: hashLock(jt.WaitingOn), Frame: top})
	case jt.ParkBlocker != nil && jt.ParkBlocker.Object != "":
		t.Locks = append(t.Locks, LockEvent{Action: LockParking, Lock: hashLock(jt.ParkBlocker.Object), Frame: top})
		t.ParkBlockerOwner = int64(jt.ParkBlocker.Owner)
	}
	for _, mo := range jt.MonitorsOwned {
		depth := int(mo.Depth)
		if depth < 0 || depth >= len(t.Frames) {
			depth = -1
		}
		for _, l := range mo.Locks {
			t.Locks = append(t.Locks, LockEvent{Action: LockLocked, Lock: hashLock(l), Frame: depth})
		}
	}
	return t
}

// linkCarriers marks each carrier thread with the virtual thread it runs.
func linkCarriers(d *Dump) {
	byID := map[int64]*Thread{}
	for i := range d.Threads {
		if !d.Threads[i].Virtual {
			byID[d.Threads[i].ID] = &d.Threads[i]
		}
	}
	for i := range d.Threads {
		vt := &d.Threads[i]
		if c, ok := byID[vt.CarrierID]; ok && vt.Virtual {
			c.CarryingVirtual = vt.ID
		}
	}
}

// decodeObject walks an object, calling fn for each key; fn must consume
// the value.
func decodeObject(dec *jsontext.Decoder, fn func(key string) error) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if tok.Kind() != '"' {
			return fmt.Errorf("object key expected, got %v", tok.Kind())
		}
		if err := fn(tok.String()); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// decodeArray walks an array, calling fn for each element (null is an
// empty array).
func decodeArray(dec *jsontext.Decoder, fn func() error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() == 'n' {
		return nil
	}
	if tok.Kind() != '[' {
		return fmt.Errorf("array expected, got %v", tok.Kind())
	}
	for dec.PeekKind() != ']' {
		if err := fn(); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("%v expected, got %v", want, tok.Kind())
	}
	return nil
}

func skipValue(dec *jsontext.Decoder) error { return dec.SkipValue() }

// parseStackTraceElement parses StackTraceElement.toString(), which puts
// the class loader and module before the class ("app//a.B.c(B.java:1)",
// "java.base@25/java.lang.Thread.run(Thread.java:1474)") where Thread.print
// puts the module inside the parentheses.
func parseStackTraceElement(s string) Frame {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		open = len(s)
	}
	slash := strings.LastIndexByte(s[:open], '/')
	if slash < 0 {
		return parseFrame(s)
	}
	f := parseFrame(s[slash+1:])
	prefix := s[:slash]
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		prefix = prefix[i+1:] // drop the class loader's name
	}
	if f.Module == "" {
		f.Module = prefix
	}
	return f
}

// looksLikeThreadDumpText recognises the text form by its preamble: a line
// with the pid alone, an RFC 3339 time, the runtime version, then a thread
// header "#<tid> "name"". (jcmd's own "<pid>:" line has a colon, and
// Thread.print headers start with a quote, so HotSpot dumps never match.)
func looksLikeThreadDumpText(head string) bool {
	lines := strings.SplitN(strings.TrimLeft(head, "\r\n"), "\n", 6)
	if len(lines) < 5 {
		return false
	}
	pid := strings.TrimSpace(lines[0])
	if pid == "" || strings.Trim(pid, "0123456789") != "" {
		return false
	}
	if _, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(lines[1])); err != nil {
		return false
	}
	for _, l := range lines[3:] {
		if l = strings.TrimRight(l, "\r"); l == "" {
			continue
		}
		_, _, ok := textHeader(l)
		return ok
	}
	return false
}

// textHeader splits `#12 "name" [virtual] [STATE TIME]`. Names are printed
// as they are, quotes included, so the header is read from both ends: the
// name runs from the first quote to the last one.
func textHeader(l string) (tid int64, rest string, ok bool) {
	if !strings.HasPrefix(l, "#") {
		return 0, "", false
	}
	sp := strings.IndexByte(l, ' ')
	if sp < 2 || strings.Trim(l[1:sp], "0123456789") != "" || sp+1 >= len(l) || l[sp+1] != '"' {
		return 0, "", false
	}
	if strings.LastIndexByte(l, '"') <= sp+1 {
		return 0, "", false
	}
	return parseInt(l[1:sp]), l[sp+1:], true
}

// parseThreadDumpText reads one or more text dumps.
func parseThreadDumpText(text string) ([]*Dump, error) {
	var dumps []*Dump
	var d *Dump
	var t *Thread
	pre := 0 // preamble lines still expected: time, version
	lineNo := 0
	for len(text) > 0 {
		var l string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			l, text = text, ""
		}
		lineNo++
		l = strings.TrimRight(l, "\r")
		trimmed := strings.TrimSpace(l)
		switch {
		case pre == 2:
			if ts, err := time.Parse(time.RFC3339Nano, trimmed); err == nil {
				d.Time = ts
			}
			pre--
			continue
		case pre == 1:
			d.VM = trimmed
			pre--
			continue
		case trimmed == "":
			t = nil
			continue
		case trimmed != "" && strings.Trim(trimmed, "0123456789") == "" && textPreambleFollows(text):
			d = &Dump{Format: FormatThreadDumpText, PID: int(parseInt(trimmed)), JNIGlobalRefs: -1, JNIWeakRefs: -1, StartLine: lineNo}
			dumps = append(dumps, d)
			pre = 2
			t = nil
			continue
		}
		if d == nil {
			continue
		}
		if tid, rest, ok := textHeader(l); ok {
			d.Threads = append(d.Threads, textThread(tid, rest, lineNo))
			t = &d.Threads[len(d.Threads)-1]
			continue
		}
		if t == nil {
			d.UnknownLines++
			if len(d.UnknownSamples) < maxUnknownSamples {
				d.UnknownSamples = append(d.UnknownSamples, SourceLine{Line: lineNo, Text: l})
			}
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "- "):
			textLock(t, trimmed[2:])
		case strings.HasPrefix(trimmed, "at "):
			t.Frames = append(t.Frames, parseStackTraceElement(trimmed[3:]))
		case strings.HasPrefix(l, "      "):
			// JDK 21 indents frames without "at".
			t.Frames = append(t.Frames, parseStackTraceElement(trimmed))
		default:
			d.UnknownLines++
			if len(d.UnknownSamples) < maxUnknownSamples {
				d.UnknownSamples = append(d.UnknownSamples, SourceLine{Line: lineNo, Text: l})
			}
		}
	}
	return dumps, nil
}

// textPreambleFollows reports whether the next line is an RFC 3339 time,
// which tells a dump's pid line from a thread named by digits.
func textPreambleFollows(rest string) bool {
	l := rest
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		l = rest[:i]
	}
	_, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(l))
	return err == nil
}

// textThread builds a thread from a header's `"name" [virtual] [STATE
// TIME]`.
func textThread(tid int64, rest string, line int) Thread {
	t := Thread{ID: tid, Allocated: -1, DefinedClasses: -1, Line: line}
	q := strings.LastIndexByte(rest, '"')
	t.Name = cleanName(rest[1:q])
	for _, f := range strings.Fields(rest[q+1:]) {
		switch {
		case f == "virtual":
			t.Virtual = true
		case parseState(f) != StateNone:
			t.State = parseState(f)
		}
	}
	return t
}

// textLock reads "waiting to lock <Class@hash>" and its kin.
func textLock(t *Thread, s string) {
	frame := len(t.Frames) - 1
	actions := []struct {
		prefix string
		action LockAction
	}{
		{"waiting to lock ", LockWaitingToLock},
		{"locked ", LockLocked},
		{"waiting on ", LockWaitingOn},
		{"parking to wait for ", LockParking},
		{"waiting to re-lock in wait() ", LockWaitingToRelock},
	}
	for _, a := range actions {
		if obj, ok := strings.CutPrefix(s, a.prefix); ok {
			obj = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(obj), "<"), ">")
			t.Locks = append(t.Locks, LockEvent{Action: a.action, Lock: hashLock(obj), Frame: frame})
			return
		}
	}
}
