package testjvm

import (
	"bytes"
	"testing"
	"time"
)

// Registered here rather than in scenarioChecks' literal so pkg/jfr's
// scenario stays out of files other work edits.
func init() { scenarioChecks["JfrLocks"] = checkJfrLocks }

// checkJfrLocks: monitor threads queued on JfrLocks$Monitor, park threads
// parked on the ReentrantLock, the waiter in Object.wait() on
// JfrLocks$Signal, and WAITED lines going on.
func checkJfrLocks(t *testing.T, p *Process) {
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool { return bytes.Count(log, []byte("WAITED ")) >= 5 })
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a JfrLocks$Monitor)") >= 1 &&
			CountLines(d, "- parking to wait for ", "(a java.util.concurrent.locks.ReentrantLock$NonfairSync)") >= 1 &&
			CountLines(d, "at JfrLocks.awaitSignal(") == 1
	})
}
