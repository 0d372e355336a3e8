package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/nativewait"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"golang.org/x/sys/unix"
)

// Native resources: what a native target's threads wait for, by wait site
// and kind of primitive over all the addresses waited on (a condition per
// transaction is one resource with many waiters), with each thread's
// verdict from the native wait rule (internal/nativewait). The resource's
// key holds no address, so it is the same after a restart and on every
// host that runs the binary; the lock table keeps the instances (holder,
// exact waits, address) as detail.

// nativeVerdict is one blocked thread's verdict at one sample.
type nativeVerdict struct {
	w nativewait.Wait
	// resource is the contention site a contended thread counts at, and
	// addr the futex word (0 when not a futex wait).
	resource string
	addr     uint64
	// kernel: the verdict rests on the kernel's view alone.
	kernel bool
}

// nativeCacheKey says a thread's verdict can be reused: the sampler keeps
// a thread's stack slice while the thread has not moved, so the same
// stack, system call, state and operation give the same verdict.
type nativeCacheKey struct {
	stack   *symbolize.StackFrame
	depth   int
	syscall int
	state   byte
	arg1    uint64
	events  procfs.EventSet
}

// nativeWaits follows the native wait model over the run.
type nativeWaits struct {
	sites map[string]*nativeSiteAgg
	// verdicts and out are classifyNative's reused result.
	verdicts []nativeVerdict
	out      []*nativeVerdict
	// tramp learns the process's own thread-start wrappers (a thread's
	// slot keeps the generation its verdict was judged in).
	tramp nativewait.Trampolines
	// last is the latest sample's verdicts of its blocked threads, for
	// waits[]; lastNames their names and states.
	last       []lastNativeWait
	lastLockOf map[int]string
	// jni are a JVM's latest native verdicts (its JNI lock waiters and
	// holders, the threads the sampler unwound), by OS thread id.
	jni     map[int]nativeVerdict
	jniLock map[int]string
	// siteOfWord is the resource the samples' contended waiters on a
	// futex word counted at (up to maxWordSites words): the kernel's
	// counted waits on a word whose stacks it did not copy go there. A
	// condition per transaction has no entry in the lock table, and its
	// waits were otherwise dropped (MariaDB's row-lock resource showed 0.2
	// s of counted waiting beside 84.5 sampled thread-seconds).
	siteOfWord map[uint64]string
	// gates are the resources (and gateWords the futex words) of the
	// mutexes seen held across their holder's own idle wait: their
	// waiters are idle for the rest of the run (openGates).
	gates     map[string]bool
	gateWords map[uint64]bool
	// sitePCs is the resource of each wait site seen, by process and its
	// frames' program counters (up to maxWordSites): a site named better
	// mid-run keeps one resource (renameSite).
	sitePCs map[sitePCKey]string
}

// maxWordSites bounds nativeWaits.siteOfWord.
const maxWordSites = 16384

// lastNativeWait is a blocked thread of the latest native sample.
type lastNativeWait struct {
	tid   int
	name  string
	state byte
	v     nativeVerdict
}

// sameWait reports two futex words of one wait: the same word, or the
// two adjacent words of one glibc condition variable (its waiters sleep
// on the signal word of the current group, g_signals[0] or [1], which
// alternate from one wait to the next).
func sameWait(a, b uint64) bool { return a == b || a+4 == b || b+4 == a }

// placedVerdict is a verdict with the wait its stack was read in.
type placedVerdict struct {
	start    uint64
	syscall  int
	word, op uint64
	// sp is the stack pointer at the call: one word may be waited on at
	// two depths (a worker's own condition, in its loop and inside a
	// task); 0 in a recording from before format 9. mixed says the
	// thread's stacks gave two verdicts on this word: then only the same
	// depth is the same wait.
	sp    uint64
	mixed bool
	w     nativewait.Wait
}

// nativeSiteAgg is one native resource over the run.
type nativeSiteAgg struct {
	id, kind, module, site string
	addrs                  map[uint64]bool // distinct addresses (bounded)
	instanceCount          int
	peakInstances          int
	peakWaiters, maxOnOne  int
	current, waiterSum     int
	samples                int
	blocked                float64
	waiterNames            []string
	pool                   string
	poolThreads            int
	poolWaiting            int
	holders                boundedCounts
	// exactWaits and exactNanos are what the kernel counted here
	// (addExactToResources).
	exactWaits, exactNanos float64
	// waiterStack is a waiter's stack at the peak, innermost first.
	waiterStack []string
	// line is the site's source position, from the latest waiter with
	// one.
	line string
	// files are the paths of the files a file lock's waiters waited to
	// lock, the first maxSiteFiles seen.
	files []string
	// processes: the waiters at the peak were each the one thread of a
	// process of the tree.
	processes bool
}

// maxSiteFiles bounds nativeSiteAgg.files.
const maxSiteFiles = 8

// maxNativeSites bounds the native resource table; maxNativeCache the
// verdict cache (rebuilt every sample from the threads it saw).
const (
	maxNativeSites = 256
	maxNativeCache = 1 << 14
)

// classifyNative gives every blocked thread of a native sample its
// verdict (and a JVM's threads with native stacks theirs). It returns the
// verdicts by index into s.Threads (nil entries: running, or a JVM's
// thread the dump judges); the slice and its verdicts are reused by the
// next call. It runs on every sample, so what a thread's unmoved stack
// gives (the verdict, its resource and the start routine's pool) is kept
// with the thread's aggregate (nativeSlot), and a sample of threads that
// did not move costs no map operation.
func (a *Aggregator) classifyNative(s *snapshot.Snapshot) []*nativeVerdict {
	nw := &a.native
	jvm := s.Target.Kind == snapshot.KindJVM
	var futexOf map[int]int // tid → its futex wait in s.Futexes, built on first use
	kindOf := func(tid int) procfs.FutexKind {
		if futexOf == nil {
			futexOf = make(map[int]int, 64)
			for i := range s.Futexes {
				for _, tid := range s.Futexes[i].TIDs {
					futexOf[tid] = i
				}
			}
		}
		if i, ok := futexOf[tid]; ok {
			return s.Futexes[i].Kind
		}
		return ""
	}
	procName := ""
	for i := range s.Threads {
		t := &s.Threads[i]
		if t.TID == s.Target.PID {
			procName = t.Name
		}
		if !jvm && len(t.Stack) > 0 && i < len(a.os.cur) && a.os.cur[i].nv.key != cacheKeyOf(t) {
			nw.tramp.Note(t.Stack) // a stack not read before
		}
	}
	if cap(nw.verdicts) < len(s.Threads) {
		nw.verdicts = make([]nativeVerdict, len(s.Threads))
		nw.out = make([]*nativeVerdict, len(s.Threads))
	}
	buf, out := nw.verdicts[:len(s.Threads)], nw.out[:len(s.Threads)]
	clear(out)
	kernelOnly := 0
	for i := range s.Threads {
		t := &s.Threads[i]
		if i >= len(a.os.cur) {
			break
		}
		ta := a.os.cur[i]
		if !jvm {
			ta.nativeSeen++
			if t.State == 'R' {
				ta.nativeBusy++
			}
		}
		if !t.Sleeping() || jvm && len(t.Stack) == 0 && ta.nv.places[0].w.Verdict == "" {
			// Running (its place is kept); a JVM's thread the dump judges,
			// unless its native stack was read in this wait before.
			continue
		}
		c := a.nativeVerdictOf(t, &ta.nv, jvm, s.Futexes, kindOf)
		if c.w.Verdict == "" {
			continue
		}
		if !jvm {
			if c.w.Verdict == nativewait.Contention || c.w.Verdict == nativewait.IO {
				ta.nativeBusy++ // waits inside its work
			}
			if c.pool != "" && ta.pool != c.pool && procName != "" && t.Name == procName {
				ta.poolByEntry(t.Name, c.pool)
			}
		}
		addr := uint64(0)
		if t.Syscall == unix.SYS_FUTEX {
			addr = t.SyscallArgs[0]
		} else if c.w.Kind == nativewait.FileLock {
			addr = t.Locked.ID // the file's identity: one file for every process that locks it
		}
		buf[i] = nativeVerdict{w: c.w, addr: addr, resource: c.resource, kernel: c.kernel}
		out[i] = &buf[i]
		if c.kernel && addr != 0 {
			kernelOnly++
		}
	}
	if kernelOnly > 0 {
		a.shareVerdicts(out)
	}
	a.openGates(s, out)
	return out
}

// openFileGates opens the gates of file locks, by the rule of openGates:
// the lock's holder, the process /proc/locks named on both sides of the
// system call its main thread was blocked in (procfs.LockedFile.Across),
// is one thread of the sample, idle by the rule at that very call, and
// the call waits for input. Apache's prefork children with a file-based
// accept mutex (Mutex flock or fcntl) queue so for their turn to poll.
// Of a holder of many threads the kernel does not say which holds the
// lock: no gate.
func (a *Aggregator) openFileGates(s *snapshot.Snapshot, out []*nativeVerdict) {
	nw := &a.native
	procs := sampleProcesses{s: s}
	for i, v := range out {
		if v == nil || v.w.Kind != nativewait.FileLock || v.w.Verdict != nativewait.Contention {
			continue
		}
		lf := s.Threads[i].Locked
		h := lf.Across
		if h == nil || lf.Holder <= 0 || lf.ID == 0 || nw.gateWords[lf.ID] || waitsForThread(h.Syscall) {
			continue
		}
		j, ok := procs.onlyThread(lf.Holder)
		if !ok || j >= len(a.os.cur) {
			continue
		}
		if at := a.os.cur[j].nv.idleAt; at.syscall != h.Syscall || at.sp != h.SP || at.pc != h.PC {
			continue
		}
		if nw.gateWords == nil {
			nw.gates, nw.gateWords = map[string]bool{}, map[uint64]bool{}
		}
		if len(nw.gateWords) >= maxNativeSites {
			return
		}
		nw.gateWords[lf.ID] = true
		delete(nw.siteOfWord, lf.ID)
		if v.resource != "" && v.w.Site != "" {
			nw.gates[v.resource] = true
			delete(nw.sites, v.resource)
		}
	}
}

// waitsForThread reports a system call that waits for another thread (a
// futex, a semaphore), not for input. A gate's holder waits for input: a
// holder seen in a condition's wait is no gate's, since pthread_cond_wait
// lets its mutex go while it waits, and a holder that woke and took the
// mutex again between the two reads would pass for one.
func waitsForThread(nr int) bool {
	switch nr {
	case unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP:
		return true
	}
	return false
}

// openGates applies the wait rule's one exception to "a thread queued on
// a mutex is contention": a mutex whose holder holds it across its own
// wait for input is a gate in front of that wait, and its waiters wait
// for what the holder waits for, work: they are idle. The holder is seen
// so when the sampler found it blocked in a system call between two reads
// of the mutex that both named it, its stack read at that very call (the
// same system call, stack pointer and program counter, in this sample or
// an earlier one) is idle by the rule (the top of its run loop), and the
// call waits for input, not for another thread (waitsForThread). Since the
// program's design parks a thread on the mutex while it waits for input,
// the mutex stays a gate for the rest of the run (a holder seen running
// has just been given work, and the next waiter takes its place), and
// what the earlier samples counted of it as a lock is forgotten. Apache's
// prefork children queue so on the accept mutex while one of them polls
// the listening sockets. A holder blocked in I/O inside its work (a lock
// held while it reads a file or a pipe) is not at the top of its loop:
// its waiters stay contention.
func (a *Aggregator) openGates(s *snapshot.Snapshot, out []*nativeVerdict) {
	nw := &a.native
	var index map[int]int
	for k := range s.Futexes {
		fw := &s.Futexes[k]
		h := fw.Holder
		if fw.Kind != snapshot.FutexLock || h == nil || h.Across == nil || h.TID <= 0 || nw.gateWords[fw.Address] {
			continue
		}
		if index == nil {
			index = make(map[int]int, len(s.Threads))
			for i := range s.Threads {
				index[s.Threads[i].TID] = i
			}
		}
		// The holder's stack at that call: read in this sample, or in an
		// earlier one (a holder of a busy gate is back at its turn on the
		// mutex by the time its own process is swept).
		i, ok := index[h.TID]
		if !ok || i >= len(a.os.cur) || waitsForThread(h.Across.Syscall) {
			continue
		}
		at := a.os.cur[i].nv.idleAt
		if at.syscall != h.Across.Syscall || at.sp != h.Across.SP || at.pc != h.Across.PC {
			continue
		}
		if nw.gateWords == nil {
			nw.gates, nw.gateWords = map[string]bool{}, map[uint64]bool{}
		}
		if len(nw.gateWords) >= maxNativeSites {
			break
		}
		// What the samples before this one counted of the gate as a
		// lock (its resource, its entry in the lock table with the pools
		// it seemed to serialize) goes: it was the same gate then.
		nw.gateWords[fw.Address] = true
		delete(a.locks, lockKey("futex", "", "0x"+strconv.FormatUint(fw.Address, 16)))
		delete(nw.siteOfWord, fw.Address)
		for _, tid := range fw.TIDs {
			// A wait site a waiter's stack named is the gate's; a
			// waiter without a stack counts at the word (gateWords):
			// its resource may be a name many words share.
			if j, ok := index[tid]; ok && j < len(out) && out[j] != nil && out[j].resource != "" && out[j].w.Site != "" {
				nw.gates[out[j].resource] = true
				delete(nw.sites, out[j].resource)
			}
		}
	}
	a.openFileGates(s, out)
	if len(nw.gateWords) == 0 {
		return
	}
	for i, v := range out {
		if v == nil || v.w.Verdict != nativewait.Contention || v.w.Kind != nativewait.Mutex && v.w.Kind != nativewait.FileLock || !nw.gateWords[v.addr] && !nw.gates[v.resource] {
			continue
		}
		v.w.Verdict = nativewait.Idle
		v.w.Reason = "queued on a mutex that its holder holds across its own idle wait: a gate in front of the wait for work, not a lock around work"
		if v.w.Kind == nativewait.FileLock {
			v.w.Reason = "queued on a file lock that its holder holds across its own idle wait: a gate in front of the wait for work, not a lock around work"
		}
		v.resource = ""
		if i < len(a.os.cur) && a.os.cur[i].nativeBusy > 0 {
			a.os.cur[i].nativeBusy-- // classifyNative counted the wait as work
		}
	}
}

// shareVerdicts gives a thread judged by the kernel's view alone (no
// stack, no earlier verdict in the same wait) the verdict of a thread of
// the same sample whose stack was read and which waits on the same futex
// word: threads that sleep on one word wait for the same thing (a busy
// object's waiters, a pool's idle workers).
func (a *Aggregator) shareVerdicts(out []*nativeVerdict) {
	byWord := map[uint64]*nativeVerdict{}
	for _, v := range out {
		if v != nil && !v.kernel && v.addr != 0 && v.w.Kind != "" && len(byWord) < maxNativeCache {
			byWord[v.addr] = v
		}
	}
	for i, v := range out {
		if v == nil || !v.kernel || v.addr == 0 {
			continue
		}
		o := byWord[v.addr]
		if o == nil {
			continue
		}
		busy := func(w nativewait.Wait) bool {
			return w.Verdict == nativewait.Contention || w.Verdict == nativewait.IO
		}
		if i < len(a.os.cur) && busy(o.w) && !busy(v.w) {
			a.os.cur[i].nativeBusy++
		}
		v.w, v.resource, v.kernel = o.w, o.resource, false
	}
}

// nativeSlot is what a thread's aggregate keeps of its native verdicts:
// the last stack judged (its key, and the trampolines' generation it was
// judged in) and what it gave, and the wait it was judged in.
type nativeSlot struct {
	key nativeCacheKey
	gen int
	c   nativeCached
	// places are the thread's last two waits whose stacks were read, the
	// latest first: a thread that takes turns between two waits (a write
	// group's leader and follower, a pool worker waiting for a task and
	// inside one) keeps both.
	places [2]placedVerdict
	// idleAt is the latest wait its stack was judged idle in: its system
	// call, stack pointer and program counter there (a lock's holder seen
	// blocked at the same place holds the lock across that idle wait:
	// openGates).
	idleAt struct {
		syscall int
		sp, pc  uint64
	}
}

// place is the thread's earlier verdict in the wait t is in, if any.
func (slot *nativeSlot) place(t *procfs.Thread) (placedVerdict, bool) {
	for _, p := range slot.places {
		if p.w.Verdict != "" && p.start == t.StartTime && p.syscall == t.Syscall && sameWait(p.word, t.SyscallArgs[0]) && p.op == t.SyscallArgs[1] && (p.sp == t.SyscallSP || !p.mixed) {
			return p, true
		}
	}
	return placedVerdict{}, false
}

// remember keeps p as the thread's latest place: a word it waited on
// before with another verdict tells its waits apart only by the stack
// depth from now on.
func (slot *nativeSlot) remember(p placedVerdict) {
	for i, old := range slot.places {
		if old.w.Verdict != "" && old.start == p.start && sameWait(old.word, p.word) && old.op == p.op {
			p.mixed = old.mixed || old.w.Verdict != p.w.Verdict
			copy(slot.places[1:i+1], slot.places[:i])
			slot.places[0] = p
			return
		}
	}
	slot.places[1], slot.places[0] = slot.places[0], p
}

// nativeCached is what a thread's stack gives, kept with the stack.
type nativeCached struct {
	w nativewait.Wait
	// kernel says the verdict rests on the kernel's view alone: no stack,
	// and none read in the same wait before.
	kernel bool
	// resource is the contention site of a contended wait with a site,
	// pool the start routine's pool; "" otherwise.
	resource, pool string
}

// cacheKeyOf says a thread's stack is the one judged before: the same
// stack slice (the sampler keeps an unmoved thread's), in the same
// system call and state.
func cacheKeyOf(t *procfs.Thread) nativeCacheKey {
	if len(t.Stack) == 0 {
		return nativeCacheKey{}
	}
	return nativeCacheKey{stack: &t.Stack[0], depth: len(t.Stack), syscall: t.Syscall, state: t.State, arg1: t.SyscallArgs[1], events: t.Events}
}

// nativeVerdictOf judges one blocked thread: from its slot when its stack
// was judged before, from its place when it has no stack but was judged
// in the same wait before, else by the rule.
func (a *Aggregator) nativeVerdictOf(t *procfs.Thread, slot *nativeSlot, jvm bool, futexes []snapshot.FutexWait, kindOf func(int) procfs.FutexKind) nativeCached {
	nw := &a.native
	if len(t.Stack) > 0 {
		k := cacheKeyOf(t)
		if slot.key == k && slot.gen == nw.tramp.Gen {
			return slot.c
		}
		in := nativewait.Thread{State: t.State, Syscall: t.Syscall, Args: t.SyscallArgs, WChan: t.WChan, FutexKind: kindOf(t.TID), Stack: t.Stack, FromJava: jvm, Events: t.Events, LockedPath: t.Locked.Path, Trampolines: &nw.tramp}
		c := nativeCached{w: nativewait.Classify(in)}
		if c.w.Verdict == nativewait.Contention && c.w.Site != "" {
			c.resource = siteID(string(c.w.Kind), c.w.Module, c.w.Site)
		}
		if c.w.Verdict == nativewait.Contention && c.resource == "" {
			c.resource = a.nativeResourceOf(c.w, futexes, t.SyscallArgs[0])
		}
		if c.w.Entry != "" {
			c.pool = nativewait.FunctionName(c.w.Entry)
		}
		slot.key, slot.gen, slot.c = k, nw.tramp.Gen, c
		if c.w.Verdict == nativewait.Idle {
			slot.idleAt.syscall, slot.idleAt.sp, slot.idleAt.pc = t.Syscall, t.SyscallSP, t.SyscallPC
		}
		if c.w.Kind != "" {
			slot.remember(placedVerdict{start: t.StartTime, syscall: t.Syscall, word: t.SyscallArgs[0], op: t.SyscallArgs[1], sp: t.SyscallSP, w: c.w})
		}
		return c
	}
	var c nativeCached
	if p, ok := slot.place(t); ok {
		// It woke while its stack was read, and waits again where it
		// did (a JNI library's thread too: RocksDB's write-group
		// follower waits on the condition of its Writer, an object on
		// its stack at the same place at every write).
		c.w = p.w
	} else if jvm {
		return nativeCached{} // the JVM's own wait: the dump judges it
	} else {
		c.w = nativewait.Classify(nativewait.Thread{State: t.State, Syscall: t.Syscall, Args: t.SyscallArgs, WChan: t.WChan, FutexKind: kindOf(t.TID), FromJava: jvm, Events: t.Events, LockedPath: t.Locked.Path})
		c.kernel = true
	}
	if c.w.Verdict == nativewait.Contention {
		c.resource = a.nativeResourceOf(c.w, futexes, t.SyscallArgs[0])
	}
	return c
}

// nativeResourceOf is the resource a contended thread counts at: its wait
// site's, or, without a stack, the one the stacks of its futex word's
// waiters named before (a waiter that woke while its stack was read still
// queues at the same lock), else the word's own (nativeSiteID).
func (a *Aggregator) nativeResourceOf(w nativewait.Wait, futexes []snapshot.FutexWait, addr uint64) string {
	if w.Site == "" && addr != 0 {
		if la := a.locks[lockKey("futex", "", "0x"+strconv.FormatUint(addr, 16))]; la != nil && la.nativeSite != "" {
			return la.nativeSite
		}
	}
	return nativeSiteID(w, futexes, addr)
}

// nativeSiteID is the key of a native resource: its kind, the module of
// its site and the site; without a stack, the futex word's stable name
// stands for the site.
func nativeSiteID(w nativewait.Wait, futexes []snapshot.FutexWait, addr uint64) string {
	site, module := w.Site, w.Module
	if site == "" && w.Kind == nativewait.FileLock {
		return lockKey(string(w.Kind), "", "file lock (no stack)")
	}
	if site == "" {
		for _, fw := range futexes {
			if fw.Address == addr {
				site, module = "futex "+futexClass(fw.Location), fw.Location.Module
				break
			}
		}
		if site == "" || site == "futex " {
			site = "futex (unnamed)"
		}
		// A word's name is no method with a line to cut off: "shared
		// memory (file /dev/shm/x)+0x100" must not become "shared memory".
		return lockKey(string(w.Kind), keyPart(module), site)
	}
	return siteID(string(w.Kind), module, site)
}

// addNativeSites folds one sample's contended threads into their
// resources; dt is the interval the sample stands for.
func (a *Aggregator) addNativeSites(s *snapshot.Snapshot, verdicts []*nativeVerdict, dt time.Duration) {
	nw := &a.native
	if nw.sites == nil {
		nw.sites = map[string]*nativeSiteAgg{}
	}
	type acc struct {
		waiters int
		perAddr map[uint64]int
		names   []string
		pools   map[string]int
		stack   int // index in s.Threads of a waiter with a stack, -1 without
		// threaded: a waiter is not the one thread of its process.
		threaded bool
	}
	// In a tree of processes, a resource whose waiters are each a
	// process of one thread (PostgreSQL's backends, PHP-FPM's children)
	// counts processes.
	tree := len(s.Threads) > 0 && s.Threads[0].PID != 0
	procs := sampleProcesses{s: s}
	// Sites named better since they were first seen take their better
	// names first: twice over, so that a verdict under the worse name
	// counts at the better whatever the threads' order.
	for pass := 0; pass < 2; pass++ {
		for i, v := range verdicts {
			if v == nil || v.resource == "" {
				continue
			}
			pid := s.Threads[i].PID
			if pid == 0 {
				pid = s.Target.PID
			}
			a.renameSite(pid, v)
		}
	}
	now := map[*nativeSiteAgg]*acc{}
	for i, v := range verdicts {
		if v == nil || v.resource == "" {
			continue
		}
		sa := nw.site(v, a.opts.MaxLocks)
		if sa == nil {
			continue
		}
		c := now[sa]
		if c == nil {
			c = &acc{perAddr: map[uint64]int{}, pools: map[string]int{}, stack: -1}
			now[sa] = c
		}
		if c.stack < 0 && len(s.Threads[i].Stack) > 0 {
			c.stack = i
		}
		c.waiters++
		if !c.threaded {
			c.threaded = !tree
			if tree {
				_, one := procs.onlyThread(s.Threads[i].PID)
				c.threaded = !one
			}
		}
		if v.w.SiteLine != "" {
			sa.line = v.w.SiteLine
		}
		if p := s.Threads[i].Locked.Path; p != "" && v.w.Kind == nativewait.FileLock {
			sa.noteFile(p)
		}
		if v.addr != 0 {
			// A wait on an event set (epoll) has no word.
			c.perAddr[v.addr]++
		}
		var ta *osThreadAgg
		if i < len(a.os.cur) {
			ta = a.os.cur[i]
		}
		if ta != nil {
			if len(c.names) < 10 {
				c.names = append(c.names, fmt.Sprintf("%s (tid %d)", ta.name, s.Threads[i].TID))
			}
			c.pools[ta.pool]++
		}
		sa.blocked += asleepSeconds(ta, dt)
		if v.addr != 0 {
			if nw.siteOfWord == nil {
				nw.siteOfWord = map[uint64]string{}
			}
			if _, ok := nw.siteOfWord[v.addr]; ok || len(nw.siteOfWord) < maxWordSites {
				nw.siteOfWord[v.addr] = v.resource
			}
		}
		if v.addr != 0 && !sa.addrs[v.addr] {
			sa.instanceCount++
			if len(sa.addrs) < maxSiteInstances {
				sa.addrs[v.addr] = true
			}
		}
	}
	a.noteFileLockHolders(s, verdicts, &procs)
	for _, sa := range nw.sites {
		sa.current = 0
	}
	for sa, c := range now {
		sa.samples++
		sa.current = c.waiters
		sa.waiterSum += c.waiters
		sa.peakInstances = max(sa.peakInstances, len(c.perAddr))
		for _, n := range c.perAddr {
			sa.maxOnOne = max(sa.maxOnOne, n)
		}
		if c.waiters >= sa.peakWaiters {
			sa.peakWaiters = c.waiters
			sa.processes = !c.threaded
			sa.waiterNames = c.names
			if c.stack >= 0 {
				sa.waiterStack = frameNames(s.Threads[c.stack].Stack, maxHolderFrames)
			}
			sa.pool, sa.poolWaiting = "", 0
			for p, n := range c.pools {
				if n > sa.poolWaiting || n == sa.poolWaiting && p < sa.pool {
					sa.pool, sa.poolWaiting = p, n
				}
			}
			sa.poolThreads = 0
			for _, ta := range a.os.cur {
				if ta.pool == sa.pool {
					sa.poolThreads++
				}
			}
		}
	}
}

// noteFileLockHolders counts what the holder of each file lock waited for
// in the sample does, at its resource, once per file: the process
// /proc/locks names as its holder (procfs.FileLockHolders), when that
// process is one thread of the sample (a pool's worker). Of a process of
// many threads the kernel does not say which holds it, and ctprof does not
// guess.
func (a *Aggregator) noteFileLockHolders(s *snapshot.Snapshot, verdicts []*nativeVerdict, procs *sampleProcesses) {
	type fileAt struct {
		resource string
		id       uint64
	}
	var seen map[fileAt]bool
	for i, v := range verdicts {
		if v == nil || v.resource == "" || v.w.Kind != nativewait.FileLock {
			continue
		}
		lf := s.Threads[i].Locked
		k := fileAt{v.resource, lf.ID}
		if lf.Holder <= 0 || seen[k] {
			continue
		}
		if seen == nil {
			seen = map[fileAt]bool{}
		}
		seen[k] = true
		sa := a.native.sites[v.resource]
		if j, ok := procs.onlyThread(lf.Holder); sa != nil && ok {
			sa.holders.inc(holderDoing(&s.Threads[j]), 1)
		}
	}
}

// sampleProcesses is a sample's threads by process, counted on first use:
// a thread with no process's pid is the target's.
type sampleProcesses struct {
	s *snapshot.Snapshot
	// only is each process's one thread (its index in s.Threads), -1 for
	// a process of several.
	only map[int]int
}

// onlyThread returns the index of process pid's thread when the sample
// has exactly one of it.
func (p *sampleProcesses) onlyThread(pid int) (int, bool) {
	if p.only == nil {
		p.only = map[int]int{}
		for j := range p.s.Threads {
			q := p.s.Threads[j].PID
			if q == 0 {
				q = p.s.Target.PID
			}
			if _, seen := p.only[q]; seen {
				p.only[q] = -1
			} else {
				p.only[q] = j
			}
		}
	}
	j, ok := p.only[pid]
	return j, ok && j >= 0
}

// noteFile keeps a locked file's path among the first maxSiteFiles.
func (sa *nativeSiteAgg) noteFile(path string) {
	if len(sa.files) >= maxSiteFiles || slices.Contains(sa.files, path) {
		return
	}
	sa.files = append(sa.files, path)
}

// site returns the resource of v, creating it and evicting the least
// waited-on one when the table is full.
func (nw *nativeWaits) site(v *nativeVerdict, limit int) *nativeSiteAgg {
	sa := nw.sites[v.resource]
	if sa != nil {
		return sa
	}
	limit = min(limit, maxNativeSites)
	if len(nw.sites) >= limit {
		var victim string
		least := int(^uint(0) >> 1)
		for k, x := range nw.sites {
			if x.waiterSum < least || x.waiterSum == least && k > victim {
				victim, least = k, x.waiterSum
			}
		}
		delete(nw.sites, victim)
	}
	parts := strings.SplitN(v.resource, "|", 3)
	sa = &nativeSiteAgg{id: v.resource, kind: string(v.w.Kind), addrs: map[uint64]bool{}}
	if len(parts) == 3 {
		sa.module, sa.site = parts[1], parts[2]
	}
	nw.sites[v.resource] = sa
	return sa
}

// sitePCKey is a wait site in one process by its frames' program
// counters.
type sitePCKey struct {
	pid int
	pcs [2]uint64
}

// unnamedFrames counts a site ID's frames named by module and offset.
func unnamedFrames(id string) int { return strings.Count(id, "+0x") }

// renameSite keeps one resource for a wait site whose frames were named
// better during the run: a binary's function names can arrive mid-run
// (debuginfod answers in the background), and its first samples then key
// the site by module and offset ("server+0x4d740 ← server+0x4e100"), the
// later ones by function ("lock_wait ← row_search"). The same program
// counters in the same process are the same site: the resource counted so
// far under the worse name takes the better one, its figures folded into
// the better's; a verdict under the worse name (a thread whose stack was
// not read again since) counts at the better.
func (a *Aggregator) renameSite(pid int, v *nativeVerdict) {
	nw := &a.native
	if v.w.SitePCs[0] == 0 {
		return
	}
	k := sitePCKey{pid, v.w.SitePCs}
	known, ok := nw.sitePCs[k]
	switch {
	case !ok:
		if nw.sitePCs == nil {
			nw.sitePCs = map[sitePCKey]string{}
		}
		if len(nw.sitePCs) < maxWordSites {
			nw.sitePCs[k] = v.resource
		}
		return
	case known == v.resource:
		return
	case unnamedFrames(known) < unnamedFrames(v.resource):
		// The sample's verdict (a copy: the thread's cached one keeps
		// what its stack said) says where it waits by the better names.
		v.resource = known
		if sa := nw.sites[known]; sa != nil && v.w.Site != "" {
			v.w.Reason = strings.ReplaceAll(v.w.Reason, v.w.Site, sa.site)
			v.w.Site, v.w.Module = sa.site, sa.module
		}
		return
	case unnamedFrames(v.resource) < unnamedFrames(known):
		nw.sitePCs[k] = v.resource
		a.foldSite(known, v)
	}
}

// foldSite moves what the resource old counted to v's (made if missing):
// its figures add up, its peaks take the larger, and what named old (the
// lock table's sites, the words' sites, a gate) names v's.
func (a *Aggregator) foldSite(old string, v *nativeVerdict) {
	nw := &a.native
	from := nw.sites[old]
	if from == nil {
		return
	}
	delete(nw.sites, old)
	into := nw.site(v, a.opts.MaxLocks)
	into.samples += from.samples
	into.waiterSum += from.waiterSum
	into.blocked += from.blocked
	into.exactWaits += from.exactWaits
	into.exactNanos += from.exactNanos
	into.peakInstances = max(into.peakInstances, from.peakInstances)
	into.maxOnOne = max(into.maxOnOne, from.maxOnOne)
	for addr := range from.addrs {
		if !into.addrs[addr] {
			into.instanceCount++
			if len(into.addrs) < maxSiteInstances {
				into.addrs[addr] = true
			}
		}
	}
	into.instanceCount += max(0, from.instanceCount-len(from.addrs)) // beyond the bound: counted, not kept
	if from.peakWaiters > into.peakWaiters {
		into.peakWaiters, into.waiterNames, into.waiterStack = from.peakWaiters, from.waiterNames, from.waiterStack
		into.pool, into.poolThreads, into.poolWaiting = from.pool, from.poolThreads, from.poolWaiting
	}
	for h, n := range from.holders {
		into.holders.inc(h, n)
	}
	if into.line == "" {
		into.line = from.line
	}
	for _, p := range from.files {
		into.noteFile(p)
	}
	for _, la := range a.locks {
		if la.nativeSite == old {
			la.nativeSite = v.resource
		}
	}
	for w, id := range nw.siteOfWord {
		if id == old {
			nw.siteOfWord[w] = v.resource
		}
	}
	if nw.gates[old] {
		nw.gates[v.resource] = true
	}
}

// noteLast keeps the sample's verdicts for waits[].
func (a *Aggregator) noteLastNative(s *snapshot.Snapshot, verdicts []*nativeVerdict, lockOf map[int]string) {
	nw := &a.native
	nw.last, nw.lastLockOf = nw.last[:0], lockOf
	for i, v := range verdicts {
		if v == nil {
			continue
		}
		name := s.Threads[i].Name
		if i < len(a.os.cur) {
			name = a.os.cur[i].name
		}
		nw.last = append(nw.last, lastNativeWait{tid: s.Threads[i].TID, name: name, state: s.Threads[i].State, v: *v})
	}
}

// nativeThreadWaits is waits[] of a native target: every blocked thread
// of the latest sample with its verdict.
func (a *Aggregator) nativeThreadWaits() []ThreadWait {
	lockOf := a.native.lastLockOf
	out := make([]ThreadWait, 0, len(a.native.last))
	for _, l := range a.native.last {
		tw := ThreadWait{Thread: l.name, TID: int64(l.tid), State: osStateName(l.state), Verdict: l.v.w.Verdict, Reason: l.v.w.Reason, Frame: l.v.w.Site}
		if tw.Verdict == VerdictContention {
			tw.Resource, tw.Lock = l.v.resource, lockOf[l.tid]
		}
		out = append(out, tw)
	}
	return out
}

// nativeContentionSites reports the native resources.
func (a *Aggregator) nativeContentionSites() []ContentionSite {
	out := make([]ContentionSite, 0, len(a.native.sites))
	n := a.os.samples
	for _, sa := range a.native.sites {
		queues := nativewait.Kind(sa.kind).Queues()
		cs := ContentionSite{
			ID: sa.id, Kind: sa.kind, Class: sa.module, WaitFrame: sa.site, WaitLine: sa.line, Native: true,
			Instances: sa.instanceCount, PeakInstances: sa.peakInstances,
			Waiters: sa.peakWaiters, MaxInstanceWaiters: sa.maxOnOne, CurrentWaiters: sa.current,
			BlockedThreadSeconds: round3(sa.blocked), DumpsSeen: sa.samples,
			// Waiters of a condition, semaphore or raw futex each wait
			// for a signal, not behind a holder: their count is the
			// queue, however many words they sleep on.
			Ownerless:     !queues,
			Striped:       queues && sa.peakInstances > 1 && sa.maxOnOne <= 1,
			WaiterThreads: append([]string{}, sa.waiterNames...),
			Pool:          sa.pool, PoolThreads: sa.poolThreads, PoolWaiting: sa.poolWaiting,
			OthersRun: []FrameCount{}, Holders: sa.holders.top(3),
			WaiterStack:     append([]string(nil), sa.waiterStack...),
			Files:           append([]string(nil), sa.files...),
			WaiterProcesses: sa.processes,
		}
		if n > 0 {
			cs.AvgWaiters = round3(float64(sa.waiterSum) / float64(n))
			cs.BlockedShare = round3(float64(sa.samples) / float64(n))
		}
		if sa.exactWaits > 0 {
			cs.Exact = &ExactResourceWaits{Waits: int64(sa.exactWaits + 0.5), WaitSeconds: round3(sa.exactNanos / 1e9)}
			if a.exact != nil && a.exact.elapsed > 0 {
				cs.Exact.PerSecond = round1(sa.exactWaits / a.exact.elapsed.Seconds())
			}
		}
		out = append(out, cs)
	}
	return out
}

// sortContentionSites orders resources by peak waiters, then blocked
// thread-seconds and ID.
func sortContentionSites(out []ContentionSite) {
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Waiters != y.Waiters {
			return x.Waiters > y.Waiters
		}
		if x.BlockedThreadSeconds != y.BlockedThreadSeconds {
			return x.BlockedThreadSeconds > y.BlockedThreadSeconds
		}
		return x.ID < y.ID
	})
}

// nativeResourceFinding is the finding of a native resource: threads that
// wait inside their work at one site on one kind of primitive, over all
// the words they sleep on (a condition per transaction, the mutexes of
// many objects). ok is false when it is not contended enough to report,
// by the rule a single lock follows.
func nativeResourceFinding(cs ContentionSite, s *Summary) (Finding, bool) {
	if cs.Waiters < 2 && (s.Samples < 3 || cs.BlockedShare < 0.5) {
		return Finding{}, false
	}
	sev := SeverityWarning
	if (cs.Waiters >= 5 || cs.AvgWaiters >= 4) && cs.DumpsSeen > 1 {
		sev = SeverityCritical
	}
	kind := nativewait.Kind(cs.Kind)
	noun := "thread"
	if cs.WaiterProcesses {
		noun = "process"
	}
	what := fmt.Sprintf("Up to %s (%.1f on average, waiting in %.0f%% of samples, seen in %s) wait",
		plural(cs.Waiters, noun), cs.AvgWaiters, 100*cs.BlockedShare, plural(cs.DumpsSeen, "sample"))
	if s.Samples <= 1 {
		what = fmt.Sprintf("%s wait", capitalize(plural(cs.Waiters, noun)))
	}
	on := fmt.Sprintf("on %s", nativeKindWords(kind, cs.Instances))
	summary := fmt.Sprintf("%s inside their work at %s %s", what, cs.WaitFrame, on)
	if cs.Ownerless && s.Processes != nil {
		summary += ", each waiting for a signal from another thread or process"
	} else if cs.Ownerless {
		summary += ", each waiting for a signal from another thread"
	} else if len(cs.Holders) > 0 {
		summary += ", held by a thread " + cs.Holders[0].Frame
	}
	if p := poolSentence(cs); p != "" {
		summary += "; " + p
	}
	summary += "."
	ev := []string{fmt.Sprintf("resource %s at %s (module %s): %d distinct words over the run, at most %d at once, at most %d waiters on one",
		cs.Kind, cs.WaitFrame, cs.Class, cs.Instances, cs.PeakInstances, cs.MaxInstanceWaiters)}
	if kind == nativewait.FileLock {
		ev[0] = fmt.Sprintf("resource %s at %s (module %s): %s over the run, at most %d at once, at most %d waiters on one",
			cs.Kind, cs.WaitFrame, cs.Class, plural(cs.Instances, "distinct file"), cs.PeakInstances, cs.MaxInstanceWaiters)
		if len(cs.Files) > 0 {
			ev = append(ev, "files locked: "+strings.Join(cs.Files, ", "))
		}
	} else if cs.Instances == 0 && cs.PeakInstances == 0 {
		ev[0] = fmt.Sprintf("resource %s at %s (module %s): no futex word; its waiters sleep in epoll_wait on sets of the program's own wake-ups (a latch: a pipe, eventfd or signalfd that the waker writes to)",
			cs.Kind, cs.WaitFrame, cs.Class)
	}
	if cs.BlockedThreadSeconds > 0 {
		ev = append(ev, fmt.Sprintf("threads spent %.1f s waiting here in all (each sighting counts the time the waiter was off the CPU since the sample before)", cs.BlockedThreadSeconds))
	}
	if len(cs.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+strings.Join(cs.WaiterThreads, ", "))
	}
	if x := cs.Exact; x != nil {
		ev = append(ev, fmt.Sprintf("the kernel counted %s waits here (%.0f a second), %.1f s of waiting in all", fmtCount(x.Waits), x.PerSecond, x.WaitSeconds))
	}
	ev = append(ev, nativeInstancesEvidence(cs, s)...)
	if len(cs.Holders) > 0 {
		parts := make([]string, 0, len(cs.Holders))
		for _, h := range cs.Holders {
			parts = append(parts, fmt.Sprintf("%s %d", h.Frame, h.Samples))
		}
		ev = append(ev, "what the holders did, by samples: "+strings.Join(parts, ", "))
	}
	next := "Shorten or split what the threads hold while others wait at " + cs.WaitFrame + " (the waiters' stacks are in the flame graph)."
	if cs.Ownerless {
		next = "Find who signals the waiters at " + cs.WaitFrame + " and what it does first (a row's holder, a leader's flush): the waiters' stacks are in the flame graph; shorten that work or let fewer threads need it at once."
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Subject:  "resource " + cs.ID,
		Severity: sev,
		Summary:  summary,
		Evidence: ev,
		NextStep: next,
		impact:   1e6 + float64(cs.Waiters)*1000 + cs.AvgWaiters,
	}, true
}

// nativeKindWords names a native resource's primitive with its instances:
// "a condition (37 instances)".
func nativeKindWords(k nativewait.Kind, instances int) string {
	w := map[nativewait.Kind]string{nativewait.Mutex: "a mutex", nativewait.RWLock: "an rwlock", nativewait.Condition: "a condition",
		nativewait.Semaphore: "a semaphore", nativewait.Futex: "a futex", nativewait.FileLock: "a file lock"}[k]
	if w == "" {
		w = "a futex"
	}
	if instances > 1 {
		w += fmt.Sprintf(" (%d instances)", instances)
	}
	return w
}

// nativeInstancesEvidence names the lock instances counted at a native
// resource, hottest first (at most 5): each with its waiters and the holder
// its memory named.
func nativeInstancesEvidence(cs ContentionSite, s *Summary) []string {
	var out []string
	for _, l := range s.Locks {
		if l.Site != cs.ID || l.Kind != "futex" {
			continue
		}
		if len(out) == 5 {
			out = append(out, "and more instances in the lock table")
			break
		}
		e := fmt.Sprintf("instance futex %s: up to %d waiters, %.2f on average", futexName(l.Symbol, l.Class, l.Address), l.Waiters, l.AvgWaiters)
		if h := l.Holder; h != nil && h.TID != 0 {
			e += fmt.Sprintf(", held by %q (tid %d), %s, at the sample with the most waiters", h.Thread, h.TID, h.Runs)
		}
		out = append(out, e)
	}
	return out
}

// poolByEntry puts a thread that carries only its process's name (comm)
// into the pool of its start routine: a server that names none of its
// threads has one pool per kind of thread, not one pool of all of them.
// The pool stays when the thread runs (no stack) until its name changes.
func (ta *osThreadAgg) poolByEntry(comm, pool string) {
	if ta.name != comm {
		return // a JVM's name, or a name of its own
	}
	ta.pool = pool
}

// noteJNI keeps a JVM sample's native verdicts by tid, for the dump's
// waits[] and stacks: a thread RUNNABLE in a native method that is blocked
// in the library's code is classed by its native stack.
func (a *Aggregator) noteJNI(s *snapshot.Snapshot, verdicts []*nativeVerdict, lockOf map[int]string) {
	clear(a.native.jni)
	a.native.jniLock = lockOf
	for i, v := range verdicts {
		if v == nil {
			continue
		}
		if a.native.jni == nil {
			a.native.jni = map[int]nativeVerdict{}
		}
		a.native.jni[s.Threads[i].TID] = *v
		if v.w.Verdict == nativewait.Contention && i < len(a.os.cur) {
			// It waits in the library's code, on a resource the
			// findings report: not stuck in its native method.
			a.noteNativeLockThread(a.os.cur[i])
		}
	}
}

// jniResource is the native resource a JVM thread blocked in a JNI
// library's code waits at, by the native rule ("" when it is not
// contended).
func (a *Aggregator) jniResource(t *procfs.Thread, futexes []snapshot.FutexWait) string {
	var kind procfs.FutexKind
	for _, fw := range futexes {
		if fw.Address == t.SyscallArgs[0] {
			kind = fw.Kind
		}
	}
	w := nativewait.Classify(nativewait.Thread{State: t.State, Syscall: t.Syscall, Args: t.SyscallArgs, WChan: t.WChan, FutexKind: kind, Stack: t.Stack, FromJava: true})
	if w.Verdict != nativewait.Contention {
		return ""
	}
	return a.nativeResourceOf(w, futexes, t.SyscallArgs[0])
}

// ExactResourceWaits is what the kernel counted of a native resource's
// waits: its instances' counted waits, shared among the resources their
// copied stacks name (a futex word waited at two sites counts at both in
// proportion to its stacks), so the resources add up to what was counted.
type ExactResourceWaits struct {
	Waits       int64   `json:"waits"`
	WaitSeconds float64 `json:"wait_seconds"`
	PerSecond   float64 `json:"waits_per_second"`
}

// addExactToResources shares one traced futex's counted waits among the
// resources its copied stacks name by the wait rule; a futex without
// stacks counts at the resource its waiters' sampled stacks named.
func (a *Aggregator) addExactToResources(f *snapshot.TracedFutex, pid int) {
	nw := &a.native
	nanos := 0.0
	if f.Traced > 0 {
		nanos = float64(f.Total) * f.Waits / float64(f.Traced)
	}
	add := func(id string, kind string, share float64) {
		if nw.gates[id] {
			return // a gate's waits are idle (openGates)
		}
		sa := nw.sites[id]
		if sa == nil {
			sa = nw.site(&nativeVerdict{resource: id, w: nativewait.Wait{Kind: nativewait.Kind(kind)}}, a.opts.MaxLocks)
		}
		sa.exactWaits += f.Waits * share
		sa.exactNanos += nanos * share
	}
	if len(f.Stacks) == 0 {
		id := ""
		if la := a.locks[lockKey("futex", "", "0x"+strconv.FormatUint(f.Address, 16))]; la != nil && la.nativeSite != "" {
			id = la.nativeSite
		}
		for _, w := range []uint64{f.Address, f.Address - 4, f.Address + 4} { // a condition's two signal words
			if id == "" {
				id = nw.siteOfWord[w]
			}
		}
		if sa := nw.sites[id]; id != "" && sa != nil {
			add(id, sa.kind, 1)
		}
		return
	}
	if nw.sites == nil {
		nw.sites = map[string]*nativeSiteAgg{}
	}
	share := 1 / float64(len(f.Stacks))
	for _, st := range f.Stacks {
		w := nativewait.Classify(nativewait.Thread{State: 'S', Syscall: unix.SYS_FUTEX, FutexKind: f.Kind, Stack: st, Trampolines: &nw.tramp})
		if w.Verdict != nativewait.Contention || w.Site == "" {
			continue
		}
		// A stack copied before its binary's names arrived counts at the
		// site's better name, and one copied after renames the site
		// (renameSite), whichever of the samples and the trace saw the
		// site first.
		v := &nativeVerdict{w: w, resource: siteID(string(w.Kind), w.Module, w.Site)}
		a.renameSite(pid, v)
		add(v.resource, string(w.Kind), share)
	}
}
