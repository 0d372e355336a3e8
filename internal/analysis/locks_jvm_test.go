package analysis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check the lock table against jcmd dumps of real JVMs: the
// truth is read from the dump text itself, not from the parser.

var waitingToLockRE = regexp.MustCompile(`- waiting to lock <(0x[0-9a-f]+)> \(a ([^)]+)\)`)

// waitersByAddress counts the "waiting to lock" lines of class by address.
func waitersByAddress(dump []byte, class string) map[string]int {
	m := map[string]int{}
	for _, mm := range waitingToLockRE.FindAllSubmatch(dump, -1) {
		if string(mm[2]) == class {
			m[string(mm[1])]++
		}
	}
	return m
}

func parseDump(t *testing.T, text []byte) *threaddump.Dump {
	t.Helper()
	ds, err := threaddump.ParseBytes(text)
	require.NoError(t, err)
	require.NotEmpty(t, ds)
	return ds[len(ds)-1]
}

func locksOf(s *Summary, class string) map[string]LockSummary {
	m := map[string]LockSummary{}
	for _, l := range s.Locks {
		if l.Class == class {
			m[l.Address] = l
		}
	}
	return m
}

func TestJVMStripedLocksAreNoHotspot(t *testing.T) {
	const class = "StripedLocks$Stripe"
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "StripedLocks", "64")
			a := New()
			var last []byte
			// Three dumps: a lock with one waiter in most of several dumps
			// is a hotspot candidate, unless its site is striped.
			for i := 0; i < 3; i++ {
				last = p.WaitForDump(t, time.Minute, func(d []byte) bool {
					return testjvm.CountLines(d, "- waiting to lock <", "(a "+class+")") == 64
				})
				d := parseDump(t, last)
				d.Time = time.Now() // jcmd's header has whole seconds only
				a.Add(&snapshot.Snapshot{Time: d.Time, Dump: d})
			}
			p.Stop()
			truth := waitersByAddress(last, class)
			s := a.Summary()
			got := locksOf(s, class)
			assert.Len(t, got, len(truth))
			for addr, n := range truth {
				assert.Equal(t, n, got[addr].Waiters, addr)
				if assert.NotNil(t, got[addr].Owner, addr) {
					assert.True(t, strings.HasPrefix(*got[addr].Owner, "stripe-owner-"), *got[addr].Owner)
				}
			}
			var sites []ContentionSite
			for _, c := range s.ContentionSites {
				if c.Class == class {
					sites = append(sites, c)
				}
			}
			require.Len(t, sites, 1)
			assert.Equal(t, len(truth), sites[0].Instances)
			assert.Equal(t, len(truth), sites[0].Waiters)
			assert.Equal(t, 1, sites[0].MaxInstanceWaiters)
			assert.True(t, sites[0].Striped)
			for _, f := range s.Findings {
				if f.Kind == FindingLockHotspot || f.Kind == FindingSerialization {
					assert.NotContains(t, f.Summary, "Stripe", "a striped site is no hotspot")
				}
			}
		})
	}
}

func TestJVMTwoMonitorsOneSiteAreTwoLocks(t *testing.T) {
	const class = "TwoMonitorsOneSite$Account"
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "TwoMonitorsOneSite", "5", "3")
			dump := p.WaitForDump(t, time.Minute, func(d []byte) bool {
				return testjvm.CountLines(d, "- waiting to lock <", "(a "+class+")") == 8
			})
			p.Stop()
			a := New()
			a.Add(&snapshot.Snapshot{Dump: parseDump(t, dump)})
			s := a.Summary()
			truth := waitersByAddress(dump, class)
			require.Len(t, truth, 2)
			got := locksOf(s, class)
			require.Len(t, got, 2)
			for addr, n := range truth {
				l := got[addr]
				assert.Equal(t, n, l.Waiters, addr)
				require.NotNil(t, l.Owner, addr)
				// owner-a's lock is waited for by waiter-a-*, owner-b's by
				// waiter-b-*.
				side := strings.TrimPrefix(*l.Owner, "owner-")
				for _, w := range l.WaiterThreads {
					assert.True(t, strings.HasPrefix(w, "waiter-"+side+"-"), "%s waits on %s's lock", w, *l.Owner)
				}
				// The dump text agrees on who holds the address.
				assert.Equal(t, 1, countLinesInThread(dump, *l.Owner, "- locked <"+addr+">"), "owner %s holds %s", *l.Owner, addr)
			}
			require.Len(t, s.ContentionSites, 1)
			c := s.ContentionSites[0]
			assert.Equal(t, 2, c.Instances)
			assert.Equal(t, truth[firstKey(truth)]+truth[otherKey(truth)], c.Waiters)
			assert.False(t, c.Striped)
		})
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		if k < otherKey(m) {
			return k
		}
	}
	return otherKey(m)
}

func otherKey(m map[string]int) string {
	best := ""
	for k := range m {
		if k > best {
			best = k
		}
	}
	return best
}

// countLinesInThread counts lines containing substr in the stack of the
// thread named name.
func countLinesInThread(dump []byte, name, substr string) int {
	n, in := 0, false
	for _, line := range strings.Split(string(dump), "\n") {
		if strings.HasPrefix(line, "\"") {
			in = strings.HasPrefix(line, "\""+name+"\" ")
			continue
		}
		if in && strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

func TestJVMMonitorDeadlockOneWaiterPerLock(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "MonitorDeadlock")
	dump := p.ThreadPrint(t)
	p.Stop()
	a := New()
	a.Add(&snapshot.Snapshot{Dump: parseDump(t, dump)})
	s := a.Summary()
	// The JVM's deadlock report repeats the cycle's stacks: count the
	// thread list only.
	threads := dump
	if i := bytes.Index(dump, []byte("Found one Java-level deadlock")); i >= 0 {
		threads = dump[:i]
	}
	n := 0
	for _, class := range []string{"MonitorDeadlock$LockA", "MonitorDeadlock$LockB"} {
		truth := waitersByAddress(threads, class)
		require.Len(t, truth, 1, class)
		for addr, w := range truth {
			l, ok := locksOf(s, class)[addr]
			require.True(t, ok, class)
			assert.Equal(t, w, l.Waiters, class)
			assert.Equal(t, 1, l.Waiters, class)
			n++
		}
	}
	assert.Equal(t, 2, n)
}

// The queued time ctprof computes from dumps spaced 1 s and 3 s apart,
// among /proc samples every 500 ms, matches what the workload measures of
// its own monitor waits within 25 %.
func TestJVMBlockedSecondsMatchMeasuredWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("samples a JVM for 30 s")
	}
	const class = "MeasuredWaits$Log"
	for _, every := range []time.Duration{time.Second, 3 * time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			p := testjvm.Start(t, testjvm.JDK17(t), "MeasuredWaits", "4")
			const interval = 500 * time.Millisecond
			smp, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: interval, Duration: 15 * time.Second,
				JVM: sample.JVMOptions{DumpEvery: every}})
			require.NoError(t, err)
			a := New()
			var dumpTimes []time.Time
			_, err = smp.Run(context.Background(), func(s *snapshot.Snapshot) {
				if s.Dump != nil {
					dumpTimes = append(dumpTimes, s.Time)
				}
				a.Add(s)
			})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(dumpTimes), 4, "dumps taken")
			// The workload's total at the end of the last dump's period.
			end := dumpTimes[len(dumpTimes)-1]
			p.WaitForLog(t, 10*time.Second, func(log []byte) bool { return lastWaited(log).After(end.Add(time.Second)) })
			p.Stop()
			w := parseWaited(t, p.Log())
			// ctprof's figure covers the first dump's sample interval and
			// every dump's spacing since.
			start := dumpTimes[0].Add(-interval)
			truth := (w.at(end) - w.at(start)).Seconds()
			require.Greater(t, truth, 5.0, "the workload queued")

			s := a.Summary()
			var l *LockSummary
			for i := range s.Locks {
				if s.Locks[i].Class == class {
					require.Nil(t, l, "one MeasuredWaits$Log lock")
					l = &s.Locks[i]
				}
			}
			require.NotNil(t, l)
			assert.Equal(t, len(dumpTimes), l.DumpsSeen)
			t.Logf("dumps every %s: %d dumps, ctprof %.1f thread-s, workload %.1f thread-s", every, len(dumpTimes), l.BlockedThreadSeconds, truth)
			assert.InEpsilon(t, truth, l.BlockedThreadSeconds, 0.25)
		})
	}
}

// waited is the workload's cumulative wait by wall time.
type waited struct {
	t []time.Time
	v []time.Duration
}

// at interpolates the cumulative wait at time x.
func (w waited) at(x time.Time) time.Duration {
	for i := 1; i < len(w.t); i++ {
		if !w.t[i].Before(x) {
			f := float64(x.Sub(w.t[i-1])) / float64(w.t[i].Sub(w.t[i-1]))
			return w.v[i-1] + time.Duration(f*float64(w.v[i]-w.v[i-1]))
		}
	}
	return w.v[len(w.v)-1]
}

func parseWaited(t *testing.T, log []byte) waited {
	var w waited
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		var ms, ns int64
		if _, err := fmt.Sscanf(sc.Text(), "WAITED %d %d", &ms, &ns); err != nil {
			continue
		}
		w.t = append(w.t, time.UnixMilli(ms))
		w.v = append(w.v, time.Duration(ns))
	}
	require.GreaterOrEqual(t, len(w.t), 2, "WAITED lines")
	return w
}

func lastWaited(log []byte) time.Time {
	i := bytes.LastIndex(log, []byte("WAITED "))
	if i < 0 {
		return time.Time{}
	}
	f := strings.Fields(string(log[i:]))
	if len(f) < 2 {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
