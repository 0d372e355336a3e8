package analysis

import (
	"fmt"
	"sort"
	"strings"
)

// Stable finding kinds (docs/json.md).
const (
	FindingDeadlock    = "deadlock"
	FindingLockHotspot = "lock-hotspot"
	FindingStuck       = "stuck-thread"
)

// Severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// findings turns the computed tables into plain-language conclusions,
// ordered by impact.
func findings(s *Summary) []Finding {
	out := []Finding{}
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
			Severity: SeverityCritical,
			Summary: fmt.Sprintf("Deadlock: %d threads wait for each other forever (%s), found by %s in %d of %d dumps.",
				len(d.Threads), quoteList(d.Threads), who, d.Dumps, s.Dumps),
			Evidence: ev,
			NextStep: "Make every code path take these locks in one global order, or use tryLock with a timeout; the threads will not recover without a restart.",
			impact:   1e9 + float64(len(d.Threads)),
		})
	}
	for _, l := range s.Locks {
		if l.Waiters < 2 && l.BlockedShare < 0.5 {
			continue
		}
		if l.Kind == "futex" {
			out = append(out, futexFinding(l, s.Samples))
			continue
		}
		sev := SeverityWarning
		if l.Waiters >= 5 || l.AvgWaiters >= 4 {
			sev = SeverityCritical
		}
		owner := "an owner the dump does not name"
		if l.Owner != nil {
			owner = fmt.Sprintf("%q", *l.Owner)
			if l.OwnerFrame != nil {
				owner += " running " + *l.OwnerFrame
			}
		}
		where := ""
		if l.WaitFrame != nil {
			where = " at " + *l.WaitFrame
		}
		what := fmt.Sprintf("%d threads", l.Waiters)
		if s.Dumps > 1 {
			what = fmt.Sprintf("up to %d threads (%.1f on average, blocked in %.0f%% of dumps)", l.Waiters, l.AvgWaiters, 100*l.BlockedShare)
		}
		ev := []string{fmt.Sprintf("%s %s %s", l.Kind, l.Class, l.Address)}
		if l.OwnerLockFrame != nil {
			ev = append(ev, "owner took it in "+*l.OwnerLockFrame)
		}
		if len(l.WaiterThreads) > 0 {
			ev = append(ev, "waiters: "+quoteList(l.WaiterThreads))
		}
		next := "Shorten the critical section, split the lock, or replace it with a concurrent structure; look at what the owner does while holding it."
		if l.Owner == nil && l.Kind == "synchronizer" {
			next = "Take the dump with `jcmd <pid> Thread.print -l` to see which thread owns this lock; then shorten or split its critical section."
		}
		out = append(out, Finding{
			Kind:     FindingLockHotspot,
			Severity: sev,
			Summary:  fmt.Sprintf("%s queue on %s %s%s, held by %s.", capitalize(what), l.Kind, shortClass(l.Class), where, owner),
			Evidence: ev,
			NextStep: next,
			impact:   1e6 + float64(l.Waiters)*1000 + l.AvgWaiters,
		})
	}
	// Stuck threads in the same state and frame make one finding.
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
			Severity: sev,
			Summary:  fmt.Sprintf("%s %s in the same stack in all %d dumps, at %s.", who, g.state, g.dumps, g.frame),
			Evidence: []string{"threads: " + quoteList(g.names)},
			NextStep: next,
			impact:   map[string]float64{SeverityWarning: 1e3, SeverityInfo: 1}[sev] + float64(len(g.names)),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].impact > out[j].impact })
	return out
}

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

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// futexFinding describes a native lock hotspot: threads blocked in futex(2)
// on one address that is not a condition variable.
func futexFinding(l LockSummary, samples int) Finding {
	name := "futex " + l.Address
	if l.Symbol != nil {
		name = "futex " + *l.Symbol
	}
	sev := SeverityWarning
	if l.Waiters >= 5 || l.AvgWaiters >= 4 {
		sev = SeverityCritical
	}
	ev := []string{fmt.Sprintf("futex address %s, %.2f waiters on average over %d samples", l.Address, l.AvgWaiters, samples)}
	if len(l.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+strings.Join(l.WaiterThreads, ", "))
	}
	if l.FutexKind == "unknown" {
		ev = append(ev, "ctprof could not tell a lock from a condition at this address; treat it as contention")
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Severity: sev,
		Summary: fmt.Sprintf("Up to %d threads wait on %s (blocked in %.0f%% of samples, %.1f on average).",
			l.Waiters, name, 100*l.BlockedShare, l.AvgWaiters),
		Evidence: ev,
		NextStep: "Find the code that takes this mutex (perf record -g, or gdb on one waiter) and shorten or split its critical section.",
		impact:   1e6 + float64(l.Waiters)*1000 + l.AvgWaiters,
	}
}
