package analysis

import (
	"fmt"
	"github.com/ctprof/ctprof/internal/nativewait"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Stable finding kinds (docs/json.md).
const (
	FindingDeadlock            = "deadlock"
	FindingLockHotspot         = "lock-hotspot"
	FindingSerialization       = "serialization"
	FindingThreadPerConnection = "thread-per-connection"
	FindingWakeupStorm         = "wakeup-storm"
	FindingCPUSaturation       = "cpu-saturation"
	FindingStuck               = "stuck-thread"
	// A target that does not answer (hung.go).
	FindingStopped        = "process-stopped"
	FindingSafepointStall = "safepoint-stall"
	FindingGCPause        = "gc-pause"
)

// Severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// findings turns the computed tables into plain-language conclusions,
// ordered by impact. Each kind of finding has a builder of its own; they
// are appended in a fixed order so that findings of equal impact keep it
// through the stable sort. out starts empty, not nil: the JSON summary
// prints "findings": [] when there are none. extra are findings built
// from what the Summary does not hold (hung.go).
func findings(s *Summary, extra ...Finding) []Finding {
	out := []Finding{}
	out = append(out, deadlockFindings(s)...)
	resources, covered := resourceFindings(s)
	out = append(out, resources...)
	out = append(out, lockFindings(s, covered)...)
	out = append(out, stuckFindings(s)...)
	out = append(out, serializationFindings(s, covered)...)
	out = append(out, connectionFindings(s)...)
	out = append(out, wakeupFindings(s)...)
	out = append(out, saturationFindings(s)...)
	out = append(out, extra...)
	sortFindings(out)
	return out
}

// deadlockFindings makes one critical finding per deadlock, above every
// other finding: its threads never recover on their own.
func deadlockFindings(s *Summary) []Finding {
	var out []Finding
	for _, d := range s.Deadlocks {
		var ev []string
		for i, t := range d.Threads {
			next := d.Threads[(i+1)%len(d.Threads)]
			l := d.Locks[i]
			ev = append(ev, fmt.Sprintf("%q waits for %s %s %s held by %q", t, l.Kind, l.Class, l.Address, next))
		}
		who := "the JVM"
		switch d.Source {
		case "ctprof":
			who = "ctprof (the JVM did not report it)"
		case "jvm+ctprof":
			who = "the JVM and ctprof"
		}
		out = append(out, Finding{
			Kind:     FindingDeadlock,
			Subject:  "threads " + quoteList(slices.Sorted(slices.Values(d.Threads))),
			Severity: SeverityCritical,
			Summary: fmt.Sprintf("Deadlock: %d threads wait for each other forever (%s), found by %s in %d of %d dumps.",
				len(d.Threads), quoteList(d.Threads), who, d.Dumps, s.Dumps),
			Evidence: ev,
			NextStep: "Make every code path take these locks in one global order, or use tryLock with a timeout; the threads will not recover without a restart.",
			impact:   1e9 + float64(len(d.Threads)),
		})
	}
	return out
}

// resourceFindings makes one finding per resource whose waiters queue on
// several instances of it, and returns the IDs of the resources it
// covered: the instances' own findings would split one queue into many,
// so lockFindings and serializationFindings leave them out. A striped
// resource (one waiter per instance) is no queue and gets no finding here.
func resourceFindings(s *Summary) (out []Finding, covered map[string]bool) {
	covered = map[string]bool{}
	for _, cs := range s.ContentionSites {
		if cs.Native {
			// A condition's waiters have no lock instance to speak for
			// them; a mutex's one instance does (futexFinding). A file
			// lock has no entry in the lock table: its resource speaks
			// for it.
			if cs.Striped || cs.Instances <= 1 && !cs.Ownerless && cs.Kind != string(nativewait.FileLock) {
				continue
			}
			if f, ok := nativeResourceFinding(cs, s); ok {
				out = append(out, f)
				covered[cs.ID] = true
			}
			continue
		}
		if cs.Striped || cs.Instances <= 1 {
			continue
		}
		if f, ok := resourceFinding(cs, s); ok {
			out = append(out, f)
			covered[cs.ID] = true
		}
	}
	return out, covered
}

// lockFindings makes one finding per lock instance that is a hotspot and
// is not reported another way: by its resource (covered), by a deadlock,
// or as part of a striped design.
func lockFindings(s *Summary, covered map[string]bool) []Finding {
	var out []Finding
	inDeadlock := map[string]bool{}
	for _, d := range s.Deadlocks {
		for _, l := range d.Locks {
			inDeadlock[l.Kind+"|"+l.Class+"|"+l.Address] = true
		}
	}
	stripedSites := map[string]bool{}
	sites := map[string]ContentionSite{}
	for _, cs := range s.ContentionSites {
		sites[cs.ID] = cs
		if cs.Striped {
			stripedSites[cs.ID] = true
		}
	}
	for _, l := range s.Locks {
		if l.Site != "" && covered[l.Site] {
			continue
		}
		if l.DumpsSeen == 0 && l.JFR != nil {
			// Seen only in a recording: its exact waits speak for it.
			if f, ok := jfrFinding(l, s); ok {
				out = append(out, f)
			}
			continue
		}
		if l.Kind == "futex" && exactHot(l.Exact) && (l.Waiters < 2 || l.DumpsSeen == 0) {
			// Waits the samples barely saw, which the kernel counted.
			out = append(out, exactFutexFinding(l, s))
			continue
		}
		if l.Kind == "futex" && l.Exact == nil && l.FastReads != nil && l.FastReads.Share >= fastHotShare && s.FastReads != nil && (l.Waiters < 2 || l.BlockedShare < 0.5) {
			// Waits too short for the samples, which the fast reads caught.
			out = append(out, fastFutexFinding(l, s))
			continue
		}
		// One waiter is a hotspot only when it is there most of the time
		// over several samples (in a single dump every waited-on lock has
		// a waiter "always"); a lock of a deadlock is reported with it.
		if l.Waiters < 2 && (s.Samples < 3 || l.BlockedShare < 0.5) {
			continue
		}
		if inDeadlock[l.Resource+"|"+l.Class+"|"+l.Address] {
			continue
		}
		// One waiter on each of many instances of one class at one site
		// is a striped design spreading its load, not a hotspot.
		if l.Waiters < 2 && stripedSites[l.Site] {
			continue
		}
		if l.Kind == "futex" {
			out = append(out, futexFinding(l, s.Samples))
			continue
		}
		cs, atSite := sites[l.Site]
		out = append(out, lockHotspotFinding(l, s, cs, atSite))
	}
	return out
}

// lockHotspotFinding words the finding for one contended Java lock: how
// many wait and how, where, who holds it, and what to do about it. cs is
// the resource the lock's waiters wait at, when atSite says there is one:
// with no owner, the resource's pool tells what the waiters belong to.
func lockHotspotFinding(l LockSummary, s *Summary, cs ContentionSite, atSite bool) Finding {
	series := s.Dumps > 1
	sev := SeverityWarning
	if l.Waiters >= 5 || l.AvgWaiters >= 4 {
		sev = SeverityCritical
	}
	owner := lockOwnerPhrase(l)
	where := ""
	if l.WaitFrame != nil {
		where = " at " + *l.WaitFrame
	}
	what, verb := lockWaitersPhrase(l, series)
	// A single dump is a snapshot, not a measure of contention: it
	// can say where threads queue, not that they always do.
	if sev == SeverityCritical && l.DumpsSeen <= 1 {
		sev = SeverityWarning
		if !series {
			where += " (seen in 1 dump)"
		}
	}
	ev := []string{fmt.Sprintf("%s %s %s", l.Resource, l.Class, l.Address)}
	if len(l.WaitKinds) > 1 {
		ev = append(ev, "how they wait, by waiter samples: "+WaitKindBreakdown(l.WaitKinds))
	}
	if l.OwnerLockFrame != nil {
		ev = append(ev, "owner took it in "+*l.OwnerLockFrame)
	}
	if len(l.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+quoteList(l.WaiterThreads))
	}
	if series {
		ev = append(ev, lockSeriesEvidence(l)...)
	}
	if atSite && l.Owner == nil {
		if p := poolSentence(cs); p != "" {
			owner += "; " + p
		}
	}
	next := "Shorten the critical section, split the lock, or replace it with a concurrent structure; look at what the owner does while holding it."
	switch {
	case l.Owner == nil && l.Releaser == nil && waitsForSignal(l):
		next = handOffNextStep
	case waitsForSignal(l):
		next = "The waiters wait inside work for one thread to finish (a group commit, a transaction holding a row): make that thread's step shorter or batch more per step, or let callers go on without waiting for it."
	case l.Owner == nil && l.Resource == "synchronizer":
		next = "Take the dump with `jcmd <pid> Thread.print -l` to see which thread owns this lock; then shorten or split its critical section."
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Subject:  LockName(l),
		Severity: sev,
		Summary:  fmt.Sprintf("%s %s on %s%s%s, %s.", capitalize(what), verb, LockName(l), waitHow(l), where, owner) + jfrSentence(l),
		Evidence: ev,
		NextStep: next,
		impact:   1e6 + float64(l.Waiters)*1000 + l.AvgWaiters,
	}
}

// lockOwnerPhrase says who holds a contended lock, or, when nobody does,
// what the waiters wait for instead: a thread running the same code
// without waiting, or a signal.
func lockOwnerPhrase(l LockSummary) string {
	owner := "held by an owner the dump does not name"
	switch {
	case l.Owner != nil:
		owner = fmt.Sprintf("held by %q", *l.Owner)
		if l.OwnerFrame != nil {
			owner += " running " + *l.OwnerFrame
		}
	case l.Releaser != nil:
		owner = fmt.Sprintf("nobody holds it while they wait; %q runs the same code without waiting", *l.Releaser)
		if l.ReleaserFrame != nil {
			owner += " (running " + *l.ReleaserFrame + ")"
		}
	case waitsForSignal(l):
		owner = "nobody holds it: they wait for another thread to hand something back or signal them, and the dump does not tell which"
	}
	return owner
}

// lockWaitersPhrase gives the subject and verb of a lock finding: how
// many threads, and whether they queue for the lock or wait for a signal.
// Over a series of dumps the subject carries the numbers of the series and
// the verb is always plural ("up to 3 threads ... queue").
func lockWaitersPhrase(l LockSummary, series bool) (what, verb string) {
	what, verb = plural(l.Waiters, "thread"), "queue"
	if l.Waiters == 1 {
		verb = "queues"
	}
	if waitsForSignal(l) {
		verb = "wait"
		if l.Waiters == 1 && !series {
			verb = "waits"
		}
	}
	if series {
		verb = "queue"
		what = fmt.Sprintf("up to %d threads (%.1f on average, blocked in %.0f%% of dumps, seen in %s)", l.Waiters, l.AvgWaiters, 100*l.BlockedShare, plural(l.DumpsSeen, "dump"))
		if waitsForSignal(l) {
			verb = "wait"
		}
	}
	return what, verb
}

// stuckFindings makes one finding per group of stuck threads in the same
// state at the same frame: a pool stuck in one place is one problem, not
// one per thread.
func stuckFindings(s *Summary) []Finding {
	type stuckGroup struct {
		state, frame string
		names        []string
		dumps        int
	}
	var groups []*stuckGroup
	for _, st := range s.StuckThreads {
		var g *stuckGroup
		for _, x := range groups {
			if x.state == st.State && x.frame == st.Frame {
				g = x
			}
		}
		if g == nil {
			g = &stuckGroup{state: st.State, frame: st.Frame, dumps: st.Dumps}
			groups = append(groups, g)
		}
		g.names = append(g.names, st.Thread)
	}
	var out []Finding
	for _, g := range groups {
		sev := SeverityInfo
		next := "Check whether this thread makes progress: a loop that never ends or a call that never returns."
		if g.state == "BLOCKED" {
			sev = SeverityWarning
			next = "The lock's owner did not change across the dumps: look at what it is doing, or whether it ever releases the lock."
		}
		who := fmt.Sprintf("Thread %q is", g.names[0])
		if len(g.names) > 1 {
			who = fmt.Sprintf("%d threads are", len(g.names))
		}
		out = append(out, Finding{
			Kind:     FindingStuck,
			Subject:  g.state + " at " + g.frame,
			Severity: sev,
			Summary:  fmt.Sprintf("%s %s in the same stack in all %d dumps, at %s.", who, g.state, g.dumps, g.frame),
			Evidence: []string{"threads: " + quoteList(g.names)},
			NextStep: next,
			impact:   map[string]float64{SeverityWarning: 1e3, SeverityInfo: 1}[sev] + float64(len(g.names)),
		})
	}
	return out
}

// lockSeriesEvidence says, for a series, how long threads queued and what
// the owner ran while they did.
func lockSeriesEvidence(l LockSummary) []string {
	var ev []string
	if l.BlockedThreadSeconds > 0 {
		ev = append(ev, fmt.Sprintf("threads spent %.1f s queued on it in all", l.BlockedThreadSeconds))
	}
	if len(l.Addresses) > 1 {
		ev = append(ev, fmt.Sprintf("seen at %d addresses (the GC moved it): %s", len(l.Addresses), strings.Join(l.Addresses, ", ")))
	}
	if len(l.OwnerFrames) > 0 {
		var parts []string
		for _, f := range l.OwnerFrames {
			parts = append(parts, fmt.Sprintf("%s (%d)", f.Frame, f.Samples))
		}
		ev = append(ev, "owner ran, by samples: "+strings.Join(parts, "; "))
	}
	return ev
}

// handOffNextStep is the advice for threads that wait inside work for a
// signal nobody is seen to be about to give: a hand-off from a pool, a
// latch or a transaction.
const handOffNextStep = "The threads wait inside work for another thread to hand something back or to finish. If this is a pool (connections, objects, permits), it is exhausted: size it to the concurrency that uses it, shorten how long each borrower holds an item, or look for items that are never returned. If it is a transaction, table or row lock, shorten the transaction that holds it or make the waiters touch less of the same data."

// poolSentence says how much of the waiters' pool waits at a resource
// and what the rest of the pool runs meanwhile ("20 of 24 worker-N
// threads wait here; the other 4 run App.query(App.java:40)"); empty
// when the waiters belong to no pool of several threads.
func poolSentence(cs ContentionSite) string {
	if cs.Pool == "" || cs.PoolThreads < 2 || cs.PoolWaiting < 1 {
		return ""
	}
	of := "threads"
	if cs.WaiterProcesses {
		of = "processes"
	}
	p := fmt.Sprintf("%d of %d %s %s wait here", cs.PoolWaiting, cs.PoolThreads, cs.Pool, of)
	working := 0
	for _, f := range cs.OthersRun {
		working += f.Samples
	}
	if working > 0 {
		p += fmt.Sprintf("; %d of the others work, in %s", working, cs.OthersRun[0].Frame)
		if len(cs.OthersRun) > 1 {
			p += " and elsewhere"
		}
	}
	return p
}

// resourceFinding is the finding of a resource whose waiters wait on
// several instances of one class at one site (a latch per session, the
// transaction object of whoever holds a row): one queue, counted over all
// its instances. ok is false when the resource is not contended enough to
// report, by the rule a single lock follows.
func resourceFinding(cs ContentionSite, s *Summary) (Finding, bool) {
	if cs.Waiters < 2 && (s.Samples < 3 || cs.BlockedShare < 0.5) {
		return Finding{}, false
	}
	series := s.Dumps > 1
	sev := SeverityWarning
	if (cs.Waiters >= 5 || cs.AvgWaiters >= 4) && cs.DumpsSeen > 1 {
		sev = SeverityCritical
	}
	what := fmt.Sprintf("%s wait", capitalize(plural(cs.Waiters, "thread")))
	if series {
		what = fmt.Sprintf("Up to %d threads (%.1f on average, blocked in %.0f%% of dumps, seen in %s) wait",
			cs.Waiters, cs.AvgWaiters, 100*cs.BlockedShare, plural(cs.DumpsSeen, "dump"))
	}
	instances := fmt.Sprintf("%d instances of %s over the run, at most %d at once", cs.Instances, shortClass(cs.Class), cs.PeakInstances)
	who := ""
	switch {
	case cs.Ownerless && len(cs.Holders) > 0:
		who = "nobody holds them while they wait; the thread they wait for " + HolderDoes(cs.Holders[0].Frame, false)
	case cs.Ownerless:
		who = "nobody holds them while they wait: each waits for a signal from another thread"
	case len(cs.Holders) > 0:
		who = "their holders " + HolderDoes(cs.Holders[0].Frame, true)
	}
	summary := fmt.Sprintf("%s at %s on %s (%s)", what, cs.WaitFrame, shortClass(cs.Class), instances)
	if who != "" {
		summary += ", " + who
	}
	if p := poolSentence(cs); p != "" {
		summary += "; " + p
	}
	summary += "."
	ev := []string{fmt.Sprintf("resource %s: %s at %s", cs.Kind, cs.Class, cs.WaitFrame)}
	if cs.BlockedThreadSeconds > 0 {
		ev = append(ev, fmt.Sprintf("threads spent %.1f s waiting here in all", cs.BlockedThreadSeconds))
	}
	ev = append(ev, fmt.Sprintf("at most %d waiters on one instance: the queue is at the resource, not at one object", cs.MaxInstanceWaiters))
	if len(cs.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+quoteList(cs.WaiterThreads))
	}
	next := "Shorten what the holders do while the waiters queue, or let fewer threads need this resource at once."
	if cs.Ownerless {
		next = handOffNextStep
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

// LockName names a lock in a sentence: "monitor SyncSingleton", "futex
// contended_mutex (app+0x4040)".
func LockName(l LockSummary) string {
	if l.Kind == "futex" {
		return "futex " + futexName(l.Symbol, l.Class, l.Address)
	}
	what := l.Resource
	if what == "" {
		what = l.Kind
	}
	if what == "park" {
		return "a park with no blocker in " + shortClass(l.Class)
	}
	return what + " " + shortClass(l.Class)
}

// NoFindings says, when no rule fired, what the data showed instead, so the
// text and HTML outputs state facts rather than a stock sentence.
func NoFindings(s *Summary) string {
	most, name := 0, ""
	for _, l := range s.Locks {
		if l.Waiters > most {
			most, name = l.Waiters, LockName(l)
		}
	}
	locks := "no thread waited on a lock"
	if most > 0 {
		locks = fmt.Sprintf("at most %s waited on one lock at once (%s)", plural(most, "thread"), name)
	}
	return fmt.Sprintf("None: %s, no deadlock, nothing stuck.", locks)
}

// WaitKindWords says how a thread of a wait kind waits ("re-acquiring it
// after wait()"); empty for an unknown kind.
func WaitKindWords(kind string) string { return waitKindWords[kind] }

// waitKindWords says how a thread of each wait kind waits.
var waitKindWords = map[string]string{
	"monitor":      "entering it",
	"relock":       "re-acquiring it after wait()",
	"wait":         "in wait() inside work",
	"synchronizer": "parked to acquire it",
	"condition":    "awaiting a signal inside work",
	"future":       "waiting for a result",
	"class-init":   "waiting for its static initializer",
}

// waitsForSignal reports a lock whose waiters mostly wait for a signal
// (a notify or a condition) rather than queue behind an owner.
func waitsForSignal(l LockSummary) bool {
	switch l.Kind {
	case "wait", "condition", "future":
		return true
	case "relock":
		return l.Owner == nil
	}
	return false
}

// waitHow says, in a sentence, how the waiters wait when that is not
// plainly entering the lock: " (in wait() inside work, or re-acquiring it
// after wait())".
func waitHow(l LockSummary) string {
	if (l.Kind == "monitor" || l.Kind == "synchronizer" || l.Kind == "futex") && len(l.WaitKinds) <= 1 {
		return ""
	}
	var parts []string
	for _, k := range sortedKinds(l.WaitKinds) {
		if w := waitKindWords[k]; w != "" {
			parts = append(parts, w)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", or ") + ")"
}

// WaitKindBreakdown lists waiter samples by wait kind, most first: "40
// wait (in wait() inside work), 12 relock (re-acquiring it after wait())".
func WaitKindBreakdown(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKinds(m) {
		p := fmt.Sprintf("%d %s", m[k], k)
		if w := waitKindWords[k]; w != "" {
			p += " (" + w + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// sortedKinds orders wait kinds by samples, most first, then by rank.
func sortedKinds(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if m[ks[i]] != m[ks[j]] {
			return m[ks[i]] > m[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// serializationFindings says which locks serialize a pool; a lock whose
// resource made a finding of its own (covered: a queue through many
// instances) is said there, not per instance.
func serializationFindings(s *Summary, covered map[string]bool) []Finding {
	byID := map[string]LockSummary{}
	for _, l := range s.Locks {
		byID[l.ID] = l
	}
	var out []Finding
	for _, sr := range s.Serialization {
		// A lock serializes a pool when about one of its threads runs while
		// several queue for the lock. With none running the pool is stalled,
		// not serialized: the lock hotspot finding covers that.
		if sr.Queueing < 2 || sr.Running < 0.5 || sr.Running > 1.5 {
			continue
		}
		l, ok := byID[sr.LockID]
		if !ok || l.Site != "" && covered[l.Site] {
			continue
		}
		sev := SeverityWarning
		if sr.Queueing >= 5 && sr.Samples > 1 {
			sev = SeverityCritical
		}
		where := ""
		if l.WaitFrame != nil {
			where = " at " + *l.WaitFrame
		}
		avg := "on average"
		if sr.Samples == 1 {
			avg = "in the one sample"
		}
		sum := fmt.Sprintf("%s serializes pool %q: of its %.0f threads, %.1f run %s while %.1f queue for it%s.",
			capitalize(LockName(l)), sr.Pool, sr.Threads, sr.Running, avg, sr.Queueing, where)
		ev := []string{fmt.Sprintf("over %s", plural(sr.Samples, "sample"))}
		if u := s.CPUUse; u != nil {
			ev = append(ev, fmt.Sprintf("the process uses %.2f of its %d CPUs (%.0f %%)", u.CoresUsed, u.CPUsAllowed, 100*u.ShareOfAllowed))
		}
		if l.OwnerLockFrame != nil {
			ev = append(ev, "the owner holds it from "+*l.OwnerLockFrame)
		}
		out = append(out, Finding{
			Kind:     FindingSerialization,
			Subject:  LockName(l) + " in pool " + strconv.Quote(sr.Pool),
			Severity: sev,
			Summary:  sum,
			Evidence: ev,
			NextStep: serializationNextStep(s),
			impact:   1e6 - 1 + sr.Queueing*1000,
		})
	}
	return out
}

func connectionFindings(s *Summary) []Finding {
	t := s.ThreadsPerConnection
	if t == nil || s.Connections == nil {
		return nil
	}
	per := t.Ratio
	var sum string
	var ev []string
	switch {
	case t.Slope != nil && *t.R2 >= 0.8 && *t.Slope >= 1:
		per = *t.Slope
		if len(t.GrowingPools) > 0 {
			g := t.GrowingPools[0]
			sum = fmt.Sprintf("%.1f threads per connection: pool %q grows with connections (%.1f per connection, R² %.2f).", per, g.Pool, g.Slope, g.R2)
		} else {
			sum = fmt.Sprintf("%.1f threads per connection: the thread count grows with connections (R² %.2f).", per, *t.R2)
		}
		ev = append(ev, fmt.Sprintf("connections went from %d to %d during the run", t.MinConnections, t.MaxConnections))
		for _, g := range t.GrowingPools {
			ev = append(ev, fmt.Sprintf("pool %q: %.2f threads per connection (R² %.2f)", g.Pool, g.Slope, g.R2))
		}
	case t.ProcessesRatio > 0 && s.Processes != nil && s.Connections.Established >= 2:
		// A server made of processes: one per client is its design;
		// several per client is the explosion.
		per = t.ProcessesRatio
		sum = fmt.Sprintf("%.1f processes per connection: %d processes (%d threads) for %d established connections.", per, s.Processes.Last, s.Threads, s.Connections.Established)
		ev = append(ev, "the target is a tree of processes: this counts its processes, a process per client being the design of a server that forks one")
	case s.Connections.Established >= 2 && t.Ratio >= 2:
		sum = fmt.Sprintf("%.1f threads per connection: %d threads for %d established connections.", t.Ratio, s.Threads, s.Connections.Established)
		ev = append(ev, "the connection count did not change during the run, so this is the plain ratio")
	default:
		return nil
	}
	if per < 2 {
		return nil
	}
	sev := SeverityInfo
	if per >= 5 {
		sev = SeverityWarning
	}
	var pool string
	if t.Slope != nil && len(t.GrowingPools) > 0 {
		pool = t.GrowingPools[0].Pool
	}
	return []Finding{{
		Kind:                 FindingThreadPerConnection,
		Subject:              poolSubject(pool),
		Severity:             sev,
		Summary:              sum,
		Evidence:             ev,
		NextStep:             "Threads that grow with users stop scaling long before the CPUs do: serve connections from a fixed pool or an event loop, and let idle connections hold no thread.",
		ThreadsPerConnection: &per,
		Pool:                 pool,
		impact:               5e5 + per,
	}}
}

func wakeupFindings(s *Summary) []Finding {
	var out []Finding
	for _, w := range s.Wakeups {
		if w.PerSecond < 100 && w.HostShare < 0.1 {
			continue
		}
		sev := SeverityInfo
		if w.PerSecond >= 1000 || w.HostShare >= 0.25 {
			sev = SeverityWarning
		}
		period, threads := w.PeriodMillis/1000, w.Threads
		who := fmt.Sprintf("%d threads of pool %q wake", w.Threads, w.Pool)
		if w.Threads == 1 {
			who = fmt.Sprintf("Thread %q wakes", w.Pool)
		}
		share := ""
		if w.HostShare > 0 {
			share = fmt.Sprintf(", %.0f %% of the host's context switches", 100*w.HostShare)
		}
		out = append(out, Finding{
			Kind:     FindingWakeupStorm,
			Subject:  poolSubject(w.Pool),
			Severity: sev,
			Summary: fmt.Sprintf("%s every %.0f ms to do almost nothing (%.2f %% CPU each): %.0f wake-ups per second%s.",
				who, w.PeriodMillis, w.CPUPercentPerThread, w.PerSecond, share),
			Evidence:      []string{fmt.Sprintf("median period %.1f ms, estimated from voluntary context switches of threads sleeping in timed waits", w.PeriodMillis)},
			NextStep:      "Replace polling with blocking on an event (a condition, a queue, epoll), or let one thread poll for all of them; each wake-up costs two context switches and a trip through the scheduler.",
			PeriodSeconds: &period,
			Threads:       &threads,
			impact:        4e5 + w.PerSecond,
		})
	}
	return out
}

// poolSubject is a pool's finding's subject; "process" when the finding
// names no pool.
func poolSubject(pool string) string {
	if pool == "" {
		return "process"
	}
	return "pool " + strconv.Quote(pool)
}

// FindingKey names a finding for matching it with itself elsewhere: after
// the next dump of a followed log, in the other run of a diff. It is the
// kind and the subject; a finding without a subject (from a JSON summary
// an older ctprof wrote) is known by its sentence, its numbers and
// addresses taken out.
func FindingKey(f Finding) string {
	if f.Subject != "" {
		return f.Kind + "|" + f.Subject
	}
	return f.Kind + "|~" + keyNumber.ReplaceAllString(keyAddress.ReplaceAllString(f.Summary, "0x"), "#")
}

var (
	keyAddress = regexp.MustCompile(`0x[0-9a-fA-F]+`)
	keyNumber  = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
)

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// shortClass keeps the simple class name plus its outer classes:
// "java.util.concurrent.locks.ReentrantLock$NonfairSync" → "ReentrantLock$NonfairSync".
func shortClass(c string) string {
	if c == "" {
		return "(unknown class)"
	}
	if i := strings.LastIndexByte(c, '.'); i >= 0 && i < len(c)-1 {
		return c[i+1:]
	}
	return c
}

// plural renders "1 sample", "3 samples".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun) // processes
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
