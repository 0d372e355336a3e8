package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// TextOptions tune the text summary.
type TextOptions struct {
	// Top bounds each table; 0 means 10.
	Top int
}

// Text writes the human summary, most important first: findings, then the
// tables that back them. Every string from the target is escaped once, where
// it is printed: quoted names (threads, owners) by %q, which escapes control,
// bidi and invalid bytes itself, and everything else by Terminal. Terminal
// inside %q would escape the escapes: "\x1b" printed as "\\x1b".
//
// Each section has a writer of its own, called in the order the reader
// meets them; a section with nothing to show prints nothing (or, for the
// sections always present, says so). The writers share one textWriter, so
// the first write error stops every later write and is returned here.
func Text(w io.Writer, s *analysis.Summary, opt TextOptions) error {
	top := opt.Top
	if top <= 0 {
		top = 10
	}
	tw := &textWriter{w: w}

	if s.Target != nil {
		writeLiveHeader(tw, s)
	} else {
		writeDumpHeader(tw, s)
	}
	writeFindings(tw, s)
	writeResources(tw, s, top)
	writeLockInstances(tw, s, top)
	writeDeadlocks(tw, s)
	writeConditionWaits(tw, s, top)
	writePools(tw, s, top)
	writeStackGroups(tw, s, top)
	writeWakeups(tw, s, top)
	writeScheduling(tw, s)
	writeBusiestThreads(tw, s, top)
	writeStuckThreads(tw, s, top)
	writeSampleCost(tw, s)
	writeWarnings(tw, s)
	return tw.err
}

// writeLiveHeader opens the summary of a live run: the process, how long it
// was sampled, and the machine-side numbers (CPU, switches, connections)
// that frame the findings below.
func writeLiveHeader(tw *textWriter, s *analysis.Summary) {
	T := Terminal
	tw.printf("pid %d (%s, %s): %d samples over %.1fs, %d threads", s.Target.PID, T(s.Target.Name), s.Target.Kind, s.Samples, s.DurationSeconds, s.Threads)
	if p := s.Processes; p != nil {
		tw.printf(" in %d processes (the target and its descendants; %d over the run)", p.Last, p.Seen)
	}
	if s.Dumps > 0 {
		tw.printf(", %d thread dumps", s.Dumps)
	}
	tw.printf("\n")
	if len(s.OSStates) > 0 {
		tw.printf("OS thread states: %s\n", formatOSStates(s.OSStates))
	}
	tw.printf("CPU: %.1f%% of one core, on %d allowed CPUs", s.CPUPercent, s.Target.CPUs)
	if u := s.CPUUse; u != nil {
		tw.printf(" (%.0f%% of them)", 100*u.ShareOfAllowed)
	}
	if s.RunQueueWaitShare > 0 {
		tw.printf("; run-queue wait %.1f%% of runnable time", 100*s.RunQueueWaitShare)
	}
	tw.printf("\n")
	if c := s.ContextSwitches; c != nil {
		tw.printf("context switches: %.1f/s voluntary, %.1f/s involuntary (host: %.1f/s)\n", c.VoluntaryPerSecond, c.InvoluntaryPerSecond, c.HostPerSecond)
	}
	if c := s.Connections; c != nil {
		writeConnections(tw, s, c)
	}
	if x := s.ExactWaits; x != nil {
		tw.printf("%s\n", analysis.ExactWaitsLine(x))
	}
	if s.Dumps > 0 {
		tw.printf("Java states: %s\n", formatStates(s.States))
	}
	tw.printf("\n")
}

// writeConnections prints the header's connections line: how many, to
// which ports and Unix socket paths, what the process listens on, and how
// the thread count follows the connection count (the sign of a
// thread-per-connection server). Paths are the target's bytes: escaped.
func writeConnections(tw *textWriter, s *analysis.Summary, c *analysis.ConnectionSummary) {
	tw.printf("connections: %d established", c.Established)
	var by []string
	if len(c.ByPort) > 0 {
		by = append(by, formatPorts(c.ByPort))
	}
	if len(c.ByPath) > 0 {
		by = append(by, formatPaths(c.ByPath))
	}
	if len(by) > 0 {
		tw.printf(" (%s)", strings.Join(by, ", "))
	}
	var listening []string
	if len(c.Listening) > 0 {
		listening = append(listening, joinInts(c.Listening))
	}
	for i, p := range c.ListeningPaths {
		if i == 5 {
			listening = append(listening, "…")
			break
		}
		listening = append(listening, Terminal(p))
	}
	if len(listening) > 0 {
		tw.printf("; listening on %s", strings.Join(listening, ", "))
	}
	if tpc := s.ThreadsPerConnection; tpc != nil && tpc.ProcessesRatio > 0 {
		tw.printf("; %.1f processes and %.1f threads per connection", tpc.ProcessesRatio, tpc.Ratio)
		if tpc.Slope != nil {
			tw.printf(" (%.2f threads added per connection, R² %.2f, over %d to %d connections)", *tpc.Slope, *tpc.R2, tpc.MinConnections, tpc.MaxConnections)
		}
	} else if tpc != nil {
		tw.printf("; %.1f threads per connection", tpc.Ratio)
		if tpc.Slope != nil {
			tw.printf(" (%.2f added per connection, R² %.2f, over %d to %d connections)", *tpc.Slope, *tpc.R2, tpc.MinConnections, tpc.MaxConnections)
		}
	}
	tw.printf("\n")
}

// writeDumpHeader opens the summary of offline input (thread dumps, a JFR
// recording or both): there is no process to describe, only what the files
// cover.
func writeDumpHeader(tw *textWriter, s *analysis.Summary) {
	what := fmt.Sprintf("%d thread dump", s.Dumps)
	if s.Dumps != 1 {
		what += "s"
	}
	if s.FirstDump != nil && s.Dumps > 1 {
		what += fmt.Sprintf(" from %s to %s", s.FirstDump.Format("2006-01-02 15:04:05"), s.LastDump.Format("15:04:05"))
	} else if s.FirstDump != nil {
		what += " taken " + s.FirstDump.Format("2006-01-02 15:04:05")
	}
	// A recording alone has no dumps to count: its own header says what
	// it covers.
	if s.Dumps > 0 || s.JFR == nil {
		tw.printf("%s, %d threads in the last", what, s.Threads)
		if s.VM != "" {
			tw.printf(" (%s)", Terminal(s.VM))
		}
		tw.printf("\n")
		tw.printf("states: %s\n", formatStates(s.States))
	}
	if s.JFR != nil {
		tw.printf("%s\n", jfrHeader(s.JFR))
	}
	tw.printf("\n")
}

// writeFindings prints the verdicts, always: with none, it says why none
// (the same sentence the other formats give, lower-cased to sit in the
// list).
func writeFindings(tw *textWriter, s *analysis.Summary) {
	T := Terminal
	tw.printf("FINDINGS\n")
	if len(s.Findings) == 0 {
		tw.printf("  %s\n", strings.ToLower(analysis.NoFindings(s)[:1])+analysis.NoFindings(s)[1:])
	}
	for _, f := range s.Findings {
		tw.printf("  [%s] %s\n", strings.ToUpper(f.Severity), T(f.Summary))
		for _, e := range f.Evidence {
			tw.printf("      %s\n", T(e))
		}
		tw.printf("      next: %s\n", T(f.NextStep))
	}
	tw.printf("\n")
}

// writeLockInstances prints the lock table, always: one entry per lock
// instance that threads waited on, up to top of them.
func writeLockInstances(tw *textWriter, s *analysis.Summary, top int) {
	tw.printf("LOCK INSTANCES (threads that wait for another thread: to enter, to re-enter after wait(), or inside work)\n")
	if len(s.Locks) == 0 {
		tw.printf("  no thread waited on a lock\n")
	}
	for i, l := range s.Locks {
		if i == top {
			tw.printf("  … %d more\n", len(s.Locks)-top)
			break
		}
		if l.Kind == "futex" {
			writeFutexLock(tw, l)
			continue
		}
		writeJavaLock(tw, s, l)
	}
	tw.printf("\n")
}

// writeFutexLock prints a native lock by its stable name (symbol, module
// and offset, "[heap]+0x2a0") and address, the holder its memory named,
// and, where ctprof unwound the threads' native stacks, where the waiters
// wait and what the holder's stack was.
func writeFutexLock(tw *textWriter, l analysis.LockSummary) {
	T := Terminal
	name := strings.TrimPrefix(analysis.LockName(l), "futex ")
	if name != l.Address {
		name += " <" + l.Address + ">"
	}
	held := ""
	if h := l.Holder; h != nil && h.TID != 0 {
		held = fmt.Sprintf("  held by %q (tid %d)", h.Thread, h.TID)
	}
	tw.printf("  %3d waiting  futex %s%s\n", l.Waiters, T(name), T(held))
	tw.printf("               avg %.2f waiters, blocked in %.0f%% of samples, %.1f thread-seconds queued\n", l.AvgWaiters, 100*l.BlockedShare, l.BlockedThreadSeconds)
	if h := l.Holder; h != nil && h.TID != 0 {
		tw.printf("               holder (%s): %s at the sample with the most waiters; named in %d of %d samples\n",
			T(h.Lock), T(h.Runs), h.Samples, l.DumpsSeen)
	} else if h != nil {
		tw.printf("               %s: no writer at the sample with the most waiters%s\n", T(h.Lock), analysis.HolderReaders(h))
	}
	if len(l.WaiterThreads) > 0 {
		tw.printf("               waiters: %s\n", T(strings.Join(l.WaiterThreads, ", ")))
	}
	for i, f := range l.WaitFrames {
		label := "               "
		if i == 0 {
			label = "    wait site: "
		}
		tw.printf("  %s%s (%d sightings)\n", label, T(f.Frame), f.Samples)
	}
	if h := l.Holder; h != nil && len(h.Stack) > 0 {
		tw.printf("      holder's stack: %s\n", T(strings.Join(h.Stack, " ← ")))
	}
	if x := l.Exact; x != nil {
		tw.printf("      kernel counted: %s\n", T(analysis.ExactLockLine(x)))
	}
}

// writeJavaLock prints a Java lock instance: its class and address, who
// holds it (or, with no holder, who runs the same code without waiting),
// how its waiters wait, and the frames of waiters, owner and releaser.
func writeJavaLock(tw *textWriter, s *analysis.Summary, l analysis.LockSummary) {
	T := Terminal
	owner := "owner unknown"
	switch {
	case l.Owner != nil:
		owner = fmt.Sprintf("owner %q", *l.Owner)
	case l.Releaser != nil:
		owner = fmt.Sprintf("nobody holds it; %q runs the same code without waiting", *l.Releaser)
	}
	// A lock seen only in the recording has no dump-side counts: its
	// numbers are the JFR ones printed by writeJFRLock.
	jfrOnly := l.DumpsSeen == 0 && l.JFR != nil
	count := fmt.Sprintf("%3d waiting", l.Waiters)
	if jfrOnly {
		count, owner = "   JFR only", "(in no thread dump)"
	}
	if l.Resource == "pinned" {
		tw.printf("  %s  virtual threads pinned to their carrier thread\n", count)
	} else {
		tw.printf("  %s  %s %s <%s>  %s\n", count, kindLabel(l), T(l.Class), l.Address, owner)
	}
	if len(l.WaitKinds) > 1 {
		tw.printf("               how they wait: %s\n", analysis.WaitKindBreakdown(l.WaitKinds))
	}
	if s.Dumps > 1 && !jfrOnly {
		tw.printf("               avg %.2f waiters, blocked in %.0f%% of dumps (%d of %d)", l.AvgWaiters, 100*l.BlockedShare, l.DumpsSeen, s.Dumps)
		if l.BlockedThreadSeconds > 0 {
			tw.printf(", %.1f thread-seconds queued", l.BlockedThreadSeconds)
		}
		tw.printf("\n")
	}
	if l.WaitFrame != nil {
		tw.printf("               waiters at %s\n", T(*l.WaitFrame))
	}
	writeJFRLock(tw, l.JFR)
	if l.OwnerFrame != nil {
		tw.printf("               owner runs %s\n", T(*l.OwnerFrame))
	}
	if l.OwnerLockFrame != nil && (l.OwnerFrame == nil || *l.OwnerLockFrame != *l.OwnerFrame) {
		tw.printf("               owner took it in %s\n", T(*l.OwnerLockFrame))
	}
	if l.Owner == nil && l.ReleaserFrame != nil {
		tw.printf("               releaser runs %s\n", T(*l.ReleaserFrame))
	}
}

// writeDeadlocks prints each cycle of threads waiting on each other's
// locks; the section is left out when there is none.
func writeDeadlocks(tw *textWriter, s *analysis.Summary) {
	if len(s.Deadlocks) == 0 {
		return
	}
	tw.printf("DEADLOCKS\n")
	for _, d := range s.Deadlocks {
		tw.printf("  %d threads (found by %s, in %d dump(s)):\n", len(d.Threads), d.Source, d.Dumps)
		for i, t := range d.Threads {
			l := d.Locks[i]
			tw.printf("    %q waits for %s %s <%s>\n", t, l.Kind, Terminal(l.Class), l.Address)
		}
	}
	tw.printf("\n")
}

// writeConditionWaits lists the futexes threads sleep on as a condition
// rather than a lock. Condition waits matter when several threads share one
// (an idle pool); a JVM parks every thread on a condition of its own, so
// those with a single waiter are only counted.
func writeConditionWaits(tw *textWriter, s *analysis.Summary, top int) {
	shared, single := 0, 0
	for _, w := range s.FutexWaits {
		if w.Waiters >= 2 {
			shared++
		} else {
			single++
		}
	}
	if shared == 0 {
		return
	}
	tw.printf("WAITING ON CONDITIONS (idle, not contention)\n")
	n := 0
	for _, w := range s.FutexWaits {
		if w.Waiters < 2 {
			continue
		}
		if n == top {
			tw.printf("  … %d more\n", shared-top)
			break
		}
		n++
		name := w.Address
		switch {
		case w.Symbol != nil:
			name = *w.Symbol + " <" + w.Address + ">"
		case w.Name != "" && w.Name != w.Address:
			name = w.Name + " <" + w.Address + ">"
		}
		if w.CountedWaiters > 0 {
			name += fmt.Sprintf("  (the condition variable counted up to %d waiters)", w.CountedWaiters)
		}
		tw.printf("  %3d waiting  futex %s\n", w.Waiters, Terminal(name))
	}
	if single > 0 {
		tw.printf("  (and %d conditions with a single waiter each)\n", single)
	}
	tw.printf("\n")
}

// writePools prints the thread pools, always. A live run knows each pool's
// CPU and switches; dumps know only its threads' states.
func writePools(tw *textWriter, s *analysis.Summary, top int) {
	T := Terminal
	tw.printf("THREAD POOLS (names with digits as N)\n")
	for i, p := range s.Pools {
		if i == top {
			tw.printf("  … %d more\n", len(s.Pools)-top)
			break
		}
		if s.Target != nil {
			tw.printf("  %5d  %-30s  cpu %5.1f%%  switches/s %8.1f vol %8.1f invol  %s\n", p.Threads, T(p.Name), p.CPUPercent, p.VoluntaryPerSecond, p.InvoluntaryPerSecond, formatAnyStates(p.States))
			continue
		}
		tw.printf("  %5d  %s  %s\n", p.Threads, T(p.Name), formatStates(p.States))
	}
	tw.printf("\n")
}

// writeStackGroups prints the stacks many threads share in the last dump,
// each cut to its top four frames: enough to tell what the group does.
func writeStackGroups(tw *textWriter, s *analysis.Summary, top int) {
	if len(s.StackGroups) == 0 {
		return
	}
	tw.printf("IDENTICAL STACKS (last dump)\n")
	for i, g := range s.StackGroups {
		if i == top {
			break
		}
		tw.printf("  %5d threads %s, e.g. %s\n", g.Threads, g.State, quoteNames(g.Names))
		for j, f := range g.Frames {
			if j == 4 {
				tw.printf("          … %d more frames\n", len(g.Frames)-4)
				break
			}
			tw.printf("          at %s\n", Terminal(f))
		}
	}
	tw.printf("\n")
}

// writeWakeups prints the pools whose threads wake often to do little; the
// section is left out when there is none.
func writeWakeups(tw *textWriter, s *analysis.Summary, top int) {
	if len(s.Wakeups) == 0 {
		return
	}
	tw.printf("WAKE-UPS (threads that wake often to do little)\n")
	for i, w := range s.Wakeups {
		if i == top {
			break
		}
		tw.printf("  %5d  %-30s  every %6.1f ms  %8.0f/s in all  %.2f%% CPU each", w.Threads, Terminal(w.Pool), w.PeriodMillis, w.PerSecond, w.CPUPercentPerThread)
		if w.HostShare > 0 {
			tw.printf("  %.0f%% of host switches", 100*w.HostShare)
		}
		tw.printf("\n")
	}
	tw.printf("\n")
}

// writeScheduling prints how crowded the CPUs were, when the run measured
// it.
func writeScheduling(tw *textWriter, s *analysis.Summary) {
	sc := s.Scheduling
	if sc == nil {
		return
	}
	tw.printf("SCHEDULING\n")
	tw.printf("  %.2f threads runnable on average for %d CPUs; %.1f%% of runnable time spent waiting for a CPU; %.2f involuntary switches per thread per second\n",
		sc.RunnableAvg, sc.CPUs, 100*sc.RunQueueWaitShare, sc.InvoluntaryPerThreadPerSecond)
	writeSchedulingHost(tw, sc)
	tw.printf("\n")
}

// writeBusiestThreads prints the threads that used the most CPU. A live run
// has a full table (state, switches, run-queue wait, policy, CPUs allowed);
// dumps have only the cpu= deltas between them.
func writeBusiestThreads(tw *textWriter, s *analysis.Summary, top int) {
	if len(s.ThreadCPU) == 0 {
		return
	}
	if s.Target == nil {
		tw.printf("BUSIEST THREADS (cpu= deltas across the dumps)\n")
		for i, c := range s.ThreadCPU {
			if i == top {
				break
			}
			tw.printf("  %6.1f%%  %8.3fs  %q\n", c.Percent, c.CPUSeconds, c.Thread)
		}
		tw.printf("\n")
		return
	}
	tw.printf("BUSIEST THREADS\n")
	tw.printf("  %8s  %-13s  %6s  %9s  %9s  %7s  %-12s %4s  %s\n", "TID", "STATE", "CPU", "VOL/s", "INVOL/s", "RQWAIT", "POLICY", "NICE", "NAME (CPUS)")
	for i, c := range s.ThreadCPU {
		if i == top {
			break
		}
		state := c.OSState
		if c.JavaState != "" {
			state = c.JavaState
		}
		tw.printf("  %8d  %-13s  %5.1f%%  %9.1f  %9.1f  %6.1f%%  %-12s %4d  %q (%s)\n", c.TID, state, c.Percent, c.VoluntaryPerSecond, c.InvoluntaryPerSecond, 100*c.RunQueueWaitShare, c.Policy, c.Nice, c.Thread, Terminal(c.CPUsAllowed))
	}
	tw.printf("\n")
}

// writeStuckThreads prints the threads whose stack never changed across
// the dumps; the section is left out when there is none.
func writeStuckThreads(tw *textWriter, s *analysis.Summary, top int) {
	if len(s.StuckThreads) == 0 {
		return
	}
	tw.printf("STUCK THREADS (same stack in every dump)\n")
	for i, st := range s.StuckThreads {
		if i == top {
			tw.printf("  … %d more\n", len(s.StuckThreads)-top)
			break
		}
		tw.printf("  %-8s %q at %s\n", st.State, st.Thread, Terminal(st.Frame))
	}
	tw.printf("\n")
}

// writeSampleCost prints what the profiler itself cost a live run, so the
// reader can judge how much the measurement disturbed the target.
func writeSampleCost(tw *textWriter, s *analysis.Summary) {
	c := s.SampleCost
	if c == nil || s.Target == nil {
		return
	}
	tw.printf("COST OF SAMPLING\n")
	tw.printf("  %.2f ms per sample on average, %.2f ms at most", 1000*c.AvgSeconds, 1000*c.PeakSeconds)
	if c.Dumps > 0 {
		tw.printf("; %d thread dumps took %.2f s", c.Dumps, c.DumpSeconds)
	}
	if c.TargetPauseSeconds != nil {
		tw.printf("; they paused the target %.3f s", *c.TargetPauseSeconds)
		if c.TargetPauseShare != nil {
			tw.printf(" (%.3f%% of the run)", 100**c.TargetPauseShare)
		}
	}
	tw.printf("\n\n")
}

// writeWarnings closes the summary with what went wrong while collecting
// (it ends without a blank line: nothing follows it).
func writeWarnings(tw *textWriter, s *analysis.Summary) {
	if len(s.Warnings) == 0 {
		return
	}
	tw.printf("WARNINGS\n")
	for _, w := range s.Warnings {
		tw.printf("  %s\n", Terminal(w))
	}
}

type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, a ...any) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.w, format, a...)
}

// formatStates prints "BLOCKED 8, RUNNABLE 3" in a fixed order.
func formatStates(m map[string]int) string {
	order := []string{"BLOCKED", "RUNNABLE", "WAITING", "TIMED_WAITING", "NEW", "TERMINATED", "NONE"}
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		if n := m[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		seen[k] = true
	}
	var rest []string
	for k := range m {
		if !seen[k] && m[k] > 0 {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", Terminal(k), m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// formatAnyStates prints a pool's states, Java or OS ones (a live JVM's
// pool mixes Java threads and VM-internal ones known only to the OS).
func formatAnyStates(m map[string]int) string {
	java, os := map[string]int{}, map[string]int{}
	for k, v := range m {
		if k == strings.ToUpper(k) {
			java[k] = v
		} else {
			os[k] = v
		}
	}
	switch {
	case len(java) == 0:
		return formatOSStates(os)
	case len(os) == 0:
		return formatStates(java)
	}
	return formatStates(java) + ", " + formatOSStates(os)
}

func formatOSStates(m map[string]int) string {
	order := []string{"running", "uninterruptible", "sleeping", "idle", "stopped", "zombie", "other"}
	var parts []string
	for _, k := range order {
		if n := m[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func formatPorts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for i, k := range keys {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("port %s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// formatPaths lists the Unix clients by listening path, most first, as
// formatPorts lists ports.
func formatPaths(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for i, k := range keys {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %d", Terminal(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

func joinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

// kindLabel names how a lock's waiters wait and what the lock is:
// "monitor", "wait on monitor", "condition on synchronizer".
func kindLabel(l analysis.LockSummary) string {
	if l.Resource == "" || l.Kind == l.Resource {
		return l.Kind
	}
	return l.Kind + " on " + l.Resource
}

// writeResources prints what the threads wait for: each resource (a class
// waited for at one call site, over all its instances) with its numbers
// over the run, the pool its waiters belong to and what holds it.
func writeResources(tw *textWriter, s *analysis.Summary, top int) {
	T := Terminal
	if len(s.ContentionSites) == 0 {
		return
	}
	if s.ContentionSites[0].Native {
		tw.printf("RESOURCES (what threads wait for: a kind of primitive at the frames where they wait, over every address waited on)\n")
	} else {
		tw.printf("RESOURCES (what threads wait for: a class at the frame where they call in, over all its instances)\n")
	}
	for i, c := range s.ContentionSites {
		if i == top {
			tw.printf("  … %d more\n", len(s.ContentionSites)-top)
			break
		}
		in := " "
		if c.Native {
			in = " in "
		}
		at := T(c.WaitFrame)
		if c.WaitLine != "" {
			at += " (" + T(c.WaitLine) + ")"
		}
		tw.printf("  %3d waiting  %s%s%s at %s\n", c.Waiters, c.Kind, in, T(c.Class), at)
		if c.JFR != nil {
			where := ""
			if c.DumpsSeen == 0 {
				where = " (seen in the recording only)"
			}
			tw.printf("               JFR: %d waits, %.1f s in all%s\n", c.JFR.Events, c.JFR.WaitSeconds, where)
			if c.DumpsSeen == 0 {
				continue
			}
		}
		if x := c.Exact; x != nil {
			tw.printf("               the kernel counted %s waits (%.0f a second), %.1f s of waiting\n", groupDigits(float64(x.Waits)), x.PerSecond, x.WaitSeconds)
			if c.DumpsSeen == 0 {
				// Waits too short for any sample: the stacks the kernel
				// copied at them name this site; there is nothing else.
				tw.printf("               no sample saw a waiter here: its waits were shorter than the interval\n")
				continue
			}
		}
		if c.Native && s.Samples > 1 {
			tw.printf("               avg %.2f waiters, waiting in %.0f%% of samples (%d of %d)", c.AvgWaiters, 100*c.BlockedShare, c.DumpsSeen, s.Samples)
			if c.BlockedThreadSeconds > 0 {
				tw.printf(", %.1f thread-seconds", c.BlockedThreadSeconds)
			}
			tw.printf("\n")
		} else if s.Dumps > 1 {
			tw.printf("               avg %.2f waiters, blocked in %.0f%% of dumps (%d of %d)", c.AvgWaiters, 100*c.BlockedShare, c.DumpsSeen, s.Dumps)
			if c.BlockedThreadSeconds > 0 {
				tw.printf(", %.1f thread-seconds", c.BlockedThreadSeconds)
			}
			tw.printf("\n")
		}
		switch {
		case c.Instances == 1:
			tw.printf("               one instance\n")
		case c.Native && c.Instances == 0 && c.PeakInstances == 0 && c.DumpsSeen > 0:
			tw.printf("               no futex word: the waiters sleep in epoll_wait on their own wake-ups (a latch)\n")
		case c.Striped:
			tw.printf("               %d instances (up to %d at once), at most %d waiting on one; striped: one waiter per instance, each behind its own holder, no hot lock\n", c.Instances, c.PeakInstances, c.MaxInstanceWaiters)
		default:
			tw.printf("               %d instances (up to %d at once), at most %d waiting on one; one queue at the resource\n", c.Instances, c.PeakInstances, c.MaxInstanceWaiters)
		}
		if c.Pool != "" && c.PoolThreads > 1 {
			tw.printf("               %d of %d %s threads wait here", c.PoolWaiting, c.PoolThreads, T(c.Pool))
			if len(c.OthersRun) > 0 {
				tw.printf("; others work in %s", T(c.OthersRun[0].Frame))
			}
			tw.printf("\n")
		}
		if len(c.Holders) > 0 {
			who := "holders " + analysis.HolderDoes(c.Holders[0].Frame, true)
			if c.Ownerless {
				who = "nobody holds it; the thread they wait for " + analysis.HolderDoes(c.Holders[0].Frame, false)
			}
			tw.printf("               %s\n", T(who))
		} else if c.Ownerless {
			tw.printf("               nobody holds it: they wait for a signal or a hand-off\n")
		}
	}
	tw.printf("\n")
}
