package testjvm

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Registered here rather than in scenarioChecks' literal so the JFR
// scenarios stay out of files other work edits.
func init() { scenarioChecks["JfrPinned"] = checkJfrPinned }

var pinnedRE = regexp.MustCompile(`(?m)^PINNED (\d+)$`)

// checkJfrPinned: the virtual threads keep sleeping inside the native
// qsort's upcall (the PINNED count grows).
func checkJfrPinned(t *testing.T, p *Process) {
	first := -1
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool {
		m := pinnedRE.FindAllSubmatch(log, -1)
		if len(m) == 0 {
			return false
		}
		n, _ := strconv.Atoi(string(m[len(m)-1][1]))
		if first < 0 {
			first = n
		}
		return n >= first+20
	})
}
