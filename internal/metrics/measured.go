package metrics

import (
	"github.com/ctprof/ctprof/internal/analysis"
)

// The waits measured one by one, per lock: a JVM's from a JFR recording,
// a native process's futex waits from the kernel's tracepoints (serve
// --exact-waits). They are measured where the blocked-seconds series are
// estimates from samples.
var (
	descLockWaitSeconds = newDesc("ctprof_lock_wait_seconds_total",
		"Thread-seconds threads waited on a lock, measured wait by wait: by the JVM (JFR: monitor enter, wait(), park, virtual thread pinned) or, for a native process, by the kernel (futex waits, --exact-waits); by lock and wait frame, the locks with the most wait time and 'other' for the rest.", "lock", "site")
	descLockContentions = newDesc("ctprof_lock_contentions_total",
		"Waits on a lock, as the JVM recorded them (JFR) or the kernel counted them (a native process's futex waits, --exact-waits), by lock and wait frame, with 'other' for the rest.", "lock", "site")
)

func init() { allDescs = append(allDescs, descLockWaitSeconds, descLockContentions) }

// measuredSelector names the locks with measured-wait series: the lock
// selector's rule on wait seconds (a named lock keeps its name while it
// lasts, "other" adds up the others' increases), and the same bookkeeping
// for the wait counts, so both counters only grow.
type measuredSelector struct {
	waits          *lockSelector
	prevEvents     map[lockKey]float64
	exportedEvents map[lockKey]float64
	otherEvents    float64
}

func newMeasuredSelector(top int) *measuredSelector {
	return &measuredSelector{waits: newLockSelector(top), prevEvents: map[lockKey]float64{}, exportedEvents: map[lockKey]float64{}}
}

// emitMeasuredLocks exports the measured waits of the Summary's locks: a
// recording's (JFR), or the kernel's count of a native lock's futex waits;
// nothing without either.
func emitMeasuredLocks(e emitter, t *target, top int, s *analysis.Summary) {
	if s.JFR == nil && s.ExactWaits == nil {
		return
	}
	if t.measured == nil {
		t.measured = newMeasuredSelector(top)
	}
	sel := t.measured
	var rows []lockRow
	row := map[lockKey]int{}
	events := map[lockKey]float64{}
	for i := range s.Locks {
		l := &s.Locks[i]
		seconds, waits, ok := measuredWaits(l)
		if !ok {
			continue
		}
		k := t.labels.of(l)
		j, ok := row[k]
		if !ok {
			j = len(rows)
			row[k] = j
			rows = append(rows, lockRow{key: k})
		}
		rows[j].seconds += seconds
		events[k] += waits
	}
	named, other := sel.waits.update(rows)
	isNamed := map[lockKey]bool{}
	for _, r := range named {
		isNamed[r.key] = true
		n := max(events[r.key], sel.exportedEvents[r.key])
		sel.exportedEvents[r.key] = n
		e.counter(descLockWaitSeconds, r.seconds, r.key.lock, r.key.site)
		e.counter(descLockContentions, n, r.key.lock, r.key.site)
	}
	for k := range sel.exportedEvents {
		if !isNamed[k] {
			delete(sel.exportedEvents, k)
		}
	}
	for k, n := range events {
		if !isNamed[k] {
			if d := n - sel.prevEvents[k]; d > 0 {
				sel.otherEvents += d
			}
		}
	}
	clear(sel.prevEvents)
	for k, n := range events {
		sel.prevEvents[k] = n
	}
	e.counter(descLockWaitSeconds, other.seconds, other.key.lock, other.key.site)
	e.counter(descLockContentions, sel.otherEvents, other.key.lock, other.key.site)
}

// measuredWaits is what was measured of a lock's waits, wait by wait:
// the recording's, else the kernel's count of a futex lock's.
func measuredWaits(l *analysis.LockSummary) (seconds, waits float64, ok bool) {
	switch {
	case l.JFR != nil:
		return l.JFR.WaitSeconds, float64(l.JFR.Events), true
	case l.Exact != nil:
		return l.Exact.WaitSeconds, float64(l.Exact.Waits), true
	}
	return 0, 0, false
}
