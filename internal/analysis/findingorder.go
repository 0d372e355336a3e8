package analysis

import "sort"

// severityRank orders severities, most severe first.
var severityRank = map[string]int{SeverityCritical: 0, SeverityWarning: 1, SeverityInfo: 2}

// sortFindings orders findings by severity, then by impact: a critical
// finding is never printed below a warning, whatever the builders'
// impacts (a critical CPU saturation once came after warnings of lock
// hotspots, whose impacts are larger). The sort is stable, so findings of
// equal severity and impact keep the builders' order.
func sortFindings(out []Finding) {
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := severityRank[out[i].Severity], severityRank[out[j].Severity]
		if ri != rj {
			return ri < rj
		}
		return out[i].impact > out[j].impact
	})
}

// serializationDominated is the share of the threads' runnable time spent
// in a run queue from which the CPUs, not only the lock, hold the queue
// back: a holder that waits for a CPU holds the lock longer.
const serializationDominated = 0.5

// serializationNextStep is the advice for a lock that serializes a pool.
// "Adding CPUs will not help" holds only while the threads rarely wait
// for a CPU; when the run queue dominates their runnable time, the
// holder is preempted with the lock held and more CPUs (or fewer runnable
// threads) do shorten the queue.
func serializationNextStep(s *Summary) string {
	if sc := s.Scheduling; sc != nil && sc.RunQueueWaitShare >= serializationDominated {
		return "The threads spend most of their runnable time waiting for a CPU, and a holder waiting for one keeps the lock: fewer runnable threads or more CPUs will shorten the queue; then make the critical section smaller, stripe the lock, or give each thread its own copy of the state."
	}
	return "Adding threads or CPUs will not help while this lock is held this long: make the critical section smaller, stripe the lock, or give each thread its own copy of the state."
}
