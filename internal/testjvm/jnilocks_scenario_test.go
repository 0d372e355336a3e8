package testjvm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var jniLockRE = regexp.MustCompile(`(?m)^(GLOBAL_LOCK|HEAP_LOCK) 0x([0-9a-f]+)$`)

// checkJniLocks: the library is loaded from the path testjvm passed, the
// workers are in their native methods, and /proc shows threads waiting in
// futex(2) on both mutexes at the addresses the program printed.
func checkJniLocks(t *testing.T, p *Process) {
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "\"jni-worker-") == 4 && CountLines(d, "at JniLocks.globalWork(Native Method)") == 4 &&
			CountLines(d, "\"jni-heap-") == 3 && CountLines(d, "at JniLocks.heapWork(Native Method)") == 3
	})
	addrs := map[string]string{}
	for _, m := range jniLockRE.FindAllStringSubmatch(string(p.Log()), -1) {
		addrs[m[1]] = "0x" + m[2]
	}
	if len(addrs) != 2 {
		t.Fatalf("want GLOBAL_LOCK and HEAP_LOCK lines, got %v", addrs)
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.PID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(maps), "/libjnilocks.so\n") {
		t.Errorf("libjnilocks.so is not mapped")
	}
	// Waiters on each, within a bounded poll.
	deadline := time.Now().Add(30 * time.Second)
	for {
		waiting := futexWaitAddresses(p.PID)
		if waiting[addrs["GLOBAL_LOCK"]] >= 1 && waiting[addrs["HEAP_LOCK"]] >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no thread seen in futex(2) on both %v; last sweep: %v", addrs, waiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// futexWaitAddresses counts pid's threads in futex(2) (202 on x86-64) by
// the futex's address ("0x…", as /proc/<pid>/task/<tid>/syscall gives it).
func futexWaitAddresses(pid int) map[string]int {
	out := map[string]int{}
	task := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(task)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(task, e.Name(), "syscall"))
		f := strings.Fields(string(b))
		if err != nil || len(f) < 2 || f[0] != "202" {
			continue
		}
		if a, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64); err == nil {
			out[fmt.Sprintf("0x%x", a)]++
		}
	}
	return out
}
