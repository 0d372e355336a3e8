package testjvm

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

func init() { scenarioChecks["LongGCPause"] = checkLongGCPause }

var gcLineRE = regexp.MustCompile(`(?m)^GC (\d+)$`)

// checkLongGCPause: the collections come one after another, and they
// take over a second on this machine (the scenario's promise to the tests
// that tell a long GC pause).
func checkLongGCPause(t *testing.T, p *Process) {
	log := p.WaitForLog(t, 2*time.Minute, func(log []byte) bool { return len(gcLineRE.FindAll(log, -1)) >= 2 })
	longest := 0
	for _, m := range gcLineRE.FindAllSubmatch(log, -1) {
		ms, _ := strconv.Atoi(string(m[1]))
		longest = max(longest, ms)
	}
	if longest < 1000 {
		t.Errorf("the longest full collection took %d ms, want over a second", longest)
	}
}
