package metrics

import (
	"github.com/ctprof/ctprof/internal/analysis"
)

// The waits a JFR recording measured, per lock: exact, where the
// blocked-seconds series are estimates from samples.
var (
	descLockWaitSeconds = newDesc("ctprof_lock_wait_seconds_total",
		"Thread-seconds threads waited on a lock, as the JVM measured each wait (JFR: monitor enter, wait(), park, virtual thread pinned), by lock and wait frame; the locks with the most wait time and 'other' for the rest.", "lock", "site")
	descLockContentions = newDesc("ctprof_lock_contentions_total",
		"Waits on a lock the JVM recorded (JFR), by lock and wait frame, with 'other' for the rest.", "lock", "site")
)

func init() { allDescs = append(allDescs, descLockWaitSeconds, descLockContentions) }

// jfrSelector names the locks with JFR series: the lock selector's rule on
// wait seconds (a named lock keeps its name while it lasts, "other" adds up
// the others' increases), and the same bookkeeping for the event counts,
// so both counters only grow.
type jfrSelector struct {
	waits          *lockSelector
	prevEvents     map[lockKey]float64
	exportedEvents map[lockKey]float64
	otherEvents    float64
}

func newJFRSelector(top int) *jfrSelector {
	return &jfrSelector{waits: newLockSelector(top), prevEvents: map[lockKey]float64{}, exportedEvents: map[lockKey]float64{}}
}

// emitJFRLocks exports the JFR counters of the Summary's locks; nothing
// without a recording.
func emitJFRLocks(e emitter, t *target, top int, s *analysis.Summary) {
	if s.JFR == nil {
		return
	}
	if t.jfr == nil {
		t.jfr = newJFRSelector(top)
	}
	sel := t.jfr
	var rows []lockRow
	row := map[lockKey]int{}
	events := map[lockKey]float64{}
	for i := range s.Locks {
		l := &s.Locks[i]
		if l.JFR == nil {
			continue
		}
		k := t.labels.of(l)
		j, ok := row[k]
		if !ok {
			j = len(rows)
			row[k] = j
			rows = append(rows, lockRow{key: k})
		}
		rows[j].seconds += l.JFR.WaitSeconds
		events[k] += float64(l.JFR.Events)
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
