package testjvm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ThreadState is one thread of a process as /proc shows it.
type ThreadState struct {
	TID   int
	Name  string // comm, cut at 15 bytes by the kernel
	State byte   // R, S, D, T, t, ...
}

// ThreadStates reads every thread of pid from /proc, by the test itself
// (not through ctprof), so a test can check what ctprof says against it.
func ThreadStates(pid int) []ThreadState {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []ThreadState
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open || closing+2 >= len(b) {
			continue
		}
		out = append(out, ThreadState{TID: tid, Name: string(b[open+1 : closing]), State: b[closing+2]})
	}
	return out
}

// WaitForSafepointStall waits until the SafepointStall scenario is in a
// stall, seen from /proc for at least hold: "matcher-3" running (R) and
// both allocators asleep on every poll, as they are only when the
// collection they asked for waits for matcher-3 at its safepoint (they
// allocate without pause otherwise). It fails the test after timeout.
func (p *Process) WaitForSafepointStall(t testing.TB, hold, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var since time.Time
	var last []ThreadState
	for {
		last = ThreadStates(p.PID)
		matcherRuns, allocatorsSleep, allocators := false, true, 0
		for _, th := range last {
			switch {
			case th.Name == "matcher-3":
				matcherRuns = th.State == 'R'
			case strings.HasPrefix(th.Name, "allocator-"):
				allocators++
				if th.State == 'R' {
					allocatorsSleep = false
				}
			}
		}
		switch {
		case matcherRuns && allocatorsSleep && allocators == 2:
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= hold {
				return
			}
		default:
			since = time.Time{}
		}
		if p.Exited() {
			t.Fatalf("testjvm: %s exited while waiting for a safepoint stall\n%s", p.Scenario, tail(p.Log(), 2048))
		}
		if time.Now().After(deadline) {
			t.Fatalf("testjvm: no safepoint stall of %s within %s; threads: %v\nlog:\n%s", hold, timeout, last, tail(p.Log(), 2048))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
