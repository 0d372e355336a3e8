package analysis

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// dumpTick is what one thread dump tells the rest of the Aggregator: which
// Java thread runs on which OS thread, and which lock each waiter queues on.
type dumpTick struct {
	dump *threaddump.Dump
	// pools are PoolName of the names of dump.Threads, by index.
	pools []string
	// waitsOn maps each queued thread to its lock's ID.
	waitsOn map[*threaddump.Thread]string
	// lockWaiters lists, per lock ID, its queued threads, and lockOwners
	// the threads that hold it.
	lockWaiters map[string][]*threaddump.Thread
	lockOwners  map[string][]*threaddump.Thread
	// members lists the indexes in dump.Threads of each pool's threads,
	// built on first use (poolMembers).
	members map[string][]int
}

// poolMembers returns the indexes in dump.Threads of the threads of pool,
// indexing the dump's pools once, when a resource first asks.
func (t *dumpTick) poolMembers(pool string) []int {
	if t.members == nil {
		t.members = map[string][]int{}
		for i := range t.dump.Threads {
			p := ""
			if i < len(t.pools) {
				p = t.pools[i]
			} else {
				p = PoolName(t.dump.Threads[i].Name)
			}
			t.members[p] = append(t.members[p], i)
		}
	}
	return t.members[pool]
}

type deadlockAgg struct {
	summary DeadlockSummary
	jvm     bool
	ctprof  bool
	lastSeq int
}

// threadKey identifies a Java thread across the dumps of one JVM. The Java
// id is unique for the JVM's life; the name and native id guard against
// dumps from different JVMs.
type threadKey struct {
	name string
	id   int64
	os   int64
}

type threadAgg struct {
	seen                    int
	lastSeq                 int
	firstCPU, lastCPU       time.Duration
	firstElapsed, lastElaps time.Duration
	firstTime, lastTime     time.Time
	hasCPU                  bool
	// stack is stackHash of the thread's frames in its first dump, only
	// compared with later ones (a key string per thread would cost as
	// much as the stack: 10,000 threads of 30 frames, some 13 MB).
	stack     uint64
	sameStack bool
	state     threaddump.State
	topFrame  string
	waitOwner string
}

// FoldedStack counts one distinct stack (root first) over all dumps.
type FoldedStack struct {
	// Frames are "Class.method" names, root first.
	Frames []string
	// Lines are the frames' source positions (root first, as Frames):
	// a Java frame's file and line as the dump printed them, a native
	// frame's from its binary's line table. A position is kept only while
	// every sample of the stack had it: one that differed between samples
	// (a method that waits at two lines) is left empty. Nil when none was
	// known.
	Lines []symbolize.FrameLine
	// Count is the number of thread samples with this stack; ByLabel splits
	// it by Java state, thread pool, lock and thread (the labels of a
	// pprof export). A label's count only ever grows: the OTLP export
	// sends the growth.
	Count   int
	ByLabel map[StackLabel]int
	// ByLock counts the samples of this stack that queued on a lock, by
	// LockSummary.ID, so a flame graph of one lock's waiters can be drawn.
	ByLock map[string]int
	// Blocked is the time the BLOCKED samples of a label stand for: each
	// one the span of its dump (the time since the dump before) or, for a
	// native target's, of its sample. A run-wide mean interval times the
	// count would not only grow: a thread with no new BLOCKED sample
	// would lose blocked time when the mean fell, and the OTLP deltas
	// would not add up.
	Blocked map[StackLabel]time.Duration
	// threads are the thread names ByLabel holds (at most
	// maxStackThreads), each its own key (threadName); nil in a copy.
	threads map[string]string
}

// StackLabel says who ran a stack: the thread's state and its pool
// (PoolName of the thread name), the lock it queued on (a LockSummary.ID,
// as in ByLock; "" when it did not queue), and the thread's own name
// (made safe and bounded, OtherThreads beyond the stack's bound on names;
// "" for a thread without one).
type StackLabel struct {
	State  string
	Pool   string
	Lock   string
	Thread string
}

// SortedLabels are the labels of byLabel (a FoldedStack's ByLabel) in one
// order, by state, pool, lock and thread: map order would make outputs
// differ from run to run.
func SortedLabels(byLabel map[StackLabel]int) []StackLabel {
	out := slices.Collect(maps.Keys(byLabel))
	slices.SortFunc(out, func(x, y StackLabel) int {
		return cmp.Or(strings.Compare(x.State, y.State), strings.Compare(x.Pool, y.Pool),
			strings.Compare(x.Lock, y.Lock), strings.Compare(x.Thread, y.Thread))
	})
	return out
}

// InState counts the samples of this stack in one Java state.
func (s *FoldedStack) InState(state string) int {
	n := 0
	for l, c := range s.ByLabel {
		if l.State == state {
			n += c
		}
	}
	return n
}

// maxJavaThreads bounds the per-Java-thread table of a long series; threads
// absent from the latest dump are forgotten first.
const maxJavaThreads = 20000

func (a *Aggregator) addDump(s *snapshot.Snapshot, dt time.Duration) dumpTick {
	d := s.Dump
	a.dumps++
	seq := a.dumps
	a.lastDump = d
	if !d.Time.IsZero() {
		if a.firstDumpT.IsZero() {
			a.firstDumpT = d.Time
		}
		a.lastDumpT = d.Time
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
	tick := dumpTick{dump: d, pools: a.dumpPoolNames(d), waitsOn: map[*threaddump.Thread]string{}, lockWaiters: map[string][]*threaddump.Thread{}, lockOwners: map[string][]*threaddump.Thread{}}
	locks := s.DumpLocks
	if locks == nil {
		locks = d.Locks()
	}
	span := a.dumpSpan(s)
	a.addJavaLocks(withoutSuspects(locks), span, &tick, seq)
	a.addDeadlocks(d, locks, seq)
	a.addJavaThreads(d, s.Time, seq, ownersOfWaits(locks))
	a.addStacks(d, tick.pools, tick.waitsOn, jniThreads(s), s.Futexes, span)
	a.noteLastWaits(locks, tick.waitsOn)

	states := map[string]int{}
	for i := range d.Threads {
		states[stateName(d.Threads[i].State)]++
	}
	t := s.Time
	if t.IsZero() {
		t = d.Time
	}
	if !t.IsZero() {
		ts := a.timeline("java_threads_by_state")
		for _, st := range []string{"RUNNABLE", "BLOCKED", "WAITING", "TIMED_WAITING"} {
			ts.add(st, t, float64(states[st]))
		}
	}
	return tick
}

// dumpPoolNames returns PoolName of the names of d.Threads, by index, and
// keeps them for the Summary's pool table of the last dump: computed once
// per dump for the stack labels, the live threads and the pool table.
func (a *Aggregator) dumpPoolNames(d *threaddump.Dump) []string {
	pools := make([]string, len(d.Threads))
	// A dump has a few pools of many threads: each pool's name is
	// allocated once, the others are found by their bytes.
	seen := map[string]string{}
	var buf []byte
	for i := range d.Threads {
		name := d.Threads[i].Name
		var ok bool
		buf = appendPoolName(buf[:0], name)
		if pools[i], ok = seen[string(buf)]; !ok {
			pools[i] = string(buf)
			seen[pools[i]] = pools[i]
		}
	}
	a.lastDumpPools = pools
	return pools
}

// dumpSpan is the time a dump stands for: the time since the previous dump
// (not since the previous /proc sample: dumps are spaced by the pause
// budget or --dump-interval, and weighing their waiters by the sample
// interval would undercount queued time by the ratio of the two). The
// first dump stands for the sample interval, which is known when it
// arrives (a mean dump spacing is not), so counters built on it never go
// back; dump files have no interval and their first dump counts no time.
func (a *Aggregator) dumpSpan(s *snapshot.Snapshot) time.Duration {
	at := s.Time
	if at.IsZero() {
		at = s.Dump.Time
	}
	prev := a.lockIdx.prevDumpAt
	if !at.IsZero() {
		a.lockIdx.prevDumpAt = at
	}
	if !at.IsZero() && !prev.IsZero() && at.After(prev) {
		return at.Sub(prev)
	}
	return s.Interval
}

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

// waitFrame is the first application frame at or below the frame where the
// thread waits: where the program asked for the lock, not the JDK internals
// it went through.
func waitFrame(w threaddump.Waiter) string {
	if c := w.Rule.CallSite; c.Class != "" {
		// Where the thread's own code calls into the waiting machinery
		// (a pool's borrow, not the library's own queue inside it).
		return c.String()
	}
	return appFrameFrom(w.Thread.Frames, max(w.Frame, 0))
}

// appFrameFrom returns the first frame at or below start that is not the
// JDK's own, or the frame at start when every one is.
func appFrameFrom(fr []threaddump.Frame, start int) string {
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

func (a *Aggregator) addDeadlocks(d *threaddump.Dump, locks []*threaddump.LockInfo, seq int) {
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
		if dl.Suspect {
			continue // read inside a thread name: may be forged
		}
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
	for _, c := range d.FindDeadlocksIn(locks) {
		if allSuspect(c.Threads) {
			continue // every thread may be an entry forged inside a thread name
		}
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

// withoutSuspects is the lock table without what rests on suspect threads
// (entries read inside another thread's name, which may be forged): their
// waits are dropped, and a suspect owner is not named. A lock left with
// no waiter is left out. The dump's warnings already say which lines.
func withoutSuspects(locks []*threaddump.LockInfo) []*threaddump.LockInfo {
	any := false
	for _, li := range locks {
		if li.Owner != nil && li.Owner.Suspect || li.Releaser != nil && li.Releaser.Suspect {
			any = true
		}
		for _, w := range li.Waiters {
			any = any || w.Thread.Suspect
		}
	}
	if !any {
		return locks
	}
	out := make([]*threaddump.LockInfo, 0, len(locks))
	for _, li := range locks {
		c := *li
		c.Waiters = nil
		for _, w := range li.Waiters {
			if !w.Thread.Suspect {
				c.Waiters = append(c.Waiters, w)
			}
		}
		if len(li.Waiters) > 0 && len(c.Waiters) == 0 {
			continue
		}
		if c.Owner != nil && c.Owner.Suspect {
			c.Owner, c.OwnerFrame = nil, -1
		}
		if c.Releaser != nil && c.Releaser.Suspect {
			c.Releaser, c.ReleaserFrame = nil, -1
		}
		out = append(out, &c)
	}
	return out
}

// allSuspect reports whether every thread is threaddump.Thread.Suspect.
func allSuspect(threads []*threaddump.Thread) bool {
	for _, t := range threads {
		if !t.Suspect {
			return false
		}
	}
	return len(threads) > 0
}

// cycleKey identifies a cycle by its set of threads, whatever thread the
// report starts with.
func cycleKey(names []string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

func (a *Aggregator) addJavaThreads(d *threaddump.Dump, when time.Time, seq int, waitOwner map[*threaddump.Thread]string) {
	if when.IsZero() {
		when = d.Time
	}
	// A first dump fills the table: sized once, not grown step by step,
	// and its threads allocated together (slab never grows).
	var slab []threadAgg
	if len(a.jthreads) == 0 {
		a.jthreads = make(map[threadKey]*threadAgg, len(d.Threads))
		slab = make([]threadAgg, 0, len(d.Threads))
	}
	// Threads of one dump often share one Frames slice (the parser keeps
	// identical stacks once): each is hashed, and its top frame named, once.
	type stackInfo struct {
		hash uint64
		top  string
	}
	stacks := map[stackRef]stackInfo{}
	for i := range d.Threads {
		t := &d.Threads[i]
		k := threadKey{name: t.Name, id: t.ID, os: t.OSThreadID}
		ta := a.jthreads[k]
		var si stackInfo
		if len(t.Frames) > 0 {
			r := stackRef{&t.Frames[0], len(t.Frames)}
			var ok bool
			if si, ok = stacks[r]; !ok {
				si = stackInfo{stackHash(t.Frames), t.Frames[0].String()}
				stacks[r] = si
			}
		}
		stack := si.hash
		owner := waitOwner[t]
		if ta == nil {
			top := si.top
			if len(slab) < cap(slab) {
				slab = slab[:len(slab)+1]
				ta = &slab[len(slab)-1]
			} else {
				ta = new(threadAgg)
			}
			*ta = threadAgg{firstCPU: t.CPU, firstElapsed: t.Elapsed, firstTime: when, hasCPU: t.HasCPU, stack: stack, sameStack: true, state: t.State, topFrame: top, waitOwner: owner}
			a.jthreads[k] = ta
		} else if stack != ta.stack || t.State != ta.state || owner != ta.waitOwner ||
			t.State == threaddump.StateBlocked && owner == "" {
			// A BLOCKED thread is stuck only behind the same named owner:
			// one re-entering a monitor nobody is seen to hold (a group
			// commit's writers after a notify) moves with the convoy.
			ta.sameStack = false
		}
		ta.seen++
		ta.lastSeq = seq
		ta.lastCPU, ta.lastElaps, ta.lastTime = t.CPU, t.Elapsed, when
		ta.hasCPU = ta.hasCPU && t.HasCPU
	}
	if len(a.jthreads) > maxJavaThreads {
		for k, ta := range a.jthreads {
			if ta.lastSeq != seq {
				delete(a.jthreads, k)
			}
		}
	}
}

// stackRef identifies a Frames slice by its memory, to hash a slice that
// threads share once.
type stackRef struct {
	first *threaddump.Frame
	n     int
}

// stackSeed seeds stackHash; the hashes are only compared within the process.
var stackSeed = maphash.MakeSeed()

// stackFrame is what makes two stacks the same for stackHash and
// appendStackKey: each frame's class, method and line.
type stackFrame struct {
	class, method string
	line          int
}

// stackHash hashes the class, method and line of every frame, in order.
// Empty stacks hash to 0.
func stackHash(frames []threaddump.Frame) uint64 {
	var h uint64
	for _, f := range frames {
		x := maphash.Comparable(stackSeed, stackFrame{f.Class, f.Method, f.Line})
		h = (bits.RotateLeft64(h, 29) ^ x) * 0x9e3779b97f4a7c15
	}
	return h
}

// appendStackKey appends the frames' "Class.method:line;" sequence to b.
func appendStackKey(b []byte, t *threaddump.Thread) []byte {
	for _, f := range t.Frames {
		b = append(b, f.Class...)
		b = append(b, '.')
		b = append(b, f.Method...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(f.Line), 10)
		b = append(b, ';')
	}
	return b
}

// addStacks counts the dump's stacks; pools are PoolName of the names of
// d.Threads, by index.
func (a *Aggregator) addStacks(d *threaddump.Dump, pools []string, waitsOn map[*threaddump.Thread]string, native map[int64]*procfs.Thread, futexes []snapshot.FutexWait, span time.Duration) {
	// Threads with one stack often share one Frames slice: its key is
	// built and looked up once.
	byRef := map[stackRef]*FoldedStack{}
	count := func(t *threaddump.Thread, pool string) {
		if len(t.Frames) == 0 {
			return
		}
		if nt := native[t.OSThreadID]; nt != nil {
			// A thread blocked in a native method's code: its Java
			// frames go on into the native ones the sampler unwound,
			// counted at its native resource when it is contended.
			lock := waitsOn[t]
			if lock == "" {
				lock = a.jniResource(nt, futexes)
			}
			countStack(a.jniFoldedStack(t.Frames, nt.Stack), StackLabel{State: stateName(t.State), Pool: pool, Thread: t.Name}, lock, span)
			return
		}
		r := stackRef{&t.Frames[0], len(t.Frames)}
		fs := byRef[r]
		if fs == nil {
			fs = a.foldedStack(t.Frames)
			byRef[r] = fs
		}
		countStack(fs, StackLabel{State: stateName(t.State), Pool: pool, Thread: t.Name}, waitsOn[t], span)
	}
	// In the order of AllThreads: each thread, then the virtual thread
	// mounted on it.
	for i := range d.Threads {
		t := &d.Threads[i]
		count(t, pools[i])
		if m := t.Mounted; m != nil {
			count(m, PoolName(m.Name))
		}
	}
	if len(a.stacks) > a.opts.MaxStacks {
		a.pruneStacks()
	}
}

// foldedStack returns the entry of frames (top first) in the stack table,
// creating it. The key is built in a reused buffer and looked up without a
// copy; only a stack seen for the first time allocates its frames. A
// 4,000-thread dump is mostly stacks seen before.
func (a *Aggregator) foldedStack(fr []threaddump.Frame) *FoldedStack {
	key := a.foldKey[:0]
	for i := len(fr) - 1; i >= 0; i-- {
		if i < len(fr)-1 {
			key = append(key, ';')
		}
		key = append(key, fr[i].Class...)
		key = append(key, '.')
		key = append(key, fr[i].Method...)
	}
	a.foldKey = key
	fs := a.stacks[string(key)]
	if fs == nil {
		frames := make([]string, len(fr))
		for i, f := range fr {
			frames[len(fr)-1-i] = f.Function()
		}
		fs = &FoldedStack{Frames: frames, Lines: javaLines(fr), ByLabel: map[StackLabel]int{}}
		a.stacks[string(key)] = fs
		return fs
	}
	if fs.Lines != nil {
		for i, f := range fr {
			keepLine(fs.Lines, len(fr)-1-i, f.File, f.Line)
		}
	}
	return fs
}

// javaLines are the source positions of a Java stack's frames (top
// first), root first as FoldedStack.Lines; nil when the dump printed none.
func javaLines(fr []threaddump.Frame) []symbolize.FrameLine {
	var out []symbolize.FrameLine
	for i, f := range fr {
		if f.File == "" || f.Line <= 0 {
			continue
		}
		if out == nil {
			out = make([]symbolize.FrameLine, len(fr))
		}
		out[len(fr)-1-i] = symbolize.FrameLine{File: f.File, Line: f.Line}
	}
	return out
}

// keepLine keeps lines[i] only if a new sample of the stack has the same
// position there: a stack is folded by its functions, and a line that not
// every sample had would be claimed for all of them.
func keepLine(lines []symbolize.FrameLine, i int, file string, line int) {
	if l := lines[i]; l.File != "" && (l.File != file || l.Line != line) {
		lines[i] = symbolize.FrameLine{}
	}
}

// countStack counts one sample of fs by label, with the lock it queued on
// (a LockSummary.ID; "" when it did not) and its thread named by the
// stack's bound on names (threadName); span is the time the sample stands
// for (FoldedStack.Blocked; 0: unknown).
func countStack(fs *FoldedStack, label StackLabel, lock string, span time.Duration) {
	fs.Count++
	label.Lock = lock
	// A pool is a thread's name with its digits as N: the target's, made
	// safe and bounded as the name is.
	label.Pool = threadLabel(label.Pool)
	label.Thread = fs.threadName(label.Thread)
	fs.ByLabel[label]++
	if label.State == "BLOCKED" && span > 0 {
		if fs.Blocked == nil {
			fs.Blocked = map[StackLabel]time.Duration{}
		}
		fs.Blocked[label] += span
	}
	if lock != "" {
		if fs.ByLock == nil {
			fs.ByLock = map[string]int{}
		}
		fs.ByLock[lock]++
	}
}

// pruneStacks merges all but the commonest MaxStacks/2 distinct stacks into
// one entry, so totals stay right while memory stays bounded (and the next
// prune is half a table away).
func (a *Aggregator) pruneStacks() {
	all := make([]*FoldedStack, 0, len(a.stacks))
	keys := make(map[*FoldedStack]string, len(a.stacks))
	for k, s := range a.stacks {
		all = append(all, s)
		keys[s] = k
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Count > all[j].Count })
	if a.stacksOther == nil {
		a.stacksOther = &FoldedStack{Frames: []string{OtherStacks}, ByLabel: map[StackLabel]int{}}
	}
	o := a.stacksOther
	for _, s := range all[a.opts.MaxStacks/2:] {
		o.Count += s.Count
		// (other stacks) is bounded in thread names as any stack is:
		// a name it holds keeps its count, a name past its bound joins
		// OtherThreads (the OTLP delta looks there for it). In the
		// labels' order, so which names it keeps does not depend on
		// the map's.
		for _, k := range SortedLabels(s.ByLabel) {
			v, b := s.ByLabel[k], s.Blocked[k]
			k.Thread = o.threadName(k.Thread)
			o.ByLabel[k] += v
			if b > 0 {
				if o.Blocked == nil {
					o.Blocked = map[StackLabel]time.Duration{}
				}
				o.Blocked[k] += b
			}
		}
		for k, v := range s.ByLock {
			if o.ByLock == nil {
				o.ByLock = map[string]int{}
			}
			o.ByLock[k] += v
		}
		delete(a.stacks, keys[s])
	}
}

func stateName(s threaddump.State) string {
	if s == threaddump.StateNone {
		return "NONE"
	}
	return string(s)
}

// Stacks returns the distinct stacks seen, most frequent first. The
// returned stacks are copies the caller may keep.
func (a *Aggregator) Stacks() []*FoldedStack {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*FoldedStack, 0, len(a.stacks)+1)
	for _, s := range a.stacks {
		out = append(out, copyStack(s))
	}
	if a.stacksOther != nil {
		out = append(out, copyStack(a.stacksOther))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return strings.Join(out[i].Frames, ";") < strings.Join(out[j].Frames, ";")
	})
	return out
}

func copyStack(s *FoldedStack) *FoldedStack {
	// Lines are copied: the table's entry forgets a line later samples
	// disagree on.
	c := &FoldedStack{Frames: s.Frames, Lines: slices.Clone(s.Lines), Count: s.Count, ByLabel: make(map[StackLabel]int, len(s.ByLabel))}
	for k, v := range s.ByLabel {
		c.ByLabel[k] = v
	}
	if s.Blocked != nil {
		c.Blocked = maps.Clone(s.Blocked)
	}
	if s.ByLock != nil {
		c.ByLock = make(map[string]int, len(s.ByLock))
		for k, v := range s.ByLock {
			c.ByLock[k] = v
		}
	}
	return c
}

// jniThreads are the threads of a JVM's sample with native stacks (its
// threads queued on or holding a JNI library's lock), by OS thread id;
// nil when there are none.
func jniThreads(s *snapshot.Snapshot) map[int64]*procfs.Thread {
	if s.Target.Kind != snapshot.KindJVM {
		return nil
	}
	var out map[int64]*procfs.Thread
	for i := range s.Threads {
		if len(s.Threads[i].Stack) > 0 {
			if out == nil {
				out = map[int64]*procfs.Thread{}
			}
			out[int64(s.Threads[i].TID)] = &s.Threads[i]
		}
	}
	return out
}

// jniFoldedStack is the stack table's entry of Java frames (top first)
// continued by native frames (innermost first) above them.
func (a *Aggregator) jniFoldedStack(fr []threaddump.Frame, st []symbolize.StackFrame) *FoldedStack {
	frames := make([]string, 0, len(fr)+len(st))
	for i := len(fr) - 1; i >= 0; i-- {
		frames = append(frames, fr[i].Function())
	}
	for i := len(st) - 1; i >= 0; i-- {
		frames = append(frames, st[i].Name())
	}
	key := strings.Join(frames, ";")
	fs := a.stacks[key]
	if fs == nil {
		fs = &FoldedStack{Frames: frames, ByLabel: map[StackLabel]int{}}
		a.stacks[key] = fs
	}
	return fs
}
