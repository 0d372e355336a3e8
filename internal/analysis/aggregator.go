// Package analysis holds the Aggregator: the one place where ctprof turns
// Snapshots into statistics and findings. Every mode feeds it and every sink
// (text and JSON summary, folded stacks, later metrics and HTML) reads its
// Summary, so no two outputs can disagree.
package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Aggregator accumulates snapshots. It is not safe for concurrent use.
type Aggregator struct {
	snapshots int
	live      *live
	dumps     int
	last      *threaddump.Dump
	first     time.Time
	lastT     time.Time

	locks     map[string]*lockAgg
	deadlocks map[string]*deadlockAgg
	threads   map[threadKey]*threadAgg
	stacks    map[string]*FoldedStack
	warnings  []string
}

// New returns an empty Aggregator.
func New() *Aggregator {
	return &Aggregator{
		locks:     map[string]*lockAgg{},
		deadlocks: map[string]*deadlockAgg{},
		threads:   map[threadKey]*threadAgg{},
		stacks:    map[string]*FoldedStack{},
		live:      newLive(),
	}
}

type lockAgg struct {
	ref          LockRef
	dumpsBlocked int
	waiterSum    int
	peak         int
	// from the latest dump with the peak number of waiters
	owner, ownerFrame, ownerLockFrame *string
	waitFrames                        map[string]int
	waiterNames                       []string
	ownerKnownAnywhere                bool
}

type deadlockAgg struct {
	summary DeadlockSummary
	jvm     bool
	ctprof  bool
	lastSeq int
}

// threadKey identifies a thread across the dumps of one JVM. The Java id is
// unique for the JVM's life; the name and native id guard against dumps
// from different JVMs.
type threadKey struct {
	name string
	id   int64
	os   int64
}

type threadAgg struct {
	seen                    int
	firstCPU, lastCPU       time.Duration
	firstElapsed, lastElaps time.Duration
	firstTime, lastTime     time.Time
	hasCPU                  bool
	stack                   string
	sameStack               bool
	state                   threaddump.State
	topFrame                string
	waitOwner               string
}

// FoldedStack counts one distinct stack (root first) over all dumps.
type FoldedStack struct {
	// Frames are "Class.method" names, root first.
	Frames []string
	// Count is the number of thread samples with this stack; ByState splits
	// it by Java state.
	Count   int
	ByState map[string]int
	// ByLock counts the samples of this stack that queued on a lock, by
	// LockSummary.ID, so a flame graph of one lock's waiters can be drawn.
	ByLock map[string]int
}

// Add feeds one snapshot.
func (a *Aggregator) Add(s *sample.Snapshot) {
	a.snapshots++
	if s.Threads != nil {
		a.addLive(s)
	}
	if s.Dump == nil {
		return
	}
	d := s.Dump
	a.dumps++
	seq := a.dumps
	a.last = d
	if !d.Time.IsZero() {
		if a.first.IsZero() {
			a.first = d.Time
		}
		a.lastT = d.Time
	}
	for _, w := range d.Warnings {
		a.warn(prefixSource(s.Source, d, w))
	}
	if d.UnknownLines > 0 {
		ex := ""
		if len(d.UnknownSamples) > 0 {
			u := d.UnknownSamples[0]
			ex = fmt.Sprintf(" (first at line %d: %q)", u.Line, truncate(u.Text, 80))
		}
		a.warn(prefixSource(s.Source, d, fmt.Sprintf("%d lines not understood%s", d.UnknownLines, ex)))
	}
	locks := d.Locks()
	a.addLocks(locks)
	a.addDeadlocks(d, seq)
	a.addThreads(d, s.Time, ownersOfWaits(locks))
	a.addStacks(d, lockOfWaiter(locks))
}

func prefixSource(src string, d *threaddump.Dump, msg string) string {
	if src == "" {
		return msg
	}
	return fmt.Sprintf("%s (dump at line %d): %s", src, d.StartLine, msg)
}

func (a *Aggregator) warn(w string) {
	const maxWarnings = 50
	for _, x := range a.warnings {
		if x == w {
			return
		}
	}
	if len(a.warnings) < maxWarnings {
		a.warnings = append(a.warnings, w)
	}
}

func lockKey(kind, class, addr string) string { return kind + "|" + class + "|" + addr }

// ownersOfWaits maps each queued thread to the owner of the lock it queues
// on ("" when unknown), so a thread that waits behind a changing owner is
// not mistaken for a stuck one.
func ownersOfWaits(locks []*threaddump.LockInfo) map[*threaddump.Thread]string {
	m := map[*threaddump.Thread]string{}
	for _, li := range locks {
		owner := ""
		if li.Owner != nil {
			owner = li.Owner.Name + "\x00" + fmt.Sprint(li.Owner.ID)
		}
		for _, w := range li.Waiters {
			m[w.Thread] = owner
		}
	}
	return m
}

func (a *Aggregator) addLocks(locks []*threaddump.LockInfo) {
	for _, li := range locks {
		if len(li.Waiters) == 0 {
			continue
		}
		k := lockKey(string(li.Kind), li.Lock.Class, li.Lock.Address)
		la := a.locks[k]
		if la == nil {
			la = &lockAgg{ref: LockRef{Kind: string(li.Kind), Class: li.Lock.Class, Address: li.Lock.Address}, waitFrames: map[string]int{}}
			a.locks[k] = la
		}
		n := len(li.Waiters)
		la.dumpsBlocked++
		la.waiterSum += n
		if li.Owner != nil {
			la.ownerKnownAnywhere = true
		}
		if n >= la.peak {
			la.peak = n
			la.owner, la.ownerFrame, la.ownerLockFrame = nil, nil, nil
			if o := li.Owner; o != nil {
				la.owner = strPtr(o.Name)
				if len(o.Frames) > 0 {
					la.ownerFrame = strPtr(o.Frames[0].String())
				}
				if li.OwnerFrame >= 0 && li.OwnerFrame < len(o.Frames) {
					la.ownerLockFrame = strPtr(o.Frames[li.OwnerFrame].String())
				}
			}
			la.waiterNames = la.waiterNames[:0]
			for i, w := range li.Waiters {
				if i == 10 {
					break
				}
				la.waiterNames = append(la.waiterNames, w.Thread.Name)
			}
		}
		for _, w := range li.Waiters {
			if f := waitFrame(w); f != "" {
				la.waitFrames[f]++
			}
		}
	}
}

// waitFrame is the first application frame at or below the frame where the
// thread waits: where the program asked for the lock, not the JDK internals
// it went through.
func waitFrame(w threaddump.Waiter) string {
	fr := w.Thread.Frames
	start := w.Frame
	if start < 0 {
		start = 0
	}
	for i := start; i < len(fr); i++ {
		if !isLibraryFrame(fr[i].Class) {
			return fr[i].String()
		}
	}
	if start < len(fr) {
		return fr[start].String()
	}
	return ""
}

// isLibraryFrame reports frames of the JDK itself.
func isLibraryFrame(class string) bool {
	for _, p := range []string{"java.", "javax.", "jdk.", "sun.", "com.sun."} {
		if strings.HasPrefix(class, p) {
			return true
		}
	}
	return false
}

func (a *Aggregator) addDeadlocks(d *threaddump.Dump, seq int) {
	note := func(threads []string, locks []LockRef, jvm bool) {
		key := cycleKey(threads)
		da := a.deadlocks[key]
		if da == nil {
			da = &deadlockAgg{summary: DeadlockSummary{Threads: threads, Locks: locks}}
			a.deadlocks[key] = da
		}
		if jvm {
			da.jvm = true
		} else {
			da.ctprof = true
		}
		if da.lastSeq != seq {
			da.lastSeq = seq
			da.summary.Dumps++
		}
	}
	for _, dl := range d.Deadlocks {
		var locks []LockRef
		for _, e := range dl.Edges {
			kind := "monitor"
			if e.Synchronizer {
				kind = "synchronizer"
			}
			locks = append(locks, LockRef{Kind: kind, Class: e.WaitsFor.Class, Address: e.WaitsFor.Address})
		}
		note(append([]string(nil), dl.Threads...), locks, true)
	}
	for _, c := range d.FindDeadlocks() {
		var names []string
		var locks []LockRef
		for i, t := range c.Threads {
			names = append(names, t.Name)
			kind := "monitor"
			if ev, ok := t.BlockedOn(); ok && ev.Action == threaddump.LockParking {
				kind = "synchronizer"
			}
			locks = append(locks, LockRef{Kind: kind, Class: c.Locks[i].Class, Address: c.Locks[i].Address})
		}
		note(names, locks, false)
	}
}

// cycleKey identifies a cycle by its set of threads, whatever thread the
// report starts with.
func cycleKey(names []string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

func (a *Aggregator) addThreads(d *threaddump.Dump, when time.Time, waitOwner map[*threaddump.Thread]string) {
	if when.IsZero() {
		when = d.Time
	}
	for i := range d.Threads {
		t := &d.Threads[i]
		k := threadKey{name: t.Name, id: t.ID, os: t.OSThreadID}
		ta := a.threads[k]
		stack := stackKey(t)
		top := ""
		if len(t.Frames) > 0 {
			top = t.Frames[0].String()
		}
		owner := waitOwner[t]
		if ta == nil {
			ta = &threadAgg{firstCPU: t.CPU, firstElapsed: t.Elapsed, firstTime: when, hasCPU: t.HasCPU, stack: stack, sameStack: true, state: t.State, topFrame: top, waitOwner: owner}
			a.threads[k] = ta
		} else if stack != ta.stack || t.State != ta.state || owner != ta.waitOwner {
			ta.sameStack = false
		}
		ta.seen++
		ta.lastCPU, ta.lastElaps, ta.lastTime = t.CPU, t.Elapsed, when
		ta.hasCPU = ta.hasCPU && t.HasCPU
	}
}

func stackKey(t *threaddump.Thread) string {
	var b strings.Builder
	for _, f := range t.Frames {
		b.WriteString(f.Class)
		b.WriteByte('.')
		b.WriteString(f.Method)
		b.WriteByte(':')
		b.WriteString(itoa(f.Line))
		b.WriteByte(';')
	}
	return b.String()
}

func itoa(n int) string { return fmt.Sprint(n) }

// lockOfWaiter maps each thread queued on a lock to the lock's ID.
func lockOfWaiter(locks []*threaddump.LockInfo) map[*threaddump.Thread]string {
	m := map[*threaddump.Thread]string{}
	for _, li := range locks {
		id := lockKey(string(li.Kind), li.Lock.Class, li.Lock.Address)
		for _, w := range li.Waiters {
			m[w.Thread] = id
		}
	}
	return m
}

func (a *Aggregator) addStacks(d *threaddump.Dump, waitsOn map[*threaddump.Thread]string) {
	for _, t := range d.AllThreads() {
		if len(t.Frames) == 0 {
			continue
		}
		frames := make([]string, len(t.Frames))
		for i, f := range t.Frames {
			frames[len(t.Frames)-1-i] = f.Function()
		}
		key := strings.Join(frames, ";")
		fs := a.stacks[key]
		if fs == nil {
			fs = &FoldedStack{Frames: frames, ByState: map[string]int{}}
			a.stacks[key] = fs
		}
		fs.Count++
		fs.ByState[stateName(t.State)]++
		if id, ok := waitsOn[t]; ok {
			if fs.ByLock == nil {
				fs.ByLock = map[string]int{}
			}
			fs.ByLock[id]++
		}
	}
}

func stateName(s threaddump.State) string {
	if s == threaddump.StateNone {
		return "NONE"
	}
	return string(s)
}

// Stacks returns the distinct stacks seen, most frequent first.
func (a *Aggregator) Stacks() []*FoldedStack {
	out := make([]*FoldedStack, 0, len(a.stacks))
	for _, s := range a.stacks {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return strings.Join(out[i].Frames, ";") < strings.Join(out[j].Frames, ";")
	})
	return out
}

func strPtr(s string) *string { return &s }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
