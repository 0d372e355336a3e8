package threaddump

import (
	"sort"
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
func (d *Dump) Locks() []*LockInfo {
	threads := d.AllThreads()
	byAddr := map[string]*LockInfo{}
	get := func(l Lock, kind LockKind) *LockInfo {
		li := byAddr[l.Address]
		if li == nil {
			li = &LockInfo{Kind: kind, Lock: l, OwnerFrame: -1}
			byAddr[l.Address] = li
		}
		if li.Lock.Class == "" {
			li.Lock.Class = l.Class
		}
		return li
	}
	// signals are waits for a signal that are neither idle by their frames
	// nor made contention by a held lock: they are contention when a
	// thread works in the same code (see releaser), idle otherwise.
	signals := map[*LockInfo][]Waiter{}
	for _, t := range threads {
		if ev, ok := t.BlockedOn(); ok {
			kind := KindMonitor
			if ev.Action == LockParking {
				kind = KindSynchronizer
			}
			li := get(ev.Lock, kind)
			li.Waiters = append(li.Waiters, Waiter{Thread: t, Action: ev.Action, Kind: blockedKind(ev), Frame: ev.Frame})
		}
		if ev, ok := t.WaitsOn(); ok {
			kind := KindMonitor
			if ev.Action == LockParking {
				kind = KindSynchronizer
			}
			li := get(ev.Lock, kind)
			w := Waiter{Thread: t, Action: ev.Action, Kind: signalKind(t, ev), Frame: ev.Frame}
			switch {
			case holdsOther(t, ev.Lock.Address):
				// Whoever needs what it holds waits too.
				li.Waiters = append(li.Waiters, w)
			case idleWait(t, ev):
				li.Waiting = append(li.Waiting, w)
			default:
				signals[li] = append(signals[li], w)
			}
		}
	}
	// Owners: a monitor's owner entered it ("- locked") and is not inside
	// wait() on it; a synchronizer's owner lists it among its ownable
	// synchronizers.
	for _, t := range threads {
		for _, ev := range t.Locks {
			if ev.Action != LockLocked || ev.Lock.Address == "" || t.releasedByWait(ev.Lock.Address) {
				continue
			}
			li := get(ev.Lock, KindMonitor)
			if li.Owner == nil {
				li.Owner, li.OwnerFrame = t, ev.Frame
			} else if li.Owner == t && ev.Frame > li.OwnerFrame {
				li.OwnerFrame = ev.Frame // the outermost entry acquired it
			}
		}
		for _, s := range t.OwnableSynchronizers {
			li := get(s, KindSynchronizer)
			li.Kind = KindSynchronizer
			if li.Owner == nil {
				li.Owner = t
			}
		}
	}
	// Thread.dump_to_file (JSON) names a park blocker's owner by thread id.
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
		if li := byAddr[ev.Lock.Address]; li != nil && li.Owner == nil {
			li.Owner = byID[t.ParkBlockerOwner]
		}
	}
	// Class initialization: the owner is the thread running the class's
	// static initializer.
	for addr, li := range byAddr {
		if !strings.HasPrefix(addr, "class-init:") || li.Owner != nil {
			continue
		}
		for _, t := range threads {
			if i := clinitFrame(t, li.Lock.Class); i >= 0 {
				li.Owner, li.OwnerFrame = t, i
				break
			}
		}
	}
	out := make([]*LockInfo, 0, len(byAddr))
	work := &workIndex{threads: threads}
	instances := map[string]int{}
	for _, li := range byAddr {
		instances[li.Lock.Class]++
	}
	for _, li := range byAddr {
		li.ReleaserFrame = -1
		if ws := signals[li]; len(ws) > 0 || li.Owner == nil {
			r, f, evidence := releaser(li, ws, work, instances)
			if evidence {
				li.Waiters = append(li.Waiters, ws...)
			} else {
				li.Waiting = append(li.Waiting, ws...)
			}
			if li.Owner == nil {
				li.Releaser, li.ReleaserFrame = r, f
			}
		}
		out = append(out, li)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if len(a.Waiters) != len(b.Waiters) {
			return len(a.Waiters) > len(b.Waiters)
		}
		if a.Lock.Class != b.Lock.Class {
			return a.Lock.Class < b.Lock.Class
		}
		return a.Lock.Address < b.Lock.Address
	})
	return out
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
	for _, w := range append(append([]Waiter(nil), signals...), li.Waiters...) {
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
	ownClass := li.Lock.Class
	if IsJDKClass(ownClass) {
		ownClass = "" // java.lang.Object and the like say nothing
	}
	if !found && ownClass == "" {
		return nil, -1, false
	}
	waiting := map[*Thread]bool{}
	for _, ws := range [][]Waiter{signals, li.Waiters, li.Waiting} {
		for _, w := range ws {
			waiting[w.Thread] = true
		}
	}
	work.build()
	// pick is the first runnable thread of hits not waiting on the lock,
	// else the first one; n counts them.
	pick := func(hits []frameHit) (best *Thread, bestFrame, n int) {
		bestFrame = -1
		for _, h := range hits {
			t := work.threads[h.thread]
			if waiting[t] {
				continue
			}
			n++
			if best == nil || t.State == StateRunnable && best.State != StateRunnable {
				best, bestFrame = t, h.frame
			}
		}
		return best, bestFrame, n
	}
	if found {
		if t, f, _ := pick(work.byMethod[methodKey{section.Class, section.Method}]); t != nil {
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
// cost locks x threads x frames (0.2 s of CPU for 2,000 threads).
type workIndex struct {
	threads  []*Thread
	built    bool
	byMethod map[methodKey][]frameHit
	byClass  map[string][]frameHit
}

type methodKey struct{ class, method string }

// frameHit is a thread (its index in threads) and its first frame that
// runs a given method or class.
type frameHit struct{ thread, frame int }

func (w *workIndex) build() {
	if w.built {
		return
	}
	w.built = true
	w.byMethod = map[methodKey][]frameHit{}
	w.byClass = map[string][]frameHit{}
	for ti, t := range w.threads {
		if _, ok := t.WaitsOn(); ok {
			continue // waiting for a signal itself (on another object): not working
		}
		if _, ok := t.BlockedOn(); ok {
			continue // queued on a lock (re-locking another object after its own wait): not working
		}
		for i, f := range t.Frames {
			k := methodKey{f.Class, f.Method}
			if hs := w.byMethod[k]; len(hs) == 0 || hs[len(hs)-1].thread != ti {
				w.byMethod[k] = append(hs, frameHit{ti, i})
			}
			if hs := w.byClass[f.Class]; len(hs) == 0 || hs[len(hs)-1].thread != ti {
				w.byClass[f.Class] = append(hs, frameHit{ti, i})
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
	const (
		unseen = iota
		onPath
		done
	)
	color := map[*Thread]int{}
	var cycles []Cycle
	for _, start := range threads {
		if color[start] != unseen {
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
