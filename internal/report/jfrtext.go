package report

import (
	"fmt"

	"github.com/ctprof/ctprof/internal/analysis"
)

// jfrHeader is the text report's line about the recording read.
func jfrHeader(j *analysis.JFRSummary) string {
	s := fmt.Sprintf("JFR recording: %d waits", j.Events)
	if j.Events > 0 {
		s += fmt.Sprintf(", %.2f thread-seconds in all, over %.1f s (%s to %s)", j.WaitSeconds, j.DurationSeconds,
			j.First.Format("2006-01-02 15:04:05"), j.Last.Format("15:04:05"))
	}
	if j.GCPauses > 0 {
		s += fmt.Sprintf("; %d GC pauses, %.3f s", j.GCPauses, j.GCPauseSeconds)
	}
	return s
}

// writeJFRLock prints what a recording measured about one lock: the JFR
// line, and the sites when there are several.
func writeJFRLock(tw *textWriter, j *analysis.JFRWaits) {
	if j == nil || j.Events == 0 {
		return
	}
	tw.printf("               JFR: %s\n", Terminal(analysis.JFRLine(j)))
	if len(j.Notifiers) > 0 && len(j.PreviousOwners) > 0 {
		tw.printf("               notified by %q\n", j.Notifiers[0].Thread)
	}
	if len(j.Sites) > 1 {
		for i, st := range j.Sites {
			if i == 3 {
				tw.printf("               … %d more sites\n", len(j.Sites)-3)
				break
			}
			tw.printf("               JFR at %s: %d waits, %.3f s, p99 %.2f ms\n", Terminal(st.Frame), st.Events, st.WaitSeconds, st.P99Ms)
		}
	}
}
