package threaddump

import "strings"

// Thread names that carry dump syntax.
//
// HotSpot prints a thread's name raw between quotes, so a name can hold
// newlines and whole forged thread entries, lock lines and a forged deadlock
// report. The layout still says where a name ends: an entry starts with a
// quote after a blank line, and its header ends with the closing `" #N ...
// nid=...` part that HotSpot itself prints. A line that starts with a quote
// but does not complete a header therefore opens a name, which runs to the
// next line that completes a header; the lines between are name text.
//
// The text cannot always tell. When that closing line itself starts with a
// quote right after a blank line, it reads just as well as a new entry, and
// the real end of the name may be further on. The parser then keeps the
// shortest reading, marks the threads that follow as Suspect until the
// text proves where the name ends (a line that completes a header without
// starting an entry) or the dump ends, and says so in Dump.Warnings.
// ParseOptions lets a caller that can see the live target settle it: a
// header whose nid is not a thread of the target, or was already taken, is
// name text.

// maxNameBytes bounds how far the parser looks for the end of a thread name.
// Beyond it the opening line is left as an unknown line, and the end of the
// name, when it comes, marks the threads before it as suspect.
const maxNameBytes = 1 << 20

// javaThreadSlack is how many more Java threads a dump may list than the
// JVM's java.threads.live counter: HotSpot hides some of its own Java
// threads (compiler threads, and on some versions the service, sweeper and
// notification threads) from that counter, and threads start and end
// between the two readings.
const javaThreadSlack = 12

// ParseOptions are checks against the live process a dump was taken from.
// The zero value checks nothing.
type ParseOptions struct {
	// ThreadExists reports whether nid (a Linux tid) is a thread of the
	// target. A header whose nid fails it, or whose nid an earlier thread
	// of the dump already has, is not a thread of its own but part of a
	// name.
	ThreadExists func(nid int64) bool
	// JavaThreads is the number of live Java threads the JVM reports
	// (hsperfdata java.threads.live); 0 when unknown. A dump that lists
	// clearly more gets a warning.
	JavaThreads int
}

// ParseHotSpot parses b as HotSpot text dumps (jstack, jcmd Thread.print),
// with the checks of o. It is for a caller that knows the format, e.g. one
// that took the dump itself and saw Dump.HasSuspects on a first parse.
func ParseHotSpot(b []byte, o ParseOptions) ([]*Dump, error) {
	text, err := decodeString(string(b))
	if err != nil {
		return nil, err
	}
	dumps := parseHotSpotWith(text, o)
	if len(dumps) == 0 {
		return nil, ErrNoThreadDump
	}
	return dumps, nil
}

// acceptHeader applies the caller's checks to a header's field text.
func (p *hotspotParser) acceptHeader(rest string) bool {
	if p.opts.ThreadExists == nil {
		return true
	}
	if !strings.Contains(rest, " nid=") {
		return true // not a HotSpot header: nothing to check
	}
	nid := headerNID(rest)
	_, dup := p.nids[nid]
	return nid > 0 && !dup && p.opts.ThreadExists(nid)
}

// headerNID returns the nid= of a header's field text, 0 when none.
func headerNID(rest string) int64 {
	i := strings.Index(rest, " nid=")
	if i < 0 {
		return 0
	}
	v := rest[i+len(" nid="):]
	if sp := strings.IndexByte(v, ' '); sp >= 0 {
		v = v[:sp]
	}
	return parseNID(v)
}

// foldsSpan reports whether a header repeats the nid of a thread read in the
// open span, with the live checks on. Forged entries sit inside a name,
// before the real header of the name's thread, so the earlier of the two is
// the forged one and the span up to this header is one name.
func (p *hotspotParser) foldsSpan(rest string) bool {
	s := p.susp
	if p.opts.ThreadExists == nil || s == nil || s.dump != p.dump || p.dump == nil {
		return false
	}
	nid := headerNID(rest)
	at, dup := p.nids[nid]
	return nid > 0 && dup && at >= s.thread && p.opts.ThreadExists(nid)
}

// closesName reports whether ln can end a thread name: it completes a
// header that passes the caller's checks. first says whether the line also
// reads as the start of a new entry (it opens with a quote).
func (p *hotspotParser) closesName(ln string) (q int, first, ok bool) {
	q, ok = headerSplit(ln)
	if !ok || !p.acceptHeader(ln[q+1:]) {
		return q, false, false
	}
	return q, ln[0] == '"' && q > 0, true
}

// openName handles a line that starts with a quote but does not complete a
// header: the start of a name that runs over several lines. It finds the
// line that ends the name and reads the whole entry header; it returns
// false when no line ends it.
func (p *hotspotParser) openName(ln string) bool {
	rejected := 0
	if q, hdr := headerSplit(ln); hdr && q > 0 {
		rejected++ // a header the caller's checks refused
	}
	// An entry starts after a blank line; a quoted line elsewhere (log
	// output cutting into the dump) opens nothing.
	if p.inDeadlock || !prevLineBlank(p.text, p.lineStart) {
		return false
	}
	start := p.pos
	if p.noCloseBefore > start {
		start = p.noCloseBefore
	}
	limit := p.lineStart + maxNameBytes
	pos := start
	for pos < len(p.text) && pos < limit {
		l, next := lineAt(p.text, pos)
		q, first, ok := p.closesName(l)
		if !ok {
			if p.opts.ThreadExists != nil {
				if _, hdr := headerSplit(l); hdr {
					rejected++
				}
			}
			pos = next
			continue
		}
		n := p.line // line of the opening quote
		nameStart := p.lineStart + 1
		p.line += strings.Count(p.text[p.pos:pos], "\n") + 1
		p.lineStart, p.pos = pos, next
		if first && prevLineBlank(p.text, pos) && p.susp == nil {
			// A suspect span can reach back over a piece's start.
			p.abort = p.abort || p.piece
			p.susp = &suspectSpan{line: n, nameStart: nameStart, thread: len(p.threads.buf) - p.threads.start,
				deadlocks: len(p.dump.Deadlocks), dump: p.dump, mark: p.opts.ThreadExists == nil}
		}
		if rejected > 0 {
			p.dump.Warnings = append(p.dump.Warnings, "the name of the thread at line "+itoa(n)+" spans lines "+itoa(n)+"-"+itoa(p.line)+
				": the thread entries in it name no thread of the process")
		}
		p.newThread(p.text[nameStart:pos+q], l[q+1:], n)
		return true
	}
	// No end in reach: no line before pos ends a name, and later searches
	// skip those lines, which keeps the parse linear. (With the live checks
	// a fold can free a nid again; a name that ends on a skipped line
	// naming it is then left unread, and its end marks the entries before
	// it suspect: no thread is forged that way.)
	p.noCloseBefore = pos
	return false
}

// prevLineBlank reports whether the line before the one at pos is blank.
func prevLineBlank(text string, pos int) bool {
	if pos == 0 {
		return false
	}
	prev := text[:pos-1] // without the previous line's '\n'
	if i := strings.LastIndexByte(prev, '\n'); i >= 0 {
		prev = prev[i+1:]
	}
	return strings.TrimLeft(prev, " \t\r") == ""
}

// danglingClose handles a line that ends a thread name when no name is open:
// the name's opening line was read as an entry of its own.
func (p *hotspotParser) danglingClose(ln string, q int) {
	if p.piece {
		// It changes threads read before this line, which may lie before
		// the piece: only the serial parse can tell.
		p.abort = true
		return
	}
	s := p.susp
	if s != nil && s.dump == p.dump && p.dump != nil {
		// The proof the suspect span waited for: everything from the
		// span's opening quote to here is one name.
		p.finishThread()
		for i := p.threads.start + s.thread; i < len(p.threads.buf); i++ {
			if nid := p.threads.buf[i].OSThreadID; p.nids != nil && p.nids[nid] == i-p.threads.start {
				delete(p.nids, nid)
			}
		}
		p.threads.buf = p.threads.buf[:p.threads.start+s.thread]
		p.marked = min(p.marked, s.thread)
		p.dump.Deadlocks = p.dump.Deadlocks[:s.deadlocks]
		p.inDeadlock, p.mounted = false, nil
		p.susp = nil
		p.dump.Warnings = append(p.dump.Warnings, "the name of the thread at line "+itoa(s.line)+" spans lines "+itoa(s.line)+"-"+itoa(p.line)+
			"; the thread entries between are part of it")
		p.newThread(p.text[s.nameStart:p.lineStart+q], ln[q+1:], s.line)
		return
	}
	p.closeSuspect()
	if p.dump == nil {
		p.implicitDump()
	}
	// The opening line looked like a header of its own: any entry before
	// this line may be part of the name.
	p.finishThread()
	for i := p.threads.start + p.marked; i < len(p.threads.buf); i++ {
		p.threads.buf[i].Suspect = true
	}
	for i := p.markedDL; i < len(p.dump.Deadlocks); i++ {
		p.dump.Deadlocks[i].Suspect = true
	}
	p.markedDL = len(p.dump.Deadlocks)
	p.inDeadlock, p.mounted = false, nil
	p.dump.Warnings = append(p.dump.Warnings, "line "+itoa(p.line)+" ends a thread name that starts on an earlier line; the thread entries before it may be part of that name")
	name := ln[:q]
	if len(name) > 0 && name[0] == '"' {
		name = name[1:]
	}
	p.newThread(name, ln[q+1:], p.line)
	p.marked = len(p.threads.buf) - p.threads.start - 1
}

// closeSuspect ends the open suspect span, if any, with its warning.
func (p *hotspotParser) closeSuspect() {
	s := p.susp
	if s == nil {
		return
	}
	p.susp = nil
	if !s.mark {
		return // nothing was marked: the live checks vouched for each thread
	}
	last := s.lastLine
	if last < s.line {
		last = s.line
	}
	s.dump.Warnings = append(s.dump.Warnings, "the name of the thread at line "+itoa(s.line)+" spans lines "+itoa(s.line)+"-"+itoa(last)+
		" or more; the entries between may be part of it (they are marked suspect)")
}

// checkJavaThreads compares the dump's Java threads with the JVM's count.
func (p *hotspotParser) checkJavaThreads(d *Dump) {
	if p.opts.JavaThreads <= 0 {
		return
	}
	n := 0
	for i := range d.Threads {
		if t := &d.Threads[i]; t.ID > 0 && !t.Virtual {
			n++
		}
	}
	if n > p.opts.JavaThreads+javaThreadSlack {
		d.Warnings = append(d.Warnings, "the dump lists "+itoa(n)+" Java threads but the JVM counts "+itoa(p.opts.JavaThreads)+
			" live: thread names may hold forged entries")
	}
}
