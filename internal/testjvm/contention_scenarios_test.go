package testjvm

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

var waitLockRE = regexp.MustCompile(`- waiting to lock <(0x[0-9a-f]+)> \(a ([^)]+)\)`)

// waitedAddresses counts the waiters of each address of class in a dump.
func waitedAddresses(dump []byte, class string) map[string]int {
	m := map[string]int{}
	for _, mm := range waitLockRE.FindAllSubmatch(dump, -1) {
		if string(mm[2]) == class {
			m[string(mm[1])]++
		}
	}
	return m
}

// checkStripedLocks: 64 addresses of StripedLocks$Stripe, one waiter each,
// all at StripedLocks.enter.
func checkStripedLocks(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a StripedLocks$Stripe)") == 64
	})
	addrs := waitedAddresses(dump, "StripedLocks$Stripe")
	if len(addrs) != 64 {
		t.Errorf("distinct Stripe addresses waited for = %d, want 64", len(addrs))
	}
	for a, n := range addrs {
		if n != 1 {
			t.Errorf("stripe %s has %d waiters, want 1", a, n)
		}
	}
	if got := CountLines(dump, "at StripedLocks.enter("); got != 64 {
		t.Errorf("frames at StripedLocks.enter = %d, want 64", got)
	}
}

// checkTwoMonitorsOneSite: two addresses of TwoMonitorsOneSite$Account,
// with 5 and 3 waiters, all at TwoMonitorsOneSite.enter.
func checkTwoMonitorsOneSite(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a TwoMonitorsOneSite$Account)") == 8
	})
	counts := []int{}
	for _, n := range waitedAddresses(dump, "TwoMonitorsOneSite$Account") {
		counts = append(counts, n)
	}
	if len(counts) != 2 || counts[0]+counts[1] != 8 || counts[0] != 5 && counts[0] != 3 {
		t.Errorf("waiters per Account address = %v, want 5 and 3", counts)
	}
	if got := CountLines(dump, "at TwoMonitorsOneSite.enter("); got != 8 {
		t.Errorf("frames at TwoMonitorsOneSite.enter = %d, want 8", got)
	}
}

// checkMeasuredWaits: workers queue on the MeasuredWaits$Log monitor and the
// program reports a growing wait total.
func checkMeasuredWaits(t *testing.T, p *Process) {
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool { return bytes.Count(log, []byte("WAITED ")) >= 5 })
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a MeasuredWaits$Log)") >= 1 &&
			CountLines(d, "- locked <", "(a MeasuredWaits$Log)") == 1
	})
}

// checkGroupCommit: writers in Object.wait() inside GroupCommit$Log.commit,
// the flusher outside the monitor, commits going on.
func checkGroupCommit(t *testing.T, p *Process) {
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("COMMITS ")) })
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "at GroupCommit$Log.commit(") >= 6 &&
			CountLines(d, "at GroupCommit$Log.flushLoop(") == 1
	})
}

// checkRowLocks: workers in Object.wait() inside RowLocks$Txn.awaitEnd.
func checkRowLocks(t *testing.T, p *Process) {
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "at RowLocks$Txn.awaitEnd(") >= 2
	})
}
