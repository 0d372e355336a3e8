package threaddump

import (
	"strconv"
	"strings"
	"time"
)

// OpenJ9 and IBM JVMs write javacore files: sections ("0SECTION") of lines
// tagged by a level-prefixed keyword ("1CIJAVAVERSION", "3XMTHREADINFO").
// The threads are in the THREADS section:
//
//	3XMTHREADINFO      "main" J9VMThread:0x…, omrthread_t:0x…, java/lang/Thread:0x…, state:CW, prio=5
//	3XMJAVALTHREAD            (java/lang/Thread getId:0x2, isDaemon:false)
//	3XMTHREADINFO1            (native thread ID:0x8D14A, native priority:0x5, …)
//	3XMCPUTIME               CPU usage total: 1.264468000 secs, …
//	3XMTHREADBLOCK     Waiting on: java/util/TaskQueue@0x… Owned by: <unowned>
//	4XESTACKTRACE                at java/lang/Object.wait(Object.java:221)
//	5XESTACKTRACE                   (entered lock: java/util/TaskQueue@0x…, entry count: 1)
//
// The LOCKS section holds the JVM's deadlock report (1LKDEADLOCK, then
// 2LKDEADLOCKTHR lines naming the threads of the cycle, each followed by
// the object it waits for in 4LKDEADLOCKOBJ). The other sections (memory,
// classes, environment) are not thread data and are skipped whole.

// looksLikeJavacore recognises a javacore by its first section line.
func looksLikeJavacore(head string) bool {
	return strings.HasPrefix(strings.TrimLeft(head, "\ufeff\r\n "), "0SECTION") ||
		strings.Contains(head, "\n0SECTION       TITLE subcomponent dump routine")
}

// javacoreParser holds the state of one pass over the file.
type javacoreParser struct {
	d       *Dump
	section string
	cur     *Thread
	// owners resolves "Owned by" after the pass: the J9VMThread address
	// names the owner exactly.
	byJ9    map[string]int
	pending []pendingOwner
	dl      *Deadlock
	lineNo  int
}

type pendingOwner struct {
	thread int
	lock   Lock
	j9     string
	name   string
}

func parseJavacore(text string) ([]*Dump, error) {
	p := &javacoreParser{d: &Dump{Format: FormatJavacore, JNIGlobalRefs: -1, JNIWeakRefs: -1, StartLine: 1}, byJ9: map[string]int{}}
	sawEnd := false
	for len(text) > 0 {
		var ln string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			ln, text = text[:i], text[i+1:]
		} else {
			ln, text = text, ""
		}
		p.lineNo++
		ln = strings.TrimRight(ln, "\r")
		tag, rest := splitTag(ln)
		if tag == "0SECTION" {
			p.endThread()
			p.section = sectionName(rest)
			if strings.HasPrefix(p.section, "Javadump End") {
				sawEnd = true
			}
			continue
		}
		switch p.section {
		case "TITLE":
			p.titleLine(tag, rest)
		case "ENVINFO":
			p.envLine(tag, rest)
		case "LOCKS":
			p.lockSectionLine(tag, rest)
		case "THREADS":
			p.threadLine(tag, rest, ln)
		}
	}
	p.endThread()
	p.resolveOwners()
	if len(p.d.Threads) == 0 {
		return nil, nil
	}
	if !sawEnd {
		p.d.Warnings = append(p.d.Warnings, "the javacore ends before its end section: it was cut off; the threads read so far are kept")
	}
	return []*Dump{p.d}, nil
}

// splitTag splits "3XMTHREADINFO      rest" into its tag and the rest.
func splitTag(ln string) (tag, rest string) {
	i := strings.IndexByte(ln, ' ')
	if i < 0 {
		return ln, ""
	}
	return ln[:i], strings.TrimLeft(ln[i:], " ")
}

// sectionName turns "THREADS subcomponent dump routine" into "THREADS".
func sectionName(rest string) string {
	if i := strings.Index(rest, " subcomponent"); i >= 0 {
		return rest[:i]
	}
	return rest
}

func (p *javacoreParser) titleLine(tag, rest string) {
	if tag != "1TIDATETIME" {
		return
	}
	// "Date: 2024/11/18 at 12:20:39:414" (local time of the dump)
	s := strings.TrimPrefix(rest, "Date: ")
	ms := 0
	if i := strings.LastIndexByte(s, ':'); i > len("2006/01/02 at 15:04") {
		ms, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	if t, err := time.Parse("2006/01/02 at 15:04:05", s); err == nil {
		p.d.Time = t.Add(time.Duration(ms) * time.Millisecond)
	}
}

func (p *javacoreParser) envLine(tag, rest string) {
	switch tag {
	case "1CIJAVAVERSION":
		p.d.VM = strings.TrimSpace(rest + " " + p.d.VM)
	case "1CIJ9VMTAG":
		p.d.VM = strings.TrimSpace(p.d.VM + " " + rest)
	case "1CIPROCESSID":
		// "Process ID: 37560 (0x92B8)"
		f := strings.Fields(strings.TrimPrefix(rest, "Process ID:"))
		if len(f) > 0 {
			p.d.PID, _ = strconv.Atoi(f[0])
		}
	}
}

// threadLine handles one line of the THREADS section.
func (p *javacoreParser) threadLine(tag, rest, raw string) {
	switch tag {
	case "3XMTHREADINFO":
		p.endThread()
		p.startThread(rest)
	case "3XMJAVALTHREAD":
		if t := p.cur; t != nil {
			// "(java/lang/Thread getId:0x2, isDaemon:false)"
			if v, ok := field(rest, "getId:"); ok {
				t.ID = hexOrDec(v)
			}
			if v, ok := field(rest, "isDaemon:"); ok {
				t.Daemon = v == "true"
			}
		}
	case "3XMTHREADINFO1":
		if t := p.cur; t != nil {
			if v, ok := field(rest, "native thread ID:"); ok {
				t.OSThreadID = hexOrDec(v)
			}
			if v, ok := field(rest, "native priority:"); ok {
				t.OSPriority = int(hexOrDec(v))
			}
		}
	case "3XMCPUTIME":
		if t := p.cur; t != nil {
			if v, ok := strings.CutPrefix(rest, "CPU usage total: "); ok {
				if secs, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err == nil {
					t.CPU, t.HasCPU = time.Duration(secs*float64(time.Second)), true
				}
			}
		}
	case "3XMTHREADBLOCK":
		p.blockLine(rest)
	case "4XESTACKTRACE":
		if t := p.cur; t != nil {
			if s, ok := strings.CutPrefix(rest, "at "); ok {
				// JIT-compiled frames read "(File.java:12(Compiled Code))".
				if b, ok := strings.CutSuffix(s, "(Compiled Code))"); ok {
					s = b + ")"
				}
				f := parseFrame(s)
				f.Class = strings.ReplaceAll(f.Class, "/", ".")
				t.Frames = append(t.Frames, f)
			}
		}
	case "5XESTACKTRACE":
		// "(entered lock: java/util/TaskQueue@0x…, entry count: 1)" under
		// the frame that entered the monitor.
		if t := p.cur; t != nil && len(t.Frames) > 0 {
			if s, ok := strings.CutPrefix(strings.TrimPrefix(rest, "("), "entered lock: "); ok {
				if i := strings.IndexByte(s, ','); i >= 0 {
					s = s[:i]
				}
				t.Locks = append(t.Locks, LockEvent{Action: LockLocked, Lock: javacoreObject(s), Frame: len(t.Frames) - 1})
			}
		}
	case "3XMTHREADINFO3":
		if strings.HasPrefix(rest, "Native callstack") {
			// Native frames follow (4XENATIVESTACK); they are not Java frames.
			return
		}
	case "3XMTHREADINFO4":
		if t := p.cur; t != nil && strings.Contains(rest, "Virtual") {
			t.Virtual = true
		}
	case "NULL", "1XMPOOLINFO", "2XMPOOLTOTAL", "2XMPOOLLIVE", "2XMPOOLDAEMON", "1XMTHDINFO",
		"3XMJAVALTHRCCL", "3XMTHREADINFO2", "3XMHEAPALLOC", "4XENATIVESTACK",
		"1XMTHDSUMMARY", "1XMTHDCATINFO", "1XMTHDCATEGORY", "2XMTHDCATEGORY", "3XMTHDCATEGORY":
		// Known and of no use here.
	default:
		if strings.TrimSpace(raw) == "" {
			return
		}
		p.d.UnknownLines++
		if len(p.d.UnknownSamples) < maxUnknownSamples {
			p.d.UnknownSamples = append(p.d.UnknownSamples, SourceLine{Line: p.lineNo, Text: raw})
		}
	}
}

// startThread reads `"name" J9VMThread:0x…, …, state:CW, prio=5` or
// `Anonymous native thread`.
func (p *javacoreParser) startThread(rest string) {
	t := Thread{Allocated: -1, DefinedClasses: -1, Line: p.lineNo}
	j9 := ""
	if strings.HasPrefix(rest, "\"") {
		// The name may hold quotes: it ends at the quote before the fields.
		end := strings.LastIndex(rest, "\" J9VMThread:")
		if end < 0 {
			end = strings.LastIndexByte(rest, '"')
		}
		if end > 0 {
			t.Name = cleanName(rest[1:end])
			fields := rest[end+1:]
			if v, ok := field(fields, "J9VMThread:"); ok {
				j9 = strings.ToLower(v)
			}
			if v, ok := field(fields, "state:"); ok {
				t.Status = v
			}
			if v, ok := field(fields, "prio="); ok {
				t.Priority, _ = strconv.Atoi(v)
			}
		}
	} else {
		t.Name = strings.TrimSpace(rest) // "Anonymous native thread": VM-internal
	}
	p.d.Threads = append(p.d.Threads, t)
	p.cur = &p.d.Threads[len(p.d.Threads)-1]
	if j9 != "" {
		p.byJ9[j9] = len(p.d.Threads) - 1
	}
}

// endThread derives the Java state of the finished thread: OpenJ9's state
// letters (R running, B blocked on a monitor, CW waiting on a condition: in
// Object.wait, sleep or a park; P parked; S suspended; Z dead) say less
// than java.lang.Thread.State, so the stack decides timed or not.
func (p *javacoreParser) endThread() {
	t := p.cur
	p.cur = nil
	if t == nil {
		return
	}
	if len(t.Frames) > 0 {
		for i := range t.Locks {
			if t.Locks[i].Frame < 0 {
				t.Locks[i].Frame = 0
			}
		}
	}
	if t.Status == "" {
		return
	}
	switch t.Status {
	case "R":
		t.State = StateRunnable
	case "B":
		t.State, t.StateDetail = StateBlocked, "on object monitor"
	case "CW", "P":
		t.State = StateWaiting
		if timedWait(t.Frames) {
			t.State = StateTimedWaiting
		}
		if t.Status == "P" {
			t.StateDetail = "parking"
		}
	case "S":
		t.State, t.StateDetail = StateWaiting, "suspended"
	case "Z":
		t.State = StateTerminated
	}
}

// timedWait reports a stack waiting with a timeout: sleep, parkNanos or
// parkUntil, or a wait whose caller passes a timeout (Object.wait(long)
// shows as wait(Object.java) with a line; untimed waits go through the
// same frames, so only sleep and timed parks are certain).
func timedWait(fr []Frame) bool {
	for i, f := range fr {
		if i > 4 {
			break
		}
		switch f.Method {
		case "sleep", "sleepImpl", "parkNanos", "parkUntil":
			return true
		}
	}
	return false
}

// blockLine reads "Waiting on: X@0x… Owned by: <unowned>", "Blocked on: …
// Owned by: "name" (J9VMThread:0x…, java/lang/Thread:0x…)", "Parked on: …".
func (p *javacoreParser) blockLine(rest string) {
	t := p.cur
	if t == nil {
		return
	}
	var action LockAction
	var obj string
	switch {
	case strings.HasPrefix(rest, "Waiting on: "):
		action, obj = LockWaitingOn, rest[len("Waiting on: "):]
	case strings.HasPrefix(rest, "Blocked on: "):
		action, obj = LockWaitingToLock, rest[len("Blocked on: "):]
	case strings.HasPrefix(rest, "Parked on: "):
		action, obj = LockParking, rest[len("Parked on: "):]
	default:
		return
	}
	owner := ""
	if i := strings.Index(obj, " Owned by: "); i >= 0 {
		obj, owner = obj[:i], obj[i+len(" Owned by: "):]
	}
	lock := javacoreObject(strings.TrimSpace(obj))
	// The block line precedes the stack; endThread ties it to the top frame.
	t.Locks = append(t.Locks, LockEvent{Action: action, Lock: lock, Frame: -1})
	if action == LockParking && owner != "" && owner != "<unowned>" {
		po := pendingOwner{thread: len(p.d.Threads) - 1, lock: lock}
		if v, ok := field(owner, "J9VMThread:"); ok {
			po.j9 = strings.ToLower(v)
		}
		if q := strings.LastIndexByte(owner, '"'); q > 0 && owner[0] == '"' {
			po.name = owner[1:q]
		}
		p.pending = append(p.pending, po)
	}
}

// resolveOwners gives parked-on synchronizers their owners: the owner holds
// the synchronizer as Thread.print -l would list it.
func (p *javacoreParser) resolveOwners() {
	for _, po := range p.pending {
		idx, ok := p.byJ9[po.j9]
		if !ok {
			for i := range p.d.Threads {
				if p.d.Threads[i].Name == po.name {
					idx, ok = i, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		o := &p.d.Threads[idx]
		o.OwnableSynchronizers = append(o.OwnableSynchronizers, po.lock)
		o.HasSynchronizerSection = true
	}
}

// javacoreObject parses "java/util/TaskQueue@0x000000030017D428" (older
// javacores add "/0x…" and a colon).
func javacoreObject(s string) Lock {
	s = strings.TrimSuffix(strings.TrimSpace(s), ":")
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return Lock{Class: strings.ReplaceAll(s, "/", ".")}
	}
	addr := s[at+1:]
	if i := strings.IndexAny(addr, "/ :"); i >= 0 {
		addr = addr[:i]
	}
	return Lock{Class: strings.ReplaceAll(s[:at], "/", "."), Address: normalizeAddress(addr)}
}

// lockSectionLine reads the JVM's deadlock report.
func (p *javacoreParser) lockSectionLine(tag, rest string) {
	switch tag {
	case "1LKDEADLOCK":
		p.d.Deadlocks = append(p.d.Deadlocks, Deadlock{})
		p.dl = &p.d.Deadlocks[len(p.d.Deadlocks)-1]
	case "2LKDEADLOCKTHR":
		if p.dl == nil {
			return
		}
		// `Thread "name" (0x…)`; the cycle closes on its first thread.
		name := rest
		if q1 := strings.IndexByte(rest, '"'); q1 >= 0 {
			if q2 := strings.LastIndexByte(rest, '"'); q2 > q1 {
				name = rest[q1+1 : q2]
			}
		}
		for _, n := range p.dl.Threads {
			if n == name {
				p.closeDeadlock(name)
				return
			}
		}
		p.dl.Threads = append(p.dl.Threads, name)
		p.dl.Edges = append(p.dl.Edges, DeadlockEdge{Thread: name})
	case "4LKDEADLOCKOBJ":
		if p.dl != nil && len(p.dl.Edges) > 0 {
			p.dl.Edges[len(p.dl.Edges)-1].WaitsFor = javacoreObject(strings.Fields(rest + " x")[0])
		}
	}
}

// closeDeadlock fills each edge's holder: the next thread in the cycle.
func (p *javacoreParser) closeDeadlock(first string) {
	dl := p.dl
	for i := range dl.Edges {
		dl.Edges[i].HeldBy = dl.Threads[(i+1)%len(dl.Threads)]
	}
	p.dl = nil
}

// field finds "key" in s and returns the value up to the next comma,
// parenthesis or space.
func field(s, key string) (string, bool) {
	i := strings.Index(s, key)
	if i < 0 {
		return "", false
	}
	v := s[i+len(key):]
	if j := strings.IndexAny(v, ",) "); j >= 0 {
		v = v[:j]
	}
	return v, v != ""
}

// hexOrDec reads "0x8D14A" or "12".
func hexOrDec(s string) int64 {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, _ := strconv.ParseInt(h, 16, 64)
		return n
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
