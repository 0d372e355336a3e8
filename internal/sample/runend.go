package sample

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// A run says how it ended and what it lacked: a target that exited or
// exec'd another program, a JVM that gave no thread dump, a --jfr run
// without Flight Recorder data, fewer samples than asked for, dumps the
// pause budget held back. The sentences are the Sampler's Warnings, which
// the Aggregator's Drain adds to the summary (text, JSON warnings, HTML).

// identState is the target's identity when the run began, and what became
// of it.
type identState struct {
	was  procfs.Identity
	read bool
	// newName is the program the pid ran when the run stopped for an exec
	// or a reused pid; at is when the sampler saw it.
	newName string
	at      time.Time
}

// runNotes are what the run's end says besides the stop.
type runNotes struct {
	// dumpWhy is the latest reason a thread dump could not be had.
	dumpWhy string
	// jfrReads counts the reads of the recording; jfrWhy is the latest
	// reason it could not be started or read.
	jfrReads int
	jfrWhy   string
	// costSum and costMax are the samples' own durations; dumpWall and
	// jfrWall the time of them spent on dump and Flight Recorder requests.
	costSum, costMax  time.Duration
	dumpWall, jfrWall time.Duration
	// host is the latest sample's host context.
	host *snapshot.Host
}

// readIdentity keeps the target's identity as the Sampler is made.
func (s *Sampler) readIdentity() {
	if id, err := s.fs.Identity(s.opts.PID); err == nil {
		s.ident.was, s.ident.read = id, true
	}
}

// changedProgram reports whether the target's pid runs another program
// than at the run's start: StopTargetExec for an exec, StopTargetGone for
// a pid the kernel gave to a new process. A process that cannot be read
// any more has not changed as far as it can tell: the sweep says it is
// gone.
func (s *Sampler) changedProgram() (StopReason, bool) {
	if !s.ident.read {
		return 0, false
	}
	id, err := s.fs.Identity(s.opts.PID)
	if err != nil {
		return 0, false
	}
	was := s.ident.was
	reason := StopTargetExec
	switch {
	case id.StartTime != was.StartTime:
		reason = StopTargetGone
	case !id.Exec(was):
		return 0, false
	}
	s.ident.newName, s.ident.at = id.Comm, time.Now()
	return reason, true
}

// noteTick keeps what the end of the run reports of a sample.
func (s *Sampler) noteTick(snap *snapshot.Snapshot) {
	n := &s.says
	n.costSum += snap.Cost
	n.costMax = max(n.costMax, snap.Cost)
	if snap.Host != nil {
		n.host = snap.Host
	}
	if dc := snap.DumpCost; dc != nil {
		n.dumpWall += dc.Wall
	}
	for _, e := range snap.Errors {
		// This package's own messages about dumps (useDump, NewSampler's
		// notes, the hung target's).
		if strings.Contains(e, "thread dump") {
			n.dumpWhy = e
		}
	}
}

// noteJFR keeps what the tick's Flight Recorder step did: its errors (the
// ones takeJFR added), whether it read the recording, and how long it
// took; and books its pause against the budget. A read's pause also spaces
// the next read, as a dump's does the next dump; a start's pause is paid
// once.
func (s *Sampler) noteJFR(snap *snapshot.Snapshot, errs []string, took time.Duration) {
	if !s.opts.JVM.JFR.Enabled {
		return
	}
	n := &s.says
	n.jfrWall += took
	if len(errs) > 0 {
		n.jfrWhy = errs[len(errs)-1]
	}
	s.budget.addJFRPause(snap.JFRPause)
	if snap.Waits != nil {
		n.jfrReads++
		if p := snap.JFRPause; p > 0 {
			if next := snap.Time.Add(time.Duration(float64(p) / s.opts.JVM.PauseBudget)); next.After(s.jfr.next) {
				s.jfr.next = next
			}
		}
	}
}

// pauseOf runs a request to the JVM and returns the pause it caused
// (jvm.PauseBetween; 0 when unknown).
func (s *Sampler) pauseOf(request func()) time.Duration {
	if s.jvm == nil {
		request()
		return 0
	}
	before, berr := s.jvm.ReadPerfData()
	request()
	if berr != nil {
		return 0
	}
	after, err := s.jvm.ReadPerfData()
	if err != nil {
		return 0
	}
	return jvm.PauseBetween(before.Counters(), after.Counters())
}

// runWarnings are the sentences the run's end says (Warnings).
func (s *Sampler) runWarnings() []string {
	r := &s.run
	if !r.stopped {
		return nil
	}
	out := s.treeWarnings()
	add := func(w string) {
		if w != "" {
			out = append(out, w)
		}
	}
	add(s.stopSentence())
	add(s.noDumpWarning())
	add(s.noJFRWarning())
	add(s.fewSamplesWarning())
	add(s.budgetWarning())
	return out
}

// stopSentence says that the run ended at the target's exit or exec, and
// what the summary covers.
func (s *Sampler) stopSentence() string {
	r := &s.run
	pid, name := s.opts.PID, s.target.Name
	switch r.reason {
	case StopTargetExec:
		return fmt.Sprintf("pid %d exec'd %s at %s (after %d samples); the summary covers %s until then",
			pid, s.ident.newName, s.ident.at.Format("15:04:05"), r.taken, name)
	case StopTargetGone:
		if s.ident.newName != "" {
			return fmt.Sprintf("pid %d exited after %d samples (by %s the pid belonged to a new process, %s); the summary covers %s until then",
				pid, r.taken, s.ident.at.Format("15:04:05"), s.ident.newName, name)
		}
		return fmt.Sprintf("pid %d exited after %d samples; the summary covers %s until then", pid, r.taken, name)
	}
	return ""
}

// noDumpWarning says that a JVM run got no thread dump, and why.
func (s *Sampler) noDumpWarning() string {
	if s.target.Kind != snapshot.KindJVM || s.opts.JVM.NoDumps || s.budget.dumped > 0 || s.run.taken == 0 {
		return ""
	}
	why := s.says.dumpWhy
	if why == "" && s.jvm == nil {
		why = "the JVM could not be read (no hsperfdata or attach socket)"
	}
	if why == "" {
		why = "none was due before the run ended"
	}
	return fmt.Sprintf("no thread dump in %d samples, so no Java threads, locks or stacks: %s", s.run.taken, strings.TrimPrefix(why, "no thread dumps: "))
}

// noJFRWarning says that a --jfr run read no Flight Recorder data, and why.
func (s *Sampler) noJFRWarning() string {
	if !s.opts.JVM.JFR.Enabled || s.says.jfrReads > 0 || s.run.taken == 0 {
		return ""
	}
	why := s.says.jfrWhy
	switch {
	case why != "":
	case s.target.Kind != snapshot.KindJVM:
		why = "the target is not a JVM"
	case s.jvm == nil:
		why = "the JVM could not be read (no hsperfdata or attach socket)"
	case s.jfr.rec == nil && !s.jfr.first.IsZero():
		why = "the recording did not start"
	default:
		why = "the run ended before the first read"
	}
	return "--jfr: no Flight Recorder data, so no exact lock waits: " + strings.TrimPrefix(why, "no JFR recording: ")
}

// fewSamplesWarning says that a run that reached its --duration took fewer
// than half the samples asked for, and where the time went. A run that
// the target's exit, an exec or Ctrl-C ended short says so otherwise.
func (s *Sampler) fewSamplesWarning() string {
	r := &s.run
	if r.reason != StopDone || r.taken == 0 {
		return ""
	}
	asked := s.opts.Count
	if d := s.opts.Duration; d > 0 {
		if n := int(d/s.opts.Interval) + 1; asked == 0 || n < asked {
			asked = n
		}
	}
	if asked == 0 || 2*r.taken >= asked {
		return ""
	}
	n := &s.says
	avg := n.costSum / time.Duration(r.taken)
	w := fmt.Sprintf("took %d of the %d samples asked for (one every %s): a sample took %s on average, the longest %s",
		r.taken, asked, s.opts.Interval, roundDur(avg), roundDur(n.costMax))
	// Where the samples' time went, when the JVM's requests took a tenth
	// of it or more.
	var parts []string
	if n.dumpWall >= n.costSum/10 && n.dumpWall > 0 {
		parts = append(parts, roundDur(n.dumpWall)+" went to thread dumps")
	}
	if n.jfrWall >= n.costSum/10 && n.jfrWall > 0 {
		parts = append(parts, roundDur(n.jfrWall)+" to Flight Recorder requests")
	}
	if len(parts) > 0 {
		w += "; of that time " + strings.Join(parts, " and ")
	}
	if h := n.host; h != nil && h.CPUs > 0 && h.Load1 > float64(h.CPUs) {
		w += fmt.Sprintf("; the host's load average was %.1f on %d CPUs", h.Load1, h.CPUs)
	}
	return w
}

func roundDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
