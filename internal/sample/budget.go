package sample

import (
	"fmt"
	"strconv"
	"time"
)

// pauseLedger keeps the pauses ctprof causes in a JVM within the pause
// budget, as a share of the run's wall time. Spacing each dump by its own
// pause (useDump) is not enough on a loaded host: the JVM also stops for
// ctprof's Flight Recorder start and reads, and a run with a known end
// (--count, --duration) has no time after its last dump to pay that
// dump's pause back. So a dump is due only while everything paused so far
// is within the budget of the time elapsed, and, in a bounded run, while
// the pause the next dump is expected to cost (the latest one's) still
// fits in the budget of the whole run.
type pauseLedger struct {
	// start is the run's first tick.
	start time.Time
	// paused is every pause ctprof caused so far: dumps, JFR start and
	// reads; jfr is the JFR part.
	paused, jfr time.Duration
	// last is the latest dump's pause: what the next is expected to cost;
	// spacedUntil is when that pause is within the budget on its own (the
	// spacing useDump sets).
	last        time.Duration
	spacedUntil time.Time
	// dumped counts the dumps whose pause is in paused.
	dumped int
	// asked counts the dumps the options asked for (a dump every tick,
	// or every --dump-interval), whatever the budget said; heldBack those
	// the budget refused. nextAsked is when the options ask for the next.
	asked, heldBack int
	nextAsked       time.Time
}

// plannedSpan is the run's length known in advance: --duration, or the
// time from the first to the last of --count samples; 0 when unbounded.
func (s *Sampler) plannedSpan() time.Duration {
	var span time.Duration
	if s.opts.Count > 0 {
		span = time.Duration(s.opts.Count-1) * s.opts.Interval
	}
	if d := s.opts.Duration; d > 0 && (span == 0 || d < span) {
		span = d
	}
	return span
}

// withinBudget says whether a dump at now keeps the pauses within the
// budget. The run's first dump always is: its cost cannot be known before
// it is taken, and a run without one shows no Java threads. It is the one
// pause by which a run may end above its budget.
func (s *Sampler) withinBudget(now time.Time) bool {
	l := &s.budget
	if l.dumped == 0 || l.start.IsZero() {
		return true
	}
	budget := s.opts.JVM.PauseBudget
	if float64(l.paused) > budget*float64(now.Sub(l.start)) {
		return false
	}
	if span := s.plannedSpan(); span > 0 && float64(l.paused+l.last) > budget*float64(span) {
		return false
	}
	return true
}

// countDumpTick notes, once per tick and before it is taken, whether the
// options ask for a dump at now and whether the budget holds it back (the
// result; the caller takes it back if the tick dumps after all). wanted
// says dumps can be had at all (a JVM ctprof can read, dumps not turned
// off).
func (s *Sampler) countDumpTick(now time.Time, wanted bool) bool {
	l := &s.budget
	if l.start.IsZero() {
		l.start = now
	}
	if !wanted || now.Before(l.nextAsked) {
		return false
	}
	l.asked++
	l.nextAsked = now.Add(s.opts.JVM.DumpEvery)
	if now.Before(l.spacedUntil) || !s.withinBudget(now) {
		l.heldBack++
		return true
	}
	return false
}

// addDumpPause books the pause p of a dump taken at a tick starting at,
// which spaces the next one by p/budget.
func (l *pauseLedger) addDumpPause(at time.Time, p time.Duration, budget float64) {
	l.paused += p
	l.last = p
	l.dumped++
	l.spacedUntil = at.Add(time.Duration(float64(p) / budget))
}

// addJFRPause books the pause of a Flight Recorder start or read.
func (l *pauseLedger) addJFRPause(p time.Duration) {
	l.paused += p
	l.jfr += p
}

// budgetWarning says, at the end of the run, that the pause budget allowed
// fewer dumps than the options asked for; "" when it did not.
func (s *Sampler) budgetWarning() string {
	l := &s.budget
	if l.heldBack == 0 || l.asked == 0 {
		return ""
	}
	w := fmt.Sprintf("the pause budget (%s %%) allowed %d of the %d dumps asked for; raise --pause-budget or --dump-interval",
		strconv.FormatFloat(100*s.opts.JVM.PauseBudget, 'g', 4, 64), l.asked-l.heldBack, l.asked)
	if l.jfr > 0 {
		w += fmt.Sprintf(" (the JFR recording's start and reads paused the JVM %s of the %s ctprof paused it)",
			l.jfr.Round(time.Millisecond), l.paused.Round(time.Millisecond))
	}
	return w
}
