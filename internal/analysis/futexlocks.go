package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/nativewait"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// FutexHolder is the thread a native lock's own memory names as holding
// it (a glibc mutex's owner, an rwlock's writer), with what it did at the
// sample with the most waiters. ctprof reads the lock through
// /proc/<pid>/mem; the holder is kept only when the lock word says locked
// and the owner is a thread of the target.
type FutexHolder struct {
	Thread string `json:"thread"`
	TID    int    `json:"tid"`
	// Lock is what the futex belongs to: "mutex", "recursive mutex",
	// "error-checking mutex", "adaptive mutex" ("robust " or "PI "
	// before it), "rwlock".
	Lock string `json:"lock"`
	// State is the holder's OS state ("running", "sleeping", …) and CPU
	// the CPU it last ran on.
	State string `json:"state"`
	CPU   int    `json:"cpu"`
	// Runs says what it did: "running on CPU 1", "in nanosleep", "in
	// futex (futex_wait_queue)".
	Runs string `json:"runs"`
	// Samples is the number of samples in which the lock's memory named
	// a holder among those with waiters (DumpsSeen).
	Samples int `json:"samples"`
	// Readers is the readers an rwlock counted at that sample (0 also
	// when its memory could not tell which word counts them).
	Readers int `json:"readers,omitempty"`
	// Stack is the holder's native stack at that sample, innermost frame
	// first (at most 16 frames), when it was blocked in a system call
	// and ctprof unwound it; absent otherwise.
	Stack []string `json:"stack,omitempty"`
}

// maxHolderFrames bounds the holder's frames in the summary.
const maxHolderFrames = 16

// futexAgg is what a futex lock gathers beyond the waiters.
type futexAgg struct {
	holderSamples int
	holder        *FutexHolder // at the latest peak with a holder
	holderPeak    int
}

// A lock is sporadic, seen but not a steady queue, when it had waiters in
// under sporadicShare of the samples, or in fewer than sporadicSamples
// samples that are under sporadicFewShare of them (a lock in 4 samples of
// a 4-sample run is a short run's steady queue, not a sporadic one).
const (
	sporadicShare    = 0.1
	sporadicSamples  = 5
	sporadicFewShare = 0.25
)

// sporadic reports a lock with waiters in few of the samples.
func sporadic(l LockSummary, samples int) bool {
	if samples < 2 {
		return false
	}
	return l.BlockedShare < sporadicShare || l.DumpsSeen < sporadicSamples && l.BlockedShare < sporadicFewShare
}

// addFutexLocks folds one live sample's futex waits in: locks (and waits
// the kernel cannot classify) into the lock table, condition waits apart.
//
// A sighting of a waiter stands for the time since the previous sample,
// but only as much of it as the thread spent asleep (schedstat: the
// interval less its time on a CPU and in a run queue): a thread that
// blocks for microseconds thousands of times a second is not queued the
// whole interval, and queued thread-seconds must never exceed the time the
// threads were off the CPU. A thread the previous sample did not see (the
// first sample, a new thread) has no measured interval and adds nothing.
func (a *Aggregator) addFutexLocks(s *snapshot.Snapshot, dt time.Duration, names func(tid int) string, verdicts []*nativeVerdict) map[string][]int {
	waiters := map[string][]int{}
	now := map[string]int{}
	var threads map[int]int // tid → index in s.Threads, built on first use
	thread := func(tid int) (*snapshot.OSThread, *osThreadAgg) {
		if threads == nil {
			threads = make(map[int]int, len(s.Threads))
			for i := range s.Threads {
				threads[s.Threads[i].TID] = i
			}
		}
		i, ok := threads[tid]
		if !ok {
			return nil, nil
		}
		var ta *osThreadAgg
		if i < len(a.os.cur) {
			ta = a.os.cur[i]
		}
		return &s.Threads[i], ta
	}
	verdict := func(tid int) *nativeVerdict {
		thread(tid) // builds the index
		if i, ok := threads[tid]; ok && i < len(verdicts) {
			return verdicts[i]
		}
		return nil
	}
	for _, fw := range s.Futexes {
		if fw.Kind == snapshot.FutexCondition {
			// Conditions are the idle waits on signal words; a waiter
			// the wait rule finds inside its work (a row's condition,
			// a write group's) is contention, counted at its resource.
			if idle := idleWaiters(fw, verdict); len(idle.TIDs) > 0 {
				a.os.addCondition(idle)
			}
			continue
		}
		// The resource its waiters count at: one a waiter's stack named
		// rather than the word's own name, which stands in for a site
		// only while no stack has named one.
		// Of several, the one most of its waiters count at.
		site, stacked, judged, most := "", false, 0, 0
		var bySite map[string]int
		for _, tid := range fw.TIDs {
			v := verdict(tid)
			if v == nil || v.w.Kind == "" {
				continue
			}
			judged++
			if v.resource == "" {
				continue
			}
			if bySite == nil {
				bySite = map[string]int{}
			}
			bySite[v.resource]++
			named := v.w.Site != ""
			if n := bySite[v.resource]; site == "" || named && !stacked || named == stacked && (n > most || n == most && v.resource < site) {
				site, stacked, most = v.resource, named, n
			}
		}
		if judged == len(fw.TIDs) && site == "" {
			// A futex the sweep could not class whose every waiter the
			// wait rule finds idle (a runtime's parked threads, a loop's
			// own event word): not a lock.
			a.os.addCondition(fw)
			continue
		}
		la := a.futexLock(fw.Address, fw.Location, fw.Kind)
		if site != "" && (stacked || la.nativeSite == "") {
			la.nativeSite = site
			a.noteSiteHolder(site, fw, thread)
		}
		addr := fmt.Sprintf("0x%x", fw.Address)
		n := len(fw.TIDs)
		la.noteKind("futex", n)
		la.samples++
		la.waiterSum += n
		for _, tid := range fw.TIDs {
			t, ta := thread(tid)
			a.noteNativeLockThread(ta)
			la.blockedSeconds += asleepSeconds(ta, dt)
			if v := verdict(tid); v != nil && v.w.Site != "" {
				la.waitFrames.inc(v.w.Site, 1)
			} else if t != nil {
				la.waitFrames.inc(nativeWaitSite(t.Stack), 1)
			}
		}
		now[la.id] = n
		waiters[la.id] = fw.TIDs
		if n >= la.peak {
			la.peak = n
			la.noteAddress(addr)
			la.waiterNames = la.waiterNames[:0]
			for i, tid := range fw.TIDs {
				if i == 10 {
					break
				}
				la.waiterNames = append(la.waiterNames, fmt.Sprintf("%s (tid %d)", names(tid), tid))
			}
		}
		a.noteFutexHolder(la, fw, n, func(tid int) (*snapshot.OSThread, string) {
			t, ta := thread(tid)
			if ta == nil {
				return t, ""
			}
			a.noteNativeLockThread(ta)
			return t, ta.name
		})
	}
	for id, la := range a.locks {
		if la.kind == "futex" {
			la.current = now[id]
			if !s.Time.IsZero() {
				la.waiters.add(s.Time, float64(now[id]))
			}
		}
	}
	return waiters
}

// noteSiteHolder counts what the holder of a contended native lock did
// at its resource: the resource's holders, as a Java resource's are its
// owners' frames.
func (a *Aggregator) noteSiteHolder(site string, fw snapshot.FutexWait, thread func(int) (*snapshot.OSThread, *osThreadAgg)) {
	sa := a.native.sites[site]
	h := fw.Holder
	if sa == nil || h == nil || h.TID == 0 {
		return
	}
	t, _ := thread(h.TID)
	if t == nil {
		return
	}
	sa.holders.inc(holderDoing(t), 1)
}

// holderDoing is what a native lock's holder does, for its resource's
// holders: what the OS shows of it and, blocked, where its stack waits
// ("in clock_nanosleep (hrtimer_nanosleep) at hold ← append_entry").
func holderDoing(t *snapshot.OSThread) string {
	_, act := holderActivity(t)
	if ws := nativeWaitSite(t.Stack); ws != "" && t.State != 'R' {
		act += " at " + ws
	}
	return act
}

// asleepSeconds is the part of the interval dt that the thread ta spent
// asleep, as its counters measured it since the previous sample.
func asleepSeconds(ta *osThreadAgg, dt time.Duration) float64 {
	if ta == nil || !ta.measured || dt <= 0 {
		return 0
	}
	d := ta.sinceLast
	asleep := dt - d.cpu - d.runQueueWait
	return min(max(asleep, 0), dt).Seconds()
}

// noteTick records what a thread did since the previous sample (n is this
// sample's number), before addLive moves its counters on to c.
func (ta *osThreadAgg) noteTick(c counters, n int) {
	ta.measured = n > 1 && ta.seenAt == n-1
	ta.sinceLast = c.sub(ta.last)
}

// noteFutexHolder keeps what the lock's memory said of its holder in this
// sample: counted, and described at the peak (as the waiters are).
func (a *Aggregator) noteFutexHolder(la *lockAgg, fw snapshot.FutexWait, n int, thread func(int) (*snapshot.OSThread, string)) {
	h := fw.Holder
	if h == nil || h.TID == 0 {
		if h != nil && h.Lock == "rwlock" && n >= la.futex.holderPeak {
			la.futex.holderPeak = n
			la.futex.holder = &FutexHolder{Lock: h.Lock, Readers: h.Readers}
			la.owner, la.ownerFrame = nil, nil
		}
		return
	}
	t, name := thread(h.TID)
	if t == nil {
		return // not in this sample's threads: not the target's
	}
	if name == "" {
		name = t.Name
	}
	runs, activity := holderActivity(t)
	var stack []string
	if site := nativeWaitSite(t.Stack); site != "" && t.State != 'R' {
		// Blocked in a system call inside its critical section: where.
		runs += " at " + site
		stack = frameNames(t.Stack, maxHolderFrames)
	}
	la.futex.holderSamples++
	la.ownerFrames.inc(activity, 1)
	if n >= la.futex.holderPeak {
		la.futex.holderPeak = n
		la.futex.holder = &FutexHolder{
			Thread: name, TID: h.TID, Lock: h.Lock, State: osStateName(t.State), CPU: t.Processor,
			Runs: runs, Readers: h.Readers, Stack: stack,
		}
		la.owner, la.ownerFrame = strPtr(name), strPtr(runs)
	}
}

// holderActivity says what a lock's holder was doing: with the CPU
// ("running on CPU 1") for the peak's description, and without it, for
// counting across samples ("running").
func holderActivity(t *snapshot.OSThread) (runs, activity string) {
	switch {
	case t.State == 'R':
		return "running on CPU " + strconv.Itoa(t.Processor), "running"
	case t.Syscall >= 0:
		activity = "in " + syscallName(t.Syscall)
		if t.WChan != "" && t.WChan != "0" {
			activity += " (" + t.WChan + ")"
		}
		return activity, activity
	case t.WChan != "" && t.WChan != "0":
		return "waiting in " + t.WChan, "waiting in " + t.WChan
	}
	return osStateName(t.State), osStateName(t.State)
}

// futexHolderSummary is the lock's holder for the summary; nil when the
// lock's memory never named one.
func futexHolderSummary(la *lockAgg) *FutexHolder {
	if la.futex == nil || la.futex.holder == nil {
		return nil
	}
	h := *la.futex.holder
	h.Samples = la.futex.holderSamples
	return &h
}

// futexClass is the futex lock's class: its stable short name
// ("contended_mutex", "app+0x4040", "[heap]+0x2a0"), the same from run to
// run, so that diff and the metrics follow the lock across restarts.
func futexClass(l symbolize.Location) string {
	if l.Module == "" && l.Symbol == "" {
		return ""
	}
	return l.ShortName()
}

// futexName names a futex in a sentence or a column, without "futex":
// its symbol with its module ("contended_mutex (app+0x4040)"), else its
// stable name, else (an address no mapping held) its address.
func futexName(symbol *string, class, address string) string {
	switch {
	case symbol != nil:
		return *symbol
	case class != "":
		return class
	}
	return address
}

// syscallName names a system call as the wait rule's reasons do.
func syscallName(nr int) string { return nativewait.SyscallName(nr) }

// futexFinding describes a native lock hotspot: threads blocked in futex(2)
// on one address that is not a condition variable. A lock with waiters in
// few samples is called sporadic, and informs rather than warns: a queue
// seen now and then is not where the time goes.
func futexFinding(l LockSummary, samples int) Finding {
	name, where := futexSubject(l)
	sev := SeverityWarning
	if l.Waiters >= 5 || l.AvgWaiters >= 4 {
		sev = SeverityCritical
	}
	seen := ""
	if l.DumpsSeen <= 1 {
		// One sample is a snapshot: it cannot carry a critical finding.
		sev = SeverityWarning
		seen = ", seen in 1 sample"
	}
	ev := []string{fmt.Sprintf("futex %s at address %s, %.2f waiters on average over %d samples, with waiters in %s",
		futexName(l.Symbol, l.Class, l.Address), l.Address, l.AvgWaiters, samples, plural(l.DumpsSeen, "sample"))}
	if h := l.Holder; h != nil && h.TID != 0 {
		ev = append(ev, fmt.Sprintf("held by %q (tid %d), %s, at the sample with the most waiters; the %s named a holder in %d of %s",
			h.Thread, h.TID, h.Runs, h.Lock, h.Samples, plural(l.DumpsSeen, "sample")))
		if len(l.OwnerFrames) > 1 {
			var parts []string
			for _, f := range l.OwnerFrames {
				parts = append(parts, fmt.Sprintf("%s %d", f.Frame, f.Samples))
			}
			ev = append(ev, "what the holder did, by samples: "+strings.Join(parts, ", "))
		}
	} else if h != nil && h.Lock == "rwlock" {
		ev = append(ev, "an rwlock with no writer at the sample with the most waiters"+readersClause(h.Readers))
	}
	if len(l.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+strings.Join(l.WaiterThreads, ", "))
	}
	if sites := waitSitesClause(l.WaitFrames); sites != "" {
		ev = append(ev, "where the waiters wait (their own code, from their native stacks), by sightings: "+sites)
	}
	if h := l.Holder; h != nil && len(h.Stack) > 0 {
		ev = append(ev, "the holder's stack at that sample: "+strings.Join(h.Stack, " ← "))
	}
	if x := l.Exact; x != nil {
		ev = append(ev, exactEvidence(x))
	}
	if l.BlockedThreadSeconds > 0 {
		ev = append(ev, fmt.Sprintf("threads spent %.1f s queued on it in all (each sighting counts the time the waiter was off the CPU since the sample before)", l.BlockedThreadSeconds))
	}
	if l.FutexKind == "unknown" {
		ev = append(ev, "ctprof could not tell a lock from a condition at this address; treat it as contention")
	}
	held := ""
	if h := l.Holder; h != nil && h.TID != 0 {
		held = fmt.Sprintf("; %q held it, %s", h.Thread, h.Runs)
	}
	summary := fmt.Sprintf("Up to %d threads wait on %s%s (blocked in %.0f%% of samples, %.1f on average%s%s).",
		l.Waiters, name, where, 100*l.BlockedShare, l.AvgWaiters, seen, held)
	impact := 1e6 + float64(l.Waiters)*1000 + l.AvgWaiters
	next := "Find the code that takes this mutex (perf record -g, or gdb on one waiter) and shorten or split its critical section."
	if l.WaitFrame != nil {
		next = "Shorten or split the critical section the threads enter at " + *l.WaitFrame + ", or give each thread its own lock (the waiters' stacks are in the lock's detail and the flame graph)."
	}
	if sporadic(l, samples) {
		sev = SeverityInfo
		summary = fmt.Sprintf("Sporadic: up to %d threads waited on %s%s, in %s of %d (%.0f%%)%s.",
			l.Waiters, name, where, plural(l.DumpsSeen, "sample"), samples, 100*l.BlockedShare, held)
		next = "A queue seen this seldom costs little; sample longer or faster to tell whether it grows under load."
		impact = 1e3 + float64(l.Waiters)
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Subject:  LockName(l),
		Severity: sev,
		Summary:  summary,
		Evidence: ev,
		NextStep: next,
		impact:   impact,
	}
}

// readersClause says ", held by 3 readers" when an rwlock counted some,
// "" otherwise.
func readersClause(n int) string {
	if n <= 0 {
		return ""
	}
	return ", held by " + plural(n, "reader")
}

// HolderReaders is readersClause for the sinks.
func HolderReaders(h *FutexHolder) string {
	if h == nil {
		return ""
	}
	return readersClause(h.Readers)
}

// waitSitesClause lists a lock's wait sites with their sightings:
// "post_entry ← worker_loop 40, flush ← worker_loop 3"; "" without any.
func waitSitesClause(frames []FrameCount) string {
	parts := make([]string, 0, len(frames))
	for _, f := range frames {
		parts = append(parts, fmt.Sprintf("%s %d", f.Frame, f.Samples))
	}
	return strings.Join(parts, ", ")
}

// maxNativeLockThreads bounds Aggregator.nativeLockThreads.
const maxNativeLockThreads = 10000

// noteNativeLockThread remembers that ta queued on or held a native lock.
func (a *Aggregator) noteNativeLockThread(ta *osThreadAgg) {
	if ta == nil || ta.name == "" {
		return
	}
	if a.nativeLockThreads == nil {
		a.nativeLockThreads = map[string]bool{}
	}
	if len(a.nativeLockThreads) < maxNativeLockThreads {
		a.nativeLockThreads[ta.name] = true
	}
}

// futexSubject is what a futex lock's finding is about: "futex NAME", and
// " in SITE" where its waiters' stacks said where they wait ("" without).
func futexSubject(l LockSummary) (name, where string) {
	name = "futex " + futexName(l.Symbol, l.Class, l.Address)
	if l.WaitFrame != nil {
		where = " in " + *l.WaitFrame
	}
	return name, where
}

// HolderDoes phrases what a resource's holders did at most (for a wait
// without an owner, the thread its waiters wait for): "runs FRAME" for a
// frame of code, "was running" or "was in futex (…)" for what the OS showed
// of a holder whose stack was not read (holderActivity); plural for
// holders ("run", "were").
func HolderDoes(frame string, plural bool) string {
	was, runs := "was ", "runs "
	if plural {
		was, runs = "were ", "run "
	}
	switch {
	case frame == "running", strings.HasPrefix(frame, "in "), strings.HasPrefix(frame, "waiting in "):
		return was + frame
	}
	for _, st := range []byte("RSDTZI") {
		if frame == osStateName(st) {
			return was + frame
		}
	}
	return runs + frame
}

// idleWaiters is fw with only the waiters the wait rule did not find
// waiting inside their work (those it could not judge included).
func idleWaiters(fw snapshot.FutexWait, verdict func(tid int) *nativeVerdict) snapshot.FutexWait {
	busy := func(tid int) bool {
		v := verdict(tid)
		return v != nil && (v.w.Verdict == nativewait.Contention || v.w.Verdict == nativewait.IO)
	}
	if !slices.ContainsFunc(fw.TIDs, busy) {
		return fw
	}
	idle := make([]int, 0, len(fw.TIDs))
	for _, tid := range fw.TIDs {
		if !busy(tid) {
			idle = append(idle, tid)
		}
	}
	fw.TIDs = idle
	return fw
}
