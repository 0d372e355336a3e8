package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// What a target that does not answer is doing: stopped (every thread in
// state T or t), a JVM that cannot reach a safepoint (one or a few threads
// keep running while every other waits, and no collection runs), or a
// JVM held by a long garbage collection. The live sampler says which
// snapshot saw what (Snapshot.Stopped, Snapshot.NoAnswer); these findings
// word it. Recordings do not keep either, so a replay has none of them.

// hungAgg is what the Aggregator keeps of a target that does not answer.
type hungAgg struct {
	// stopped is the latest sample's stop (nil: it ran); stoppedFrom the
	// first sample of the stop that lasts to the latest sample, or of
	// the longest earlier one; stoppedFor how long that earlier stop
	// lasted; stoppedT and stoppedTraced count the threads in state T
	// and t at the latest stopped sample.
	stopped                 *snapshot.Stopped
	lastStop                *snapshot.Stopped
	stoppedFrom, stoppedTo  time.Time
	stoppedSamples          int
	stoppedT, stoppedTraced int
	// noAnswer is the latest NoAnswer of the run, with what the last dump
	// before it showed of its running threads; answered says a later
	// sample had none (the JVM answered again).
	noAnswer *noAnswerView
	answered bool
}

// noAnswerView is a NoAnswer as the findings word it.
type noAnswerView struct {
	snapshot.NoAnswer
	at time.Time
	// shown are, by tid, the Java name and top frame the last dump gave
	// each running thread; dumpAt is that dump's time.
	shown  map[int]shownThread
	dumpAt time.Time
}

type shownThread struct{ name, frame string }

// addHung notes a sample's Stopped and NoAnswer.
func (a *Aggregator) addHung(s *snapshot.Snapshot) {
	h := &a.hung
	if s.Threads != nil {
		if s.Stopped != nil {
			if h.stopped == nil {
				h.stoppedFrom, h.stoppedSamples = s.Time, 0
			}
			h.stopped, h.lastStop, h.stoppedTo = s.Stopped, s.Stopped, s.Time
			h.stoppedSamples++
			h.stoppedT, h.stoppedTraced = 0, 0
			for i := range s.Threads {
				switch s.Threads[i].State {
				case 'T':
					h.stoppedT++
				case 't':
					h.stoppedTraced++
				}
			}
		} else {
			h.stopped = nil
		}
	}
	switch {
	case s.NoAnswer != nil:
		v := &noAnswerView{NoAnswer: *s.NoAnswer, at: s.Time}
		v.Running = append([]snapshot.RunningThread(nil), s.NoAnswer.Running...)
		if d := a.lastDump; d != nil {
			v.dumpAt = a.lastDumpT
			for i := range d.Threads {
				t := &d.Threads[i]
				for _, r := range v.Running {
					if int64(r.TID) == t.OSThreadID && len(t.Frames) > 0 {
						if v.shown == nil {
							v.shown = map[int]shownThread{}
						}
						v.shown[r.TID] = shownThread{name: t.Name, frame: t.Frames[0].String()}
					}
				}
			}
		}
		h.noAnswer, h.answered = v, false
	case s.Threads != nil && h.noAnswer != nil && s.Stopped == nil && s.DumpCost != nil:
		h.answered = true // a dump came back
	}
}

// hungFindings words what the Aggregator saw of a target that does not
// answer.
func (a *Aggregator) hungFindings() []Finding {
	var out []Finding
	if f, ok := a.stoppedFinding(); ok {
		out = append(out, f)
	}
	if f, ok := a.noAnswerFinding(); ok {
		out = append(out, f)
	}
	return out
}

// stoppedFinding says the process is, or was, stopped.
func (a *Aggregator) stoppedFinding() (Finding, bool) {
	h := &a.hung
	if h.lastStop == nil {
		return Finding{}, false
	}
	st := h.lastStop
	how := "SIGSTOP or a debugger: no tracer is attached, so a stop signal such as SIGSTOP or Ctrl-Z"
	next := "Continue it with `kill -CONT <pid>` (or `fg` in the shell that stopped it); until then it serves nothing."
	if st.Tracer > 0 {
		how = fmt.Sprintf("SIGSTOP or a debugger: tracer PID %d", st.Tracer)
		if st.TracerName != "" {
			how += fmt.Sprintf(" (%s)", st.TracerName)
		}
		next = fmt.Sprintf("A debugger or tracer (PID %d) holds it: continue or detach it; until then the process serves nothing.", st.Tracer)
	}
	span := h.stoppedTo.Sub(h.stoppedFrom)
	states := []string{}
	if h.stoppedT > 0 {
		states = append(states, fmt.Sprintf("%d in state T (stopped)", h.stoppedT))
	}
	if h.stoppedTraced > 0 {
		states = append(states, fmt.Sprintf("%d in state t (stopped by a tracer)", h.stoppedTraced))
	}
	ev := []string{fmt.Sprintf("/proc: every thread of the process stopped (%s) in %s from %s", strings.Join(states, ", "), plural(h.stoppedSamples, "sample"), clock(h.stoppedFrom))}
	if a.target != nil && a.target.Kind == snapshot.KindJVM {
		ev = append(ev, "ctprof sent the JVM no request while it was stopped (a thread dump would wait until it runs again)")
	}
	f := Finding{Kind: FindingStopped, Subject: "process", Evidence: ev, NextStep: next}
	if h.stopped != nil {
		f.Severity = SeverityCritical
		f.Summary = fmt.Sprintf("The process is stopped (%s); none of its threads ran%s.", how, forSpan(span))
		f.impact = 3e9
	} else {
		f.Severity = SeverityWarning
		f.Summary = fmt.Sprintf("The process was stopped (%s) for %s of the run, from %s; it runs again.", how, seconds(span), clock(h.stoppedFrom))
		f.impact = 2e6
	}
	return f, true
}

// noAnswerFinding names what keeps a JVM from answering: a collection,
// or the threads that run while every other waits for a safepoint.
func (a *Aggregator) noAnswerFinding() (Finding, bool) {
	h := &a.hung
	v := h.noAnswer
	if v == nil {
		return Finding{}, false
	}
	var java, gc []snapshot.RunningThread
	for _, r := range v.Running {
		switch {
		case !r.Internal:
			java = append(java, r)
		case r.GC:
			gc = append(gc, r)
		}
	}
	sort.SliceStable(java, func(i, j int) bool { return java[i].CPU > java[j].CPU })
	ongoing := !h.answered
	asked := fmt.Sprintf("a %s asked for at %s got no answer", v.Request, clock(v.Since))
	if v.Waited > 0 {
		asked += fmt.Sprintf(" in %s and was abandoned", seconds(v.Waited))
	}
	asked += "; ctprof asked nothing more until the JVM ended a safepoint"
	ev := []string{asked}
	switch {
	case v.GCRunning > 0 || !v.GCKnown && len(java) == 0 && len(gc) > 0:
		n := v.GCRunning
		if n == 0 {
			n = v.For
		}
		if v.GCRunning > 0 {
			ev = append(ev, fmt.Sprintf("hsperfdata: a collection began %s before %s and had not ended", seconds(v.GCRunning), clock(v.at)))
		}
		if len(gc) > 0 {
			ev = append(ev, "running: "+a.runningList(v, gc))
		}
		f := Finding{
			Kind:     FindingGCPause,
			Subject:  "process",
			Evidence: ev,
			NextStep: "Read the GC log (-Xlog:gc*): a full collection of a large live set with the serial or parallel collector, or a heap too small for its live data, stops every thread this long. Give the heap room, shrink the live set, or use a concurrent collector (G1, ZGC).",
		}
		if ongoing {
			f.Severity, f.impact = SeverityCritical, 2e9
			f.Summary = fmt.Sprintf("A garbage collection has kept the JVM stopped for %s; every Java thread waits for it%s.", seconds(n), gcWho(gc))
		} else {
			f.Severity, f.impact = SeverityWarning, 2e6
			f.Summary = fmt.Sprintf("A garbage collection kept the JVM stopped for %s from %s%s.", seconds(n), clock(v.Since), gcWho(gc))
		}
		return f, true
	case len(java) > 0 && (v.VMThreadWakeups < 0 || v.VMThreadWakeups >= vmPolling):
		names := make([]string, 0, 3)
		for _, r := range java[:min(len(java), 3)] {
			names = append(names, fmt.Sprintf("%q", a.threadName(v, r)))
		}
		who := "thread " + strings.Join(names, ", ")
		verb := "keeps"
		if len(java) > 1 {
			who, verb = "threads "+strings.Join(names, ", "), "keep"
		}
		if len(java) > 3 {
			who += fmt.Sprintf(" and %d more", len(java)-3)
		}
		cpu := cpuPhrase(java)
		others := v.JavaThreads - len(java)
		rest := "every other Java thread waits"
		if others <= 0 {
			rest = "no other Java thread runs"
		}
		ev = append(ev, "running: "+a.runningList(v, java))
		if others > 0 {
			ev = append(ev, fmt.Sprintf("/proc: the other %d Java threads are not running (stopped at the safepoint, or idle)", others))
		}
		if v.VMThreadWakeups >= 0 {
			ev = append(ev, fmt.Sprintf("/proc: the VM Thread woke %.0f times a second, as it does while it waits for the threads to reach a safepoint", v.VMThreadWakeups))
		}
		if v.GCKnown {
			ev = append(ev, "hsperfdata: no garbage collection was running")
		}
		f := Finding{
			Kind:     FindingSafepointStall,
			Subject:  "process",
			Evidence: ev,
			NextStep: "A thread in a long loop the JIT compiled without safepoint polls holds every other thread at the safepoint the JVM asked for (a GC, a dump, a deoptimization). Break the loop into shorter calls, or drop -XX:-UseCountedLoopSafepoints (with it on, C2 keeps a poll every few thousand iterations). -Xlog:safepoint shows each safepoint's time to reach it, and -XX:+SafepointTimeout -XX:SafepointTimeoutDelay=1000 has the JVM name the threads that do not stop.",
		}
		if ongoing {
			f.Severity, f.impact = SeverityCritical, 2e9
			f.Summary = fmt.Sprintf("The JVM has not reached a safepoint for %s; %s %s running (%s; likely a loop without safepoint polls); %s.", seconds(v.For), who, verb, cpu, rest)
		} else {
			f.Severity, f.impact = SeverityWarning, 2e6
			f.Summary = fmt.Sprintf("The JVM did not reach a safepoint for %s from %s; %s kept running (%s; likely a loop without safepoint polls) while the other Java threads waited.", seconds(v.For), clock(v.Since), who, cpu)
		}
		return f, true
	}
	return Finding{}, false
}

// vmPolling is the VM Thread's wake-ups a second above which it is taken
// to wait for a safepoint (about 1,000 then, 900 at a load of 25 on 2
// CPUs; a JVM collecting 40 times a second wakes it about 150 times).
// Without it, Java threads running while a request goes unanswered may
// only mean a loaded host that has not run the JVM's attach listener yet.
const vmPolling = 300

// threadName is a running thread's Java name from the last dump, or its
// OS name.
func (a *Aggregator) threadName(v *noAnswerView, r snapshot.RunningThread) string {
	if s, ok := v.shown[r.TID]; ok && s.name != "" {
		return s.name
	}
	return r.Name
}

// runningList describes running threads: name, tid, CPU, and what the
// last dump showed each run.
func (a *Aggregator) runningList(v *noAnswerView, rs []snapshot.RunningThread) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs[:min(len(rs), 5)] {
		p := fmt.Sprintf("%q (tid %d, state R", a.threadName(v, r), r.TID)
		if r.CPU >= 0 {
			p += fmt.Sprintf(", %.0f %% of a CPU", 100*r.CPU)
			if r.Queued >= 0.1 {
				p += fmt.Sprintf(" and waiting for one %.0f %% of the time", 100*r.Queued)
			}
			p += " over " + seconds(r.Window)
		}
		p += ")"
		if s, ok := v.shown[r.TID]; ok && s.frame != "" {
			p += fmt.Sprintf("; the dump of %s showed it in %s", clock(v.dumpAt), s.frame)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// cpuPhrase says how much CPU the running threads used.
func cpuPhrase(rs []snapshot.RunningThread) string {
	known, sum := 0, 0.0
	for _, r := range rs {
		if r.CPU >= 0 {
			known++
			sum += r.CPU
		}
	}
	switch {
	case known == 0:
		return "in state R"
	case len(rs) == 1 && rs[0].Queued >= 0.1:
		// On a busy host it gets little CPU and waits for more: it never
		// stops on its own.
		return fmt.Sprintf("%.0f %% of a CPU, and waiting for one %.0f %% of the time", 100*sum, 100*rs[0].Queued)
	case len(rs) == 1:
		return fmt.Sprintf("%.0f %% of a CPU", 100*sum)
	}
	return fmt.Sprintf("%.0f %% of a CPU together", 100*sum)
}

// gcWho names the collector's threads seen running.
func gcWho(gc []snapshot.RunningThread) string {
	if len(gc) == 0 {
		return ""
	}
	names := make([]string, 0, 3)
	for _, r := range gc[:min(len(gc), 3)] {
		names = append(names, fmt.Sprintf("%q", r.Name))
	}
	return fmt.Sprintf(" (running: %s, %s)", strings.Join(names, ", "), cpuPhrase(gc))
}

// forSpan is " for 12 s" when a stop lasted over several samples.
func forSpan(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " for " + seconds(d)
}

// seconds renders a duration for a sentence: "12 s", "1.5 s".
func seconds(d time.Duration) string {
	s := d.Seconds()
	if s >= 10 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

// clock is a time of day for a sentence.
func clock(t time.Time) string { return t.Format("15:04:05") }
