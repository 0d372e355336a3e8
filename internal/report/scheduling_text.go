package report

import (
	"fmt"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// causeWords are Scheduling.Cause in the text summary's words.
var causeWords = map[string]string{
	analysis.CauseOwnThreads:     "the process's own threads (more runnable than its CPUs)",
	analysis.CauseOtherProcesses: "other processes (they hold the CPUs it may use)",
	analysis.CauseCgroupQuota:    "a cgroup CPU quota",
	analysis.CauseUnknown:        "not known (the rest of the host was nearly idle)",
}

// writeSchedulingHost prints, under SCHEDULING, whom the waiting is owed
// to and what the rest of the host did: its CPU use, its biggest
// processes (names quoted, then made safe for a terminal: any process
// chooses its name) and the quota of the process's cgroup.
func writeSchedulingHost(tw *textWriter, sc *analysis.Scheduling) {
	T := Terminal
	if w, ok := causeWords[sc.Cause]; ok {
		tw.printf("  cause: %s\n", w)
	}
	if sc.OtherCPUsAvg != nil {
		tw.printf("  the rest of the host used %.2f CPUs on average", *sc.OtherCPUsAvg)
		if *sc.StealCPUsAvg > 0 {
			tw.printf("; the hypervisor withheld %.2f (steal)", *sc.StealCPUsAvg)
		}
		tw.printf("\n")
	}
	if len(sc.Consumers) > 0 {
		var names []string
		for _, c := range sc.Consumers {
			names = append(names, fmt.Sprintf("%q (pid %d) %.2f", c.Name, c.PID, c.CPUs))
		}
		tw.printf("  biggest CPU users over %.1f s (CPUs): %s\n", sc.ConsumersSeconds, T(strings.Join(names, ", ")))
	}
	if q := sc.Quota; q != nil {
		tw.printf("  cgroup %s: quota %.2f CPU, throttled in %.0f%% of %d periods, %.2f s\n",
			T(fmt.Sprintf("%q", q.Cgroup)), q.CPUs, 100*q.ThrottledShare, q.Periods, q.ThrottledSeconds)
	}
}
