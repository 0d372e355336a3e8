package analysis

import (
	"fmt"
	"strings"
)

// Saturation thresholds: threads of the process queue for CPUs in earnest
// when on average at least saturationMinWaiting of them wait in a run
// queue and either they spend saturationMinShare of their runnable time
// waiting or more of them are runnable than the process has CPUs. A large
// share of a tiny runnable time is noise.
const (
	saturationMinWaiting    = 0.05
	saturationMinShare      = 0.2
	saturationCriticalShare = 0.5
)

// saturationMinorPart is the share of the waiting a second cause must
// account for to be named beside the first.
const saturationMinorPart = 0.2

// consumersNamed is how many of the host's biggest CPU consumers a
// finding names; consumersMinCPUs the least CPU one must have used.
const (
	consumersNamed   = 3
	consumersMinCPUs = 0.05
)

// saturationFindings reports CPU saturation, blaming whom Scheduling.Cause
// says: the process's own threads, other processes, or a cgroup quota.
// Only the first is the program's doing, so only it can be critical: a
// process starved by its neighbours or its quota gets a warning, with
// advice for whoever runs the host.
//
// Every number of the sentence is a field of Scheduling, and they come
// from one source (schedstat over the run): runnable = running + waiting,
// so waiting never exceeds runnable. The threads named are those that
// waited longest in absolute terms (Scheduling.Suffering), not those with
// the largest share of a small runnable time.
func saturationFindings(s *Summary) []Finding {
	sc := s.Scheduling
	if sc == nil {
		return nil
	}
	cause := sc.Cause
	if cause == "" {
		cause = saturationCause(sc)
	}
	if cause == CauseNone {
		return nil
	}
	f := Finding{
		Kind:     FindingCPUSaturation,
		Subject:  "process",
		Severity: SeverityWarning,
		Cause:    cause,
		impact:   3e5 + 100*sc.RunQueueWaitShare,
	}
	switch cause {
	case CauseOwnThreads:
		ownThreadsSaturation(s, &f)
	case CauseOtherProcesses:
		otherProcessesSaturation(s, &f)
	case CauseCgroupQuota:
		quotaSaturation(s, &f)
	default:
		unknownSaturation(s, &f)
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%.2f running on average, %.2f waiting; %.1f involuntary switches per thread per second",
		sc.RunningAvg, sc.WaitingForCPUAvg, sc.InvoluntaryPerThreadPerSecond))
	for _, t := range sc.Suffering {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%q (tid %d) waited %.2f s for a CPU and ran %.2f s; %s, nice %d, rt priority %d, CPUs %s",
			t.Thread, t.TID, t.RunQueueWaitSeconds, t.CPUSeconds, t.Policy, t.Nice, t.RTPriority, t.CPUsAllowed))
	}
	return []Finding{f}
}

// ownThreadsSaturation words the finding when the process's own runnable
// threads outnumber its CPUs: the one cause that is the program's doing,
// so the one that can be critical.
func ownThreadsSaturation(s *Summary, f *Finding) {
	sc := s.Scheduling
	_, others := waitSplit(sc)
	if sc.RunQueueWaitShare >= saturationCriticalShare {
		f.Severity = SeverityCritical
	}
	f.Summary = fmt.Sprintf("The process's threads queue behind each other: %.2f runnable on average for %s, of which %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunnableAvg, plural(sc.CPUs, "CPU"), sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	f.Evidence = append(f.Evidence, fmt.Sprintf("more threads are runnable than the %s the process may use: its own threads take turns on them (host load average %.2f)",
		plural(sc.CPUs, "CPU"), sc.HostLoad1))
	f.Evidence = append(f.Evidence, sampledEvidence(sc)...)
	if others >= saturationMinorPart*sc.WaitingForCPUAvg {
		f.Evidence = append(f.Evidence, fmt.Sprintf("other work also holds its CPUs: its threads run on only %.2f of them%s", sc.RunningAvg, othersClause(s)))
		f.Evidence = append(f.Evidence, consumerEvidence(sc)...)
	}
	f.NextStep = "Run fewer runnable threads than the process has CPUs (smaller pools, fewer busy loops, no polling), or give it more CPUs (its affinity, its cgroup, a larger host); for latency-critical threads a fixed-priority class (chrt) cuts their involuntary switches."
}

// otherProcessesSaturation words the finding when the threads wait for
// CPUs the process may use that other work holds: it names the biggest
// consumers, and advises whoever places the work on the host.
func otherProcessesSaturation(s *Summary, f *Finding) {
	sc := s.Scheduling
	own, _ := waitSplit(sc)
	f.Summary = fmt.Sprintf("Other processes take the CPUs: the process's threads run on %.2f of its %s while %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunningAvg, plural(sc.CPUs, "CPU"), sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	why := othersClause(s)
	if why == "" {
		// A recording does not keep the host's CPU time.
		why = ": other work takes them, or the waiting threads may run on fewer CPUs than the process"
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("its threads could run on %.2f more of its CPUs, yet wait%s (host load average %.2f)",
		float64(sc.CPUs)-sc.RunningAvg, why, sc.HostLoad1))
	f.Evidence = append(f.Evidence, consumerEvidence(sc)...)
	if own >= saturationMinorPart*sc.WaitingForCPUAvg {
		f.Evidence = append(f.Evidence, fmt.Sprintf("its own runnable threads (%.2f) also outnumber its %s: %.2f of the waiting would remain on a quiet host",
			runnable(sc), plural(sc.CPUs, "CPU"), own))
	}
	f.NextStep = "The program is the victim here: move the busy neighbours or this process to other hosts or CPUs, pin each to CPUs of its own (taskset, cpusets), or reserve CPU for this process (a cgroup's cpu.weight or cpuset, nice for the others)."
}

// quotaSaturation words the finding when a cgroup's CPU quota held the
// process back: the quota's setting as its files say it, and how often.
func quotaSaturation(s *Summary, f *Finding) {
	sc := s.Scheduling
	q := sc.Quota
	f.Summary = fmt.Sprintf("A cgroup CPU quota throttles the process: it may use %.2f CPU and its threads run on %.2f while %.2f wait in a run queue (%.0f %% of their runnable time).",
		q.CPUs, sc.RunningAvg, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	f.Evidence = append(f.Evidence, fmt.Sprintf("cgroup %q (%s) held the process back in %.0f %% of the %d periods it had work in, %.2f s in all",
		q.Cgroup, quotaSetting(q), 100*q.ThrottledShare, q.Periods, q.ThrottledSeconds))
	if sc.RunnableAvg > q.CPUs {
		f.Evidence = append(f.Evidence, fmt.Sprintf("its %.2f runnable threads want more than the quota's %.2f CPU", sc.RunnableAvg, q.CPUs))
	}
	f.NextStep = "Raise the quota to what the process needs at its peak (cpu.max, or the container's CPU limit), or make it need less: fewer runnable threads than the quota's CPUs, smaller pools."
}

// unknownSaturation words the finding when ctprof cannot say who holds
// the CPUs: no affinity known, or a host that was nearly idle.
func unknownSaturation(s *Summary, f *Finding) {
	sc := s.Scheduling
	forCPUs := ""
	if sc.CPUs > 0 {
		forCPUs = " for " + plural(sc.CPUs, "CPU")
	}
	f.Summary = fmt.Sprintf("Threads wait for a CPU: %.2f runnable on average%s, of which %.2f wait in a run queue (%.0f %% of their runnable time).",
		sc.RunnableAvg, forCPUs, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare)
	switch {
	case sc.CPUs <= 0:
		f.Evidence = append(f.Evidence, fmt.Sprintf("the host's load average is %.2f", sc.HostLoad1))
	case sc.OtherCPUsAvg != nil:
		f.Evidence = append(f.Evidence, fmt.Sprintf("fewer threads run than the %s the process may use, yet they wait, though the rest of the host used only %.2f CPUs: the waiting threads may be bound to fewer CPUs than the process (below), or held back by something ctprof does not see",
			plural(sc.CPUs, "CPU"), *sc.OtherCPUsAvg+*sc.StealCPUsAvg))
	}
	f.NextStep = "Check the CPUs each waiting thread may use (taskset -p, the cgroup's cpuset and quota), and run fewer runnable threads than those CPUs."
}

// sampledLagMin is how far the threads in state R at the samples must
// exceed schedstat's runnable figure for the finding to say so.
const sampledLagMin = 0.5

// sampledEvidence says, when it matters, that the samples saw more threads
// runnable than schedstat has accounted for yet.
func sampledEvidence(sc *Scheduling) []string {
	if sc.RunnableSampledAvg-sc.RunnableAvg < sampledLagMin {
		return nil
	}
	return []string{fmt.Sprintf("the samples found %.2f threads runnable on average (state R): schedstat counts a wait only once the thread gets a CPU, so on a loaded host its figures lag",
		sc.RunnableSampledAvg)}
}

// othersClause says what the rest of the host used, when the run measured
// it: ": the rest of the host used 1.85 of its 2 CPUs".
func othersClause(s *Summary) string {
	sc := s.Scheduling
	if sc.OtherCPUsAvg == nil {
		return ""
	}
	of := ""
	if s.Host != nil && s.Host.CPUs > 0 {
		of = fmt.Sprintf(" of its %d", s.Host.CPUs)
	}
	out := fmt.Sprintf(": the rest of the host used %.2f%s CPUs", *sc.OtherCPUsAvg, of)
	if *sc.StealCPUsAvg >= consumersMinCPUs {
		out += fmt.Sprintf(", and the hypervisor withheld %.2f (steal time)", *sc.StealCPUsAvg)
	}
	return out
}

// consumerEvidence names the processes that took the most CPU. Their names
// are any process's choice: quoted, as thread names are.
func consumerEvidence(sc *Scheduling) []string {
	var named []string
	for _, c := range sc.Consumers {
		if len(named) == consumersNamed || c.CPUs < consumersMinCPUs {
			break
		}
		named = append(named, fmt.Sprintf("%q (pid %d) %.2f CPU", c.Name, c.PID, c.CPUs))
	}
	if len(named) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the biggest CPU users over %.1f s: %s", sc.ConsumersSeconds, strings.Join(named, ", "))}
}

// quotaSetting renders the quota as its files say it.
func quotaSetting(q *CPUQuota) string {
	if q.Version == 1 {
		return fmt.Sprintf("cpu.cfs_quota_us %d, cpu.cfs_period_us %d", q.QuotaMicros, q.PeriodMicros)
	}
	return fmt.Sprintf("cpu.max %d %d", q.QuotaMicros, q.PeriodMicros)
}
