package testjvm

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var collectionsRE = regexp.MustCompile(`(?m)^collections (\d+)$`)

// checkAllocationChurn: the allocating threads run in churn(), and the JVM
// keeps collecting (the count grows by more than one in a second or so).
func checkAllocationChurn(t *testing.T, p *Process) {
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "\"alloc-") == 4 && CountLines(d, "at AllocationChurn.churn(") == 4
	})
	first := int64(-1)
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool {
		m := collectionsRE.FindAllSubmatch(log, -1)
		if len(m) == 0 {
			return false
		}
		last, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
		if first < 0 {
			first = last
		}
		return last > first+1
	})
	if bytes.Contains(p.Log(), []byte("OutOfMemoryError")) {
		t.Errorf("AllocationChurn ran out of memory")
	}
}
