package analysis

import "fmt"

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

// saturationFindings reports CPU saturation. Every number of the sentence
// is a field of Scheduling, and they come from one source (schedstat over
// the run): runnable = running + waiting, so waiting never exceeds
// runnable. The threads named are those that waited longest in absolute
// terms (Scheduling.Suffering), not those with the largest share of a
// small runnable time.
func saturationFindings(s *Summary) []Finding {
	sc := s.Scheduling
	if sc == nil {
		return nil
	}
	over := sc.CPUs > 0 && sc.RunnableAvg > float64(sc.CPUs)
	if sc.WaitingForCPUAvg < saturationMinWaiting || sc.RunQueueWaitShare < saturationMinShare && !over {
		return nil
	}
	sev := SeverityWarning
	if sc.RunQueueWaitShare >= saturationCriticalShare {
		sev = SeverityCritical
	}
	var cause string
	switch {
	case sc.CPUs <= 0:
		cause = fmt.Sprintf("the host's load average is %.2f", sc.HostLoad1)
	case over:
		cause = fmt.Sprintf("more threads are runnable than the %s the process may use: it queues behind itself", plural(sc.CPUs, "CPU"))
		if float64(sc.CPUs)-sc.RunningAvg >= 0.2 {
			// It could use all its CPUs, yet runs on fewer.
			cause += fmt.Sprintf(", and its threads run on only %.2f of them: other work takes the rest", sc.RunningAvg)
		}
		cause += fmt.Sprintf(" (host load average %.2f)", sc.HostLoad1)
	default:
		cause = fmt.Sprintf("fewer threads are runnable than the %s the process may use, yet they wait: other work takes the CPUs (host load average %.2f), or the waiting threads may run on fewer CPUs than the process",
			plural(sc.CPUs, "CPU"), sc.HostLoad1)
	}
	ev := []string{
		cause,
		fmt.Sprintf("%.2f running on average, %.2f waiting; %.1f involuntary switches per thread per second",
			sc.RunningAvg, sc.WaitingForCPUAvg, sc.InvoluntaryPerThreadPerSecond),
	}
	for _, t := range sc.Suffering {
		ev = append(ev, fmt.Sprintf("%q (tid %d) waited %.2f s for a CPU and ran %.2f s; %s, nice %d, rt priority %d, CPUs %s",
			t.Thread, t.TID, t.RunQueueWaitSeconds, t.CPUSeconds, t.Policy, t.Nice, t.RTPriority, t.CPUsAllowed))
	}
	forCPUs := ""
	if sc.CPUs > 0 {
		forCPUs = " for " + plural(sc.CPUs, "CPU")
	}
	return []Finding{{
		Kind:     FindingCPUSaturation,
		Severity: sev,
		Summary: fmt.Sprintf("Threads wait for a CPU: %.2f runnable on average%s, of which %.2f wait in a run queue (%.0f %% of their runnable time).",
			sc.RunnableAvg, forCPUs, sc.WaitingForCPUAvg, 100*sc.RunQueueWaitShare),
		Evidence: ev,
		NextStep: "Run fewer runnable threads than CPUs (smaller pools, no polling), check the affinity the process was given, and consider a fixed-priority scheduling class (chrt) for latency-critical threads: it cuts involuntary switches.",
		impact:   3e5 + 100*sc.RunQueueWaitShare,
	}}
}
