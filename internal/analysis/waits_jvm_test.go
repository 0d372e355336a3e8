package analysis

import (
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check the wait model (waits for a signal inside work) against
// jcmd dumps of real JVMs; the truth is read from the dump text with the
// plain rules below, not from the parser.

// waitsOn groups the dump text's waits on class (textWaits, the rules
// written in libraries_jvm_test.go) by address: the waiting threads and
// their kinds.
func waitsOn(dump []byte, class string) (names map[string][]string, kinds map[string]map[string]int) {
	names, kinds = map[string][]string{}, map[string]map[string]int{}
	for _, w := range textWaits(dump) {
		if w.class != class {
			continue
		}
		names[w.address] = append(names[w.address], w.thread)
		if kinds[w.address] == nil {
			kinds[w.address] = map[string]int{}
		}
		kinds[w.address][w.kind]++
	}
	return names, kinds
}

// stackOf is the named thread's stack in the dump.
func stackOf(dump []byte, name string) testjvm.ThreadStack {
	for _, st := range testjvm.ThreadStacks(dump) {
		if st.Name == name {
			return st
		}
	}
	return testjvm.ThreadStack{}
}

func TestJVMGroupCommitConvoyIsContention(t *testing.T) {
	const class = "GroupCommit$Log"
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "GroupCommit", "12", "20")
			a := New()
			var dumps [][]byte
			for i := 0; i < 3; i++ {
				// A dump where the flusher syncs (it is not in wait()) and
				// most writers wait for it.
				d := p.WaitForDump(t, time.Minute, func(d []byte) bool {
					f := stackOf(d, "log-flusher")
					return f.Has("GroupCommit$Log.flushLoop") && !f.Has("Object.wait") &&
						testjvm.CountLines(d, "at GroupCommit$Log.commit(") >= 6
				})
				dumps = append(dumps, d)
				pd := parseDump(t, d)
				pd.Time = time.Now()
				a.Add(&snapshot.Snapshot{Time: pd.Time, Dump: pd})
			}
			p.Stop()
			s := a.Summary()
			truth, _ := waitsOn(dumps[len(dumps)-1], class)
			require.Len(t, truth, 1, "one Log object")
			peak, kinds := 0, map[string]int{}
			for _, d := range dumps {
				names, ks := waitsOn(d, class)
				for addr := range names {
					peak = max(peak, len(names[addr]))
					for k, n := range ks[addr] {
						kinds[k] += n
					}
				}
			}
			for addr, names := range truth {
				l, ok := locksOf(s, class)[addr]
				require.True(t, ok, "the Log monitor %s is in the lock table", addr)
				assert.Equal(t, peak, l.Waiters)
				assert.Equal(t, len(names), l.CurrentWaiters)
				assert.Contains(t, principalKinds(kinds), l.Kind, "kinds in the dumps: %v", kinds)
				assert.Equal(t, "monitor", l.Resource)
				assert.Equal(t, kinds, l.WaitKinds)
				assert.Nil(t, l.Owner, "the flusher syncs outside the monitor")
				if assert.NotNil(t, l.Releaser) {
					assert.Equal(t, "log-flusher", *l.Releaser)
				}
				require.NotNil(t, l.WaitFrame)
				assert.Contains(t, *l.WaitFrame, "GroupCommit$Log.commit(")
				assert.Equal(t, 3, l.DumpsSeen)
			}
			// The convoy leads the findings, and names the flusher.
			require.NotEmpty(t, s.Findings)
			f := s.Findings[0]
			assert.Equal(t, FindingLockHotspot, f.Kind)
			assert.Contains(t, f.Summary, "monitor GroupCommit$Log")
			assert.Contains(t, f.Summary, "in wait() inside work")
			assert.Contains(t, f.Summary, `"log-flusher"`)
			assert.NotContains(t, f.Summary, "held by")
		})
	}
}

func TestJVMRowLockWaitsAreContention(t *testing.T) {
	const class = "RowLocks$Txn"
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "RowLocks", "8", "2", "30")
			dump := p.WaitForDump(t, time.Minute, func(d []byte) bool {
				return testjvm.CountLines(d, "at RowLocks$Txn.awaitEnd(") >= 4
			})
			p.Stop()
			a := New()
			a.Add(&snapshot.Snapshot{Dump: parseDump(t, dump)})
			s := a.Summary()
			truth, kinds := waitsOn(dump, class)
			require.NotEmpty(t, truth)
			got := locksOf(s, class)
			for addr, names := range truth {
				l, ok := got[addr]
				require.True(t, ok, "transaction %s waited on is in the lock table", addr)
				assert.Equal(t, len(names), l.Waiters, addr)
				assert.ElementsMatch(t, names, l.WaiterThreads, addr)
				assert.Equal(t, kinds[addr], l.WaitKinds, addr)
				assert.Contains(t, principalKinds(kinds[addr]), l.Kind, addr)
				// Each worker runs a transaction of its own: the dump
				// cannot tell which holds this one, so none is named.
				assert.Nil(t, l.Releaser, addr)
				// A waiter does not own the monitor it waits on.
				if l.Owner != nil {
					assert.NotContains(t, names, *l.Owner)
				}
			}
			// No transaction object is owned by a thread in wait() on it.
			for _, l := range got {
				if l.Owner != nil {
					assert.False(t, stackOf(dump, *l.Owner).Has("waiting on <no object reference available>"), *l.Owner)
				}
			}
			if maxLen(truth) >= 2 {
				require.NotEmpty(t, s.Findings)
				assert.Contains(t, s.Findings[0].Summary, "RowLocks$Txn")
			}
		})
	}
}

func maxLen(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n = max(n, len(v))
	}
	return n
}

// A thread that waits alone in Object.wait() on an object nobody works
// with (MonitorDeadlock's "bystander" in idle()) and an executor's idle
// workers are not contention.
func TestJVMIdleWaitsAreNotContention(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "MonitorDeadlock")
	dump := p.ThreadPrint(t)
	p.Stop()
	a := New()
	a.Add(&snapshot.Snapshot{Dump: parseDump(t, dump)})
	for _, l := range a.Summary().Locks {
		assert.NotContains(t, l.WaiterThreads, "bystander")
		assert.NotContains(t, l.WaiterThreads, "Reference Handler")
		assert.NotContains(t, l.WaiterThreads, "Finalizer")
	}
}
