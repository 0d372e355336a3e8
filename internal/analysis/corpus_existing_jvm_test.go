package analysis

import (
	"strings"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The corpus cases of the three libraries the wait model was first built
// on (Derby, H2, Log4j): their labels, by what each workload does.

// waitingOn reports a thread that waits (not RUNNABLE, not sleeping).
func waitingOn(st testjvm.ThreadStack) bool {
	_, ok := basicTruth(st)
	return !ok && st.State != ""
}

// countRole counts the threads whose name starts with prefix and that
// wait with a stack holding every one of frames.
func countRole(stacks []testjvm.ThreadStack, prefix string, frames ...string) int {
	n := 0
	for _, st := range stacks {
		if !strings.HasPrefix(st.Name, prefix) || !waitingOn(st) {
			continue
		}
		all := true
		for _, f := range frames {
			all = all && st.Has(f)
		}
		if all {
			n++
		}
	}
	return n
}

func init() {
	corpusCases = append(corpusCases,
		// Derby's group commit: writers wait in LogToFile.flush for the
		// one thread syncing the log (Object.wait, then re-entering the
		// log's monitor). Derby's daemon and its timer wait for work.
		corpusCase{
			workload: "DerbyGroupCommit", args: []string{"16"}, kind: "database",
			ready: func(s []testjvm.ThreadStack) bool { return countRole(s, "writer-", "LogToFile.flush") >= 8 },
			label: func(st testjvm.ThreadStack) threadTruth {
				switch {
				case strings.HasPrefix(st.Name, "writer-"):
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					if st.Has("LogToFile.flush") {
						return threadTruth{truthContention, "log flush"}
					}
					return threadTruth{truthContention, "derby"}
				case st.Name == "derby.rawStoreDaemon", strings.HasPrefix(st.Name, "Timer-"), st.Name == "derby.antiGC":
					if tr, ok := basicTruth(st); ok {
						return tr
					}
					return threadTruth{Verdict: truthIdle}
				}
				return threadTruth{}
			},
			topFrame: "LogToFile.flush",
		},
		// H2 (MVStore): a worker whose row another transaction holds waits
		// on that Transaction until it ends; the holder sleeps 5 ms before
		// committing (a sleep, not a wait).
		corpusCase{
			workload: "H2RowLocks", args: []string{"16", "2"}, kind: "database",
			ready: func(s []testjvm.ThreadStack) bool { return countRole(s, "worker-", "Transaction.waitFor") >= 8 },
			label: func(st testjvm.ThreadStack) threadTruth {
				if !strings.HasPrefix(st.Name, "worker-") {
					return threadTruth{}
				}
				if tr, ok := basicTruth(st); ok {
					return tr
				}
				if st.Has("Transaction.waitFor") {
					return threadTruth{truthContention, "row lock"}
				}
				return threadTruth{truthContention, "h2"}
			},
			topFrame: "Transaction.waitForThisToEnd",
		},
		// Log4j's synchronous file appender: every event is written under
		// the file manager's monitor.
		corpusCase{
			workload: "Log4jFileAppender", args: []string{"16"}, kind: "logging",
			ready: func(s []testjvm.ThreadStack) bool { return countRole(s, "logger-") >= 8 },
			label: func(st testjvm.ThreadStack) threadTruth {
				if !strings.HasPrefix(st.Name, "logger-") {
					return threadTruth{}
				}
				if tr, ok := basicTruth(st); ok {
					return tr
				}
				return threadTruth{truthContention, "file appender"}
			},
			topFrame: "log4j.core.appender.OutputStreamManager.|log4j.core.appender.rolling.RollingFileManager.", // any of the manager's synchronized methods
		},
	)
}
