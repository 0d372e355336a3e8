package threaddump

import (
	"cmp"
	"slices"
	"strings"
)

// LockKind says what sort of lock a LockInfo is.
type LockKind string

// Lock kinds.
const (
	// KindMonitor is a Java object monitor (synchronized), including the
	// class initialization monitor.
	KindMonitor LockKind = "monitor"
	// KindSynchronizer is a java.util.concurrent ownable synchronizer or
	// other park blocker (ReentrantLock, ReentrantReadWriteLock, ...).
	KindSynchronizer LockKind = "synchronizer"
	// KindPark is a park with no blocker object (LockSupport.parkNanos in
	// a loop, as a ring buffer's producer waits for a free slot): the
	// dump names no object, so the code that parked stands for it, with
	// the address "park:<Class.method>".
	KindPark LockKind = "park"
)

// LockInfo is what one dump says about one lock: who owns it, who queues on
// it, and who waits on it for a signal (which is not contention).
type LockInfo struct {
	Kind LockKind
	Lock Lock
	// Owner holds the lock; nil when the dump does not say (a parked-on
	// synchronizer in a dump taken without -l, an owner the JVM hides).
	Owner *Thread
	// OwnerFrame is the index of the owner's frame that acquired the lock,
	// -1 when unknown.
	OwnerFrame int
	// Waiters are the threads that cannot go on until another thread acts
	// on this object: contention, of any WaitKind (entering or re-entering
	// the monitor, queued on the lock, or waiting for a signal inside work).
	Waiters []Waiter
	// Waiting are idle threads waiting on the object for a signal: a
	// pool's workers waiting for tasks (see IdleWait). Not contention.
	Waiting []Waiter
	// Releaser is, for a lock nobody holds whose waiters wait for a signal
	// (WaitObject, WaitCondition), a thread that works in the same code as
	// the waiters and is not waiting: the one that will notify them (a
	// group commit's flusher), where the dump tells which it is (see
	// releaser). ReleaserFrame is its frame in that code.
	Releaser      *Thread
	ReleaserFrame int
}

// Waiter is one thread queued on (or waiting for) a lock.
type Waiter struct {
	Thread *Thread
	Action LockAction
	Kind   WaitKind
	// Frame is the index of the frame where the thread waits.
	Frame int
	// Rule is the wait rule's verdict on a wait for a signal or a park on
	// a synchronizer (ApplyWaitRule); zero for a monitor entry, which is
	// always contention.
	Rule WaitRule
}

// isCondition tells a condition queue (waiting for a signal) from a lock
// (waiting for an owner to release it) among park blockers.
func isCondition(class string) bool {
	return strings.HasSuffix(class, "$ConditionObject") ||
		strings.HasSuffix(class, "$ConditionNode")
}

// isLockBlocker tells the park blockers that are locks (a thread parks on
// them until an owner releases them: ReentrantLock, ReentrantReadWriteLock,
// StampedLock, Semaphore and other AQS "Sync" classes) from the ones that
// are hand-offs or idle queues (ForkJoinPool, SynchronousQueue,
// CompletableFuture, CountDownLatch, conditions), which are waiting, not
// contention.
func isLockBlocker(class string) bool {
	if isCondition(class) || strings.Contains(class, "CountDownLatch") {
		return false
	}
	return strings.HasSuffix(class, "Sync") || strings.Contains(class, "Lock") ||
		strings.Contains(class, "Semaphore")
}

// ParkedWithoutBlocker reports a thread parked by LockSupport with no
// blocker object: the dump prints no "parking to wait for" line.
func (t *Thread) ParkedWithoutBlocker() bool {
	if t.State != StateWaiting && t.State != StateTimedWaiting || len(t.Frames) == 0 {
		return false
	}
	f := t.Frames[0]
	if f.Method != "park" || f.Class != "jdk.internal.misc.Unsafe" && f.Class != "sun.misc.Unsafe" {
		return false
	}
	for _, ev := range t.Locks {
		if ev.Action == LockParking {
			return false
		}
	}
	return true
}

// Holds reports the locks t owns. A monitor the thread entered but then
// released by calling Object.wait() on it still prints "- locked" in the
// frame that entered it; it is not held.
func (t *Thread) Holds() []Lock {
	var held []Lock
	for _, ev := range t.Locks {
		if ev.Action != LockLocked || ev.Lock.Address == "" {
			continue
		}
		if t.releasedByWait(ev.Lock.Address) {
			continue
		}
		dup := false
		for _, h := range held {
			if h.Address == ev.Lock.Address {
				dup = true // re-entered in another frame
				break
			}
		}
		if !dup {
			held = append(held, ev.Lock)
		}
	}
	held = append(held, t.OwnableSynchronizers...)
	return held
}

func (t *Thread) releasedByWait(addr string) bool {
	for _, ev := range t.Locks {
		if (ev.Action == LockWaitingOn || ev.Action == LockWaitingToRelock) && ev.Lock.Address == addr {
			return true
		}
	}
	return false
}

// BlockedOn returns the lock t is queued to acquire (contention), if any:
// monitor entry, re-entry after wait(), a park on a lock (not on a
// condition), or a class initialization another thread is running.
func (t *Thread) BlockedOn() (LockEvent, bool) {
	for _, ev := range t.Locks {
		switch ev.Action {
		case LockWaitingToLock, LockClassInit:
			return ev, true
		case LockWaitingToRelock:
			// JDK 9-11 also print "waiting to re-lock in wait()" under the
			// frame that entered the monitor of a thread still inside
			// wait() (JDK-8150689); only a BLOCKED thread really queues.
			if t.State == StateBlocked || t.State == StateNone && ev.Frame == 0 {
				return ev, true
			}
		case LockParking:
			if isLockBlocker(ev.Lock.Class) && ev.Lock.Address != "" {
				return ev, true
			}
		}
	}
	return LockEvent{}, false
}

// WaitsOn returns the monitor or condition t waits on for a signal, if any.
func (t *Thread) WaitsOn() (LockEvent, bool) {
	for _, ev := range t.Locks {
		switch ev.Action {
		case LockWaitingOn:
			if ev.Lock.Address != "" {
				return ev, true
			}
		case LockParking:
			if !isLockBlocker(ev.Lock.Class) && ev.Lock.Address != "" {
				return ev, true
			}
		}
	}
	return LockEvent{}, false
}

// AllThreads returns the dump's threads plus the virtual threads mounted on
// its carriers, which have stacks (and locks) of their own.
func (d *Dump) AllThreads() []*Thread {
	out := make([]*Thread, 0, len(d.Threads))
	for i := range d.Threads {
		t := &d.Threads[i]
		out = append(out, t)
		if t.Mounted != nil {
			out = append(out, t.Mounted)
		}
	}
	return out
}

// Locks builds the lock table of the dump: every lock some thread holds,
// queues on or waits on, ordered by number of waiters (most first), then
// class and address.
//
// The table is built in passes over the threads, each a method of
// lockTable, in an order that matters: the waits come first (they decide
// which threads are working), then the owners, which later passes only
// fill where an earlier one left none, and last the releasers, which need
// both the owners and the working threads.
func (d *Dump) Locks() []*LockInfo {
	threads := d.AllThreads()
	tb := newLockTable(threads)
	signal := signalWaits{program: d.ProgramOrganization()}
	// parked is made here, not in addWaits, so that it stays on the
	// stack: a map returned from a function is allocated on the heap.
	parked := map[string][]Waiter{}
	working := tb.addWaits(threads, &signal, parked)
	tb.addParkSites(parked)
	tb.addOwners(threads)
	tb.addParkBlockerOwners(threads)
	tb.addClassInitOwners(threads)
	out := tb.resolveReleasers(threads, working)
	sortLocks(out)
	return out
}

// lockTable is the lock table under construction, its locks by address.
type lockTable struct {
	byAddr  map[string]int // index in entries
	entries []lockEntry
	// slab holds the LockInfos, allocated together; it never grows, so
	// the pointers into it stay valid.
	slab []LockInfo
}

// lockEntry is a lock of the table and its signals: waits for a signal
// that are neither idle by their frames nor made contention by a held
// lock; they are contention when a thread works in the same code (see
// releaser), idle otherwise.
type lockEntry struct {
	li      *LockInfo
	signals []Waiter
	// holding are timed Object.wait()s of threads that hold another
	// lock: contention, unless the object and the locks they hold are
	// the waiting thread's alone (ownTimedWait, heldAlone).
	holding []Waiter
}

// newLockTable sizes the table for threads. Every lock is named by some
// thread's event: their number bounds the table, which is then built
// without growing.
func newLockTable(threads []*Thread) *lockTable {
	events := 0
	for _, t := range threads {
		events += len(t.Locks) + len(t.OwnableSynchronizers)
	}
	return &lockTable{
		byAddr:  make(map[string]int, events),
		entries: make([]lockEntry, 0, events),
		slab:    make([]LockInfo, 0, events),
	}
}

// get returns the index in entries of the lock at l's address, adding it
// as a lock of kind when it is new, and fills in its class when an earlier
// event named none. It may grow entries: index them after calling it.
func (tb *lockTable) get(l Lock, kind LockKind) int {
	i, ok := tb.byAddr[l.Address]
	if !ok {
		i = len(tb.entries)
		var li *LockInfo
		if len(tb.slab) < cap(tb.slab) {
			tb.slab = append(tb.slab, LockInfo{Kind: kind, Lock: l, OwnerFrame: -1})
			li = &tb.slab[len(tb.slab)-1]
		} else {
			li = &LockInfo{Kind: kind, Lock: l, OwnerFrame: -1}
		}
		tb.entries = append(tb.entries, lockEntry{li: li})
		tb.byAddr[l.Address] = i
	}
	if li := tb.entries[i].li; li.Lock.Class == "" {
		li.Lock.Class = l.Class
	}
	return i
}

// addWaits enters every thread that queues on a lock or waits on one for
// a signal, and adds to parked the parks with no blocker inside work, by
// call site (see addParkSites). It returns working, which marks the
// threads neither queued on a lock nor waiting for a signal: the
// candidates of releaser.
func (tb *lockTable) addWaits(threads []*Thread, signal *signalWaits, parked map[string][]Waiter) (working []bool) {
	working = make([]bool, len(threads))
	for ti, t := range threads {
		blocked, isBlocked := t.BlockedOn()
		if isBlocked && tb.addBlocked(t, blocked, signal) {
			// Idle on a semaphore: neither working nor waiting otherwise.
			continue
		}
		ev, waits := t.WaitsOn()
		working[ti] = !isBlocked && !waits
		if !isBlocked && !waits && t.ParkedWithoutBlocker() {
			working[ti] = false
			_, rule := signal.of(t, LockEvent{Action: LockParking})
			if !rule.Idle {
				site := rule.CallSite.Function()
				parked[site] = append(parked[site], Waiter{Thread: t, Action: LockParking, Kind: WaitCondition, Frame: 0, Rule: rule})
			}
		}
		if waits {
			tb.addSignalWait(t, ev, signal)
		}
	}
	return working
}

// addBlocked enters t, queued on the lock of blocked, among the lock's
// waiters. It reports whether it entered t as idle instead (among the
// lock's Waiting): a semaphore's run-loop wait for work.
func (tb *lockTable) addBlocked(t *Thread, blocked LockEvent, signal *signalWaits) (idle bool) {
	kind := KindMonitor
	if blocked.Action == LockParking {
		kind = KindSynchronizer
	}
	i := tb.get(blocked.Lock, kind)
	li := tb.entries[i].li
	w := Waiter{Thread: t, Action: blocked.Action, Kind: blockedKind(blocked), Frame: blocked.Frame}
	if blocked.Action == LockParking {
		// The rule's call site names where the thread's code asks
		// for the lock. A semaphore has permits, not an owner: a
		// park on one is contention unless the rule finds the run
		// loop's own wait for work (a server's reserved threads)
		// and the thread holds nothing. A park on a lock that has
		// an owner (ReentrantLock, ReentrantReadWriteLock) always
		// queues.
		_, w.Rule = signal.of(t, blocked)
	}
	if blocked.Action == LockParking && strings.Contains(blocked.Lock.Class, "Semaphore") {
		if w.Rule.Idle && !t.HoldsOtherThan(blocked.Lock.Address) {
			li.Waiting = append(li.Waiting, w)
			return true
		}
	}
	li.Waiters = append(li.Waiters, w)
	return false
}

// addSignalWait enters t, waiting on the monitor or condition of ev for a
// signal: as a waiter when it holds another lock, as idle when the wait
// rule says so, and otherwise among the entry's signals, for the
// releaser to judge.
func (tb *lockTable) addSignalWait(t *Thread, ev LockEvent, signal *signalWaits) {
	kind := KindMonitor
	if ev.Action == LockParking {
		kind = KindSynchronizer
	}
	i := tb.get(ev.Lock, kind)
	e := &tb.entries[i]
	li := e.li
	waitKind, rule := signal.of(t, ev)
	w := Waiter{Thread: t, Action: ev.Action, Kind: waitKind, Frame: ev.Frame, Rule: rule}
	if ev.Action != LockParking && ChildProcessWait(ev.Lock.Class) {
		// A wait for a child process to exit: I/O, whatever the stack
		// around it, unless the thread holds a lock others need.
		w.Rule.Idle, w.Rule.IO = true, true
		rule = w.Rule
	}
	switch {
	case t.HoldsOtherThan(ev.Lock.Address) && (rule.Idle || timedObjectWait(w)):
		// Contention when another thread asks for what it holds;
		// otherwise idle or a pause (resolveReleasers).
		e.holding = append(e.holding, w)
	case t.HoldsOtherThan(ev.Lock.Address):
		// Whoever needs what it holds waits too.
		li.Waiters = append(li.Waiters, w)
	case rule.Idle:
		li.Waiting = append(li.Waiting, w)
	default:
		// Called from inside work: contention by default. The
		// releaser below names who the waiters wait for.
		e.signals = append(e.signals, w)
	}
}

// addParkSites enters the parks with no blocker as locks of their own.
// LockSupport.park with no blocker names nothing waited for but the code
// that parked. One thread parked at a call site is a pause (a frame
// limiter's parkNanos); two or more at once queue for the same thing (a
// ring buffer's producers waiting for a free slot), and the call site
// stands for the lock.
func (tb *lockTable) addParkSites(parked map[string][]Waiter) {
	for site, ws := range parked {
		if len(ws) < 2 {
			continue
		}
		i := tb.get(Lock{Address: "park:" + site, Class: ws[0].Rule.CallSite.Class}, KindPark)
		tb.entries[i].li.Waiters = append(tb.entries[i].li.Waiters, ws...)
	}
}

// addOwners names the owners the threads' own events tell: a monitor's
// owner entered it ("- locked") and is not inside wait() on it; a
// synchronizer's owner lists it among its ownable synchronizers.
func (tb *lockTable) addOwners(threads []*Thread) {
	for _, t := range threads {
		for _, ev := range t.Locks {
			if ev.Action != LockLocked || ev.Lock.Address == "" || t.releasedByWait(ev.Lock.Address) {
				continue
			}
			i := tb.get(ev.Lock, KindMonitor)
			li := tb.entries[i].li
			if li.Owner == nil {
				li.Owner, li.OwnerFrame = t, ev.Frame
			} else if li.Owner == t && ev.Frame > li.OwnerFrame {
				li.OwnerFrame = ev.Frame // the outermost entry acquired it
			}
		}
		for _, s := range t.OwnableSynchronizers {
			i := tb.get(s, KindSynchronizer)
			li := tb.entries[i].li
			li.Kind = KindSynchronizer
			if li.Owner == nil {
				li.Owner = t
			}
		}
	}
}

// addParkBlockerOwners names the owners of park blockers that have none
// yet from the waiters' side: Thread.dump_to_file (JSON) names a park
// blocker's owner by thread id.
func (tb *lockTable) addParkBlockerOwners(threads []*Thread) {
	var byID map[int64]*Thread
	for _, t := range threads {
		if t.ParkBlockerOwner == 0 {
			continue
		}
		ev, ok := t.BlockedOn()
		if !ok || ev.Action != LockParking {
			continue
		}
		if byID == nil {
			byID = map[int64]*Thread{}
			for _, x := range threads {
				byID[x.ID] = x
			}
		}
		if i, ok := tb.byAddr[ev.Lock.Address]; ok && tb.entries[i].li.Owner == nil {
			tb.entries[i].li.Owner = byID[t.ParkBlockerOwner]
		}
	}
}

// addClassInitOwners names the owner of each class initialization that
// has none: the thread running the class's static initializer.
func (tb *lockTable) addClassInitOwners(threads []*Thread) {
	for i := range tb.entries {
		li := tb.entries[i].li
		if !strings.HasPrefix(li.Lock.Address, "class-init:") || li.Owner != nil {
			continue
		}
		for _, t := range threads {
			if i := clinitFrame(t, li.Lock.Class); i >= 0 {
				li.Owner, li.OwnerFrame = t, i
				break
			}
		}
	}
}

// resolveReleasers finishes each lock and returns the table, unsorted.
// A lock with signal waits or without an owner gets its releaser, when the
// working threads tell one; its signal waits then join its waiters.
func (tb *lockTable) resolveReleasers(threads []*Thread, working []bool) []*LockInfo {
	out := make([]*LockInfo, 0, len(tb.entries))
	work := &workIndex{threads: threads, working: working}
	instances := map[string]int{}
	for i := range tb.entries {
		instances[tb.entries[i].li.Lock.Class]++
	}
	for i := range tb.entries {
		li, ws := tb.entries[i].li, tb.entries[i].signals
		li.ReleaserFrame = -1
		if h := tb.entries[i].holding; len(h) > 0 {
			if len(ws) == 0 && !h[0].Rule.Idle && ownTimedWait(li, h) && tb.heldAlone(h[0].Thread, li.Lock.Address) {
				// A pause on its own object, holding only locks
				// no other thread of the dump asks for.
				w := h[0]
				w.Rule.Idle, w.Rule.Sleep = true, true
				li.Waiting = append(li.Waiting, w)
				out = append(out, li)
				continue
			}
			for _, w := range h {
				if w.Rule.Idle && tb.heldAlone(w.Thread, li.Lock.Address) {
					// Idle by the rule, holding only locks no
					// other thread asks for (the JDK executor's
					// worker lock its task runs under).
					li.Waiting = append(li.Waiting, w)
					continue
				}
				// Whoever needs what it holds waits too.
				li.Waiters = append(li.Waiters, w)
			}
		}
		if len(ws) > 0 || li.Owner == nil {
			r, f, _ := releaser(li, ws, work, instances)
			if r == nil && ownTimedWait(li, ws) {
				// Nobody else uses the object, and no working thread
				// is named to notify it: a pause, not a wait for
				// another thread.
				w := ws[0]
				w.Rule.Idle, w.Rule.Sleep = true, true
				li.Waiting = append(li.Waiting, w)
				li.ReleaserFrame = -1
				out = append(out, li)
				continue
			}
			// ws is this lock's own: it becomes the list when there is
			// none yet, not copied.
			li.Waiters = appendOrTake(li.Waiters, ws)
			if li.Owner == nil {
				li.Releaser, li.ReleaserFrame = r, f
			}
		}
		out = append(out, li)
	}
	return out
}

// ownTimedWait says ws is a single timed Object.wait() on a lock no other
// thread of the dump uses: no owner, no other waiter, none waiting.
func ownTimedWait(li *LockInfo, ws []Waiter) bool {
	if len(ws) != 1 || li.Owner != nil || len(li.Waiters) > 0 || len(li.Waiting) > 0 {
		return false
	}
	return timedObjectWait(ws[0])
}

// timedObjectWait says w is a timed Object.wait().
func timedObjectWait(w Waiter) bool {
	return w.Action == LockWaitingOn && w.Kind == WaitObject && w.Thread.State == StateTimedWaiting
}

// heldAlone says no other thread of the dump asks for a lock that t holds
// besides the one at except: none is queued for it, waits on it or parks
// on it (a scheduler's worker that keeps its own lock while it runs a job).
func (tb *lockTable) heldAlone(t *Thread, except string) bool {
	for _, l := range t.Holds() {
		if l.Address == except {
			continue
		}
		i, ok := tb.byAddr[l.Address]
		if !ok {
			continue
		}
		e := &tb.entries[i]
		if len(e.li.Waiters) > 0 || len(e.li.Waiting) > 0 || len(e.signals) > 0 || len(e.holding) > 0 {
			return false
		}
	}
	return true
}

// appendOrTake appends ws to list, or returns ws itself when list is
// empty: ws must be the caller's own, used nowhere else after.
func appendOrTake(list, ws []Waiter) []Waiter {
	if len(list) == 0 && len(ws) > 0 {
		return ws
	}
	return append(list, ws...)
}

// sortLocks orders a lock table by number of waiters (most first), then
// class and address. Addresses are the table's keys: no two locks compare
// equal, so the order does not depend on the sort. A dump of thousands of
// locks has few classes and fixed-width hexadecimal addresses, so the keys
// are compared as numbers: a class's rank among the table's classes, and
// an address's value where its text is of the form whose order the value
// keeps (see hexAddress); as text otherwise.
func sortLocks(out []*LockInfo) {
	type sortKey struct {
		waiters, class int
		addr           uint64
		hex            bool
		li             *LockInfo
	}
	classes := map[string]int{}
	for _, li := range out {
		classes[li.Lock.Class] = 0
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	slices.Sort(names)
	for i, c := range names {
		classes[c] = i
	}
	keys := make([]sortKey, len(out))
	for i, li := range out {
		addr, hex := hexAddress(li.Lock.Address)
		keys[i] = sortKey{len(li.Waiters), classes[li.Lock.Class], addr, hex, li}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.waiters != b.waiters {
			return cmp.Compare(b.waiters, a.waiters)
		}
		if a.class != b.class {
			return cmp.Compare(a.class, b.class)
		}
		if a.hex && b.hex {
			return cmp.Compare(a.addr, b.addr)
		}
		return strings.Compare(a.li.Lock.Address, b.li.Lock.Address)
	})
	for i := range keys {
		out[i] = keys[i].li
	}
}

// hexAddress reads an address of the form HotSpot prints, "0x" and 16
// lowercase hexadecimal digits. Two such texts are in the order of their
// values: same length, and the digits' bytes in the order of the digits.
func hexAddress(s string) (uint64, bool) {
	if len(s) != 18 || s[0] != '0' || s[1] != 'x' {
		return 0, false
	}
	var v uint64
	for i := 2; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// signalWaits caches signalKind and idleWait by what they read: the
// frames from the wait on, the action and (signalKind) the blocker's
// class; nothing else of the thread (waits.go: a change there that reads
// more must add it to the key). Threads with one stack share one Frames
// slice (see Thread.Frames), and a pool of a thousand idle workers then
// costs one look at their frames, not a thousand.
type signalWaits struct {
	// program is the dump's ProgramOrganization, read by the rule.
	program string
	m       map[signalWaitKey]signalWait
}

type signalWaitKey struct {
	stack  stackRef
	frame  int
	action LockAction
}

type signalWait struct {
	class string
	kind  WaitKind
	rule  WaitRule
}

// of returns signalKind(t, ev) and the wait rule's verdict.
func (c *signalWaits) of(t *Thread, ev LockEvent) (WaitKind, WaitRule) {
	if len(t.Frames) == 0 {
		return signalKind(t, ev), c.rule(t, ev)
	}
	k := signalWaitKey{refOf(t.Frames), ev.Frame, ev.Action}
	v, ok := c.m[k]
	if !ok || v.class != ev.Lock.Class {
		v = signalWait{ev.Lock.Class, signalKind(t, ev), c.rule(t, ev)}
		if c.m == nil {
			c.m = map[signalWaitKey]signalWait{}
		}
		c.m[k] = v
	}
	return v.kind, v.rule
}

// rule applies the wait rule to a wait: a park's blocker class is part
// of its machinery (ApplyParkRule), a monitor's object is not (its own
// methods are the code that takes it).
func (c *signalWaits) rule(t *Thread, ev LockEvent) WaitRule {
	if ev.Action == LockParking {
		return ApplyParkRule(t.Frames, ev.Frame, c.program, ev.Lock.Class)
	}
	return ApplyMonitorWaitRule(t.Frames, ev.Frame, c.program, ev.Lock.Class)
}

// stackRef identifies a Frames slice by its memory: equal refs are equal
// frames.
type stackRef struct {
	first *Frame
	n     int
}

func refOf(frames []Frame) stackRef {
	if len(frames) == 0 {
		return stackRef{}
	}
	return stackRef{&frames[0], len(frames)}
}

// releaser finds, for a lock whose waiters wait for a signal, the threads
// that work on what they wait for without waiting themselves: they run the
// program frame that called wait() (or await) in the waiters, which is the
// critical section (a group commit whose leader flushes), or a method of
// the waited object's own class (a dedicated flusher in Log.flush).
//
// evidence says some thread does: the waits are then contention. The
// releaser is named only where the dump tells who it is: a thread in the
// section (a runnable one preferred), or else the one thread running the
// class's code while the dump waits on one instance of that class. Where
// objects are per task (a transaction per worker), every worker runs the
// class's code on an instance of its own, and the one that holds the
// waited instance cannot be told: none is named. signals are the waits not
// yet counted in li.Waiters or li.Waiting; instances counts the dump's
// locks by class.
func releaser(li *LockInfo, signals []Waiter, work *workIndex, instances map[string]int) (named *Thread, frame int, evidence bool) {
	var section Frame
	found := false
	for _, ws := range [2][]Waiter{signals, li.Waiters} {
		for _, w := range ws {
			if w.Kind != WaitObject && w.Kind != WaitCondition && w.Kind != WaitRelock {
				continue
			}
			for i := max(w.Frame, 0); i < len(w.Thread.Frames); i++ {
				if f := w.Thread.Frames[i]; !IsJDKClass(f.Class) {
					section, found = f, true
					break
				}
			}
			if found {
				break
			}
		}
		if found {
			break
		}
	}
	ownClass := li.Lock.Class
	if IsJDKClass(ownClass) {
		ownClass = "" // java.lang.Object and the like say nothing
	}
	if !found && ownClass == "" {
		return nil, -1, false
	}
	waiters := [3][]Waiter{signals, li.Waiters, li.Waiting}
	// Most locks have a waiter or two: a look through them costs less than
	// a set of them.
	var waitingSet map[*Thread]bool
	if len(signals)+len(li.Waiters)+len(li.Waiting) > 8 {
		waitingSet = map[*Thread]bool{}
		for _, ws := range waiters {
			for _, w := range ws {
				waitingSet[w.Thread] = true
			}
		}
	}
	waiting := func(t *Thread) bool {
		if waitingSet != nil {
			return waitingSet[t]
		}
		for _, ws := range waiters {
			for _, w := range ws {
				if w.Thread == t {
					return true
				}
			}
		}
		return false
	}
	work.build()
	// pick is the first runnable thread of hits not waiting on the lock,
	// else the first one (first in the order of threads); n counts them.
	pick := func(hits []frameHit) (best *Thread, bestFrame, n int) {
		bestFrame = -1
		bestIdx := -1
		for _, h := range hits {
			for _, ti := range work.stacks[h.stack] {
				t := work.threads[ti]
				if waiting(t) {
					continue
				}
				n++
				run, bestRun := t.State == StateRunnable, best != nil && best.State == StateRunnable
				if best == nil || run && !bestRun || run == bestRun && ti < bestIdx {
					best, bestFrame, bestIdx = t, h.frame, ti
				}
			}
		}
		return best, bestFrame, n
	}
	if found {
		if t, f, _ := pick(work.byMethod[methodKey{section.Class, section.Method}]); t != nil {
			if ownClass != "" && instances[ownClass] > 1 {
				// Objects per task (a transaction per worker, H2's row
				// locks): a thread in the section may hold another
				// instance, or be on its way to wait on this one; which
				// holds the waited one cannot be told.
				return nil, -1, true
			}
			return t, f, true
		}
	}
	if ownClass == "" {
		return nil, -1, false
	}
	t, f, n := pick(work.byClass[ownClass])
	if n == 1 && instances[ownClass] == 1 {
		return t, f, true
	}
	return nil, -1, n > 0
}

// workIndex finds the threads that run a method or a class without waiting
// for a signal themselves (the candidates of releaser) by lookup, built
// once per lock table: scanning every thread's frames for every lock made
// a dump of a few thousand threads, each waiting on an object of its own,
// cost locks x threads x frames (0.2 s of CPU for 2,000 threads). It
// indexes each distinct Frames slice once (threads with one stack share
// one), then lists the threads that run it.
type workIndex struct {
	threads []*Thread
	// working marks the candidates: threads neither queued on a lock
	// (re-locking another object after its own wait) nor waiting for a
	// signal themselves (on another object).
	working []bool
	built   bool
	// stacks lists, per distinct Frames slice, the indexes in threads of
	// the working threads that run it, in order.
	stacks   [][]int
	byMethod map[methodKey][]frameHit
	byClass  map[string][]frameHit
}

type methodKey struct{ class, method string }

// frameHit is a distinct stack (its index in workIndex.stacks) and its
// first frame that runs a given method or class.
type frameHit struct{ stack, frame int }

func (w *workIndex) build() {
	if w.built {
		return
	}
	w.built = true
	w.byMethod = map[methodKey][]frameHit{}
	w.byClass = map[string][]frameHit{}
	ids := map[stackRef]int{}
	for ti, t := range w.threads {
		if !w.working[ti] || len(t.Frames) == 0 {
			continue
		}
		r := refOf(t.Frames)
		id, ok := ids[r]
		if ok {
			w.stacks[id] = append(w.stacks[id], ti)
			continue
		}
		id = len(w.stacks)
		ids[r] = id
		w.stacks = append(w.stacks, []int{ti})
		for i, f := range t.Frames {
			k := methodKey{f.Class, f.Method}
			if hs := w.byMethod[k]; len(hs) == 0 || hs[len(hs)-1].stack != id {
				w.byMethod[k] = append(hs, frameHit{id, i})
			}
			if hs := w.byClass[f.Class]; len(hs) == 0 || hs[len(hs)-1].stack != id {
				w.byClass[f.Class] = append(hs, frameHit{id, i})
			}
		}
	}
}

func clinitFrame(t *Thread, class string) int {
	for i, f := range t.Frames {
		if f.Method == "<clinit>" && f.Class == class {
			return i
		}
	}
	return -1
}

// Cycle is a deadlock: each thread waits for a lock the next one holds.
type Cycle struct {
	Threads []*Thread
	// Locks[i] is the lock Threads[i] waits for, held by Threads[i+1].
	Locks []Lock
}

// FindDeadlocks detects cycles in the wait-for graph of monitors, ownable
// synchronizers and class initializations. It finds what the JVM reports,
// and also cycles the JVM does not look for (class initialization) or cannot
// see in the dump format at hand.
func (d *Dump) FindDeadlocks() []Cycle { return d.FindDeadlocksIn(d.Locks()) }

// FindDeadlocksIn is FindDeadlocks on a lock table Locks already gave for
// this dump, so a caller that needs both builds the table once.
func (d *Dump) FindDeadlocksIn(locks []*LockInfo) []Cycle {
	owner := map[string]*Thread{}
	for _, li := range locks {
		if li.Owner != nil {
			owner[li.Lock.Address] = li.Owner
		}
	}
	threads := d.AllThreads()
	next := map[*Thread]*Thread{}
	waitLock := map[*Thread]Lock{}
	for _, t := range threads {
		if ev, ok := t.BlockedOn(); ok {
			if o := owner[ev.Lock.Address]; o != nil && o != t {
				next[t] = o
				waitLock[t] = ev.Lock
			}
		}
	}
	// Each thread waits for at most one lock, so the graph is functional:
	// walk from every thread, colouring as we go.
	if len(next) == 0 {
		return nil // nobody waits for a lock a thread holds
	}
	const (
		unseen = iota
		onPath
		done
	)
	color := make(map[*Thread]int, len(next))
	var cycles []Cycle
	for _, start := range threads {
		// A walk from a thread that waits for no owner ends where it
		// starts: only the others can lead into a cycle.
		if next[start] == nil || color[start] != unseen {
			continue
		}
		var path []*Thread
		t := start
		for t != nil && color[t] == unseen {
			color[t] = onPath
			path = append(path, t)
			t = next[t]
		}
		if t != nil && color[t] == onPath {
			// t closes a cycle: it starts at t's position in the path.
			i := 0
			for path[i] != t {
				i++
			}
			c := Cycle{Threads: append([]*Thread(nil), path[i:]...)}
			for _, th := range c.Threads {
				c.Locks = append(c.Locks, waitLock[th])
			}
			cycles = append(cycles, c)
		}
		for _, th := range path {
			color[th] = done
		}
	}
	return cycles
}
