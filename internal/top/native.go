package top

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ctprof/ctprof/internal/analysis"
)

// futexWaitingFor is the header's "waiting for" of a native process,
// which has no contention sites: the futex locks with the most waiters
// now, by their stable names, at most two.
func futexWaitingFor(s *analysis.Summary) []string {
	var locks []analysis.LockSummary
	for _, l := range s.Locks {
		if l.Kind == "futex" && (l.CurrentWaiters > 0 || l.AvgWaiters > 0) {
			locks = append(locks, l)
		}
	}
	slices.SortStableFunc(locks, func(x, y analysis.LockSummary) int {
		if c := cmp.Compare(y.CurrentWaiters, x.CurrentWaiters); c != 0 {
			return c
		}
		return cmp.Compare(y.AvgWaiters, x.AvgWaiters)
	})
	var parts []string
	for _, l := range locks {
		if len(parts) == 2 {
			break
		}
		parts = append(parts, fmt.Sprintf("%d on %s (avg %s)", l.CurrentWaiters, clean(analysis.LockName(l)), num(l.AvgWaiters)))
	}
	return parts
}
