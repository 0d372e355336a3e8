package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// monitorDump builds a dump in which, for each lock address, one owner
// holds the lock and n threads wait for it at app.Cache.get, the one wait
// site of every lock.
func monitorDump(t *testing.T, at time.Time, class string, locks map[string]int) *threaddump.Dump {
	t.Helper()
	return monitorDumpAt(t, at, class, locks, "get")
}

// monitorDumpAt is monitorDump with the waiters in app.Cache.<method>.
func monitorDumpAt(t *testing.T, at time.Time, class string, locks map[string]int, method string) *threaddump.Dump {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nFull thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):\n\n", at.Format("2006-01-02 15:04:05"))
	id := 10
	addrs := make([]string, 0, len(locks))
	for a := range locks {
		addrs = append(addrs, a)
	}
	// Sorted for a stable dump.
	for i := range addrs {
		for j := i + 1; j < len(addrs); j++ {
			if addrs[j] < addrs[i] {
				addrs[i], addrs[j] = addrs[j], addrs[i]
			}
		}
	}
	for _, addr := range addrs {
		id++
		fmt.Fprintf(&b, "\"owner-%s\" #%d prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x1 nid=0x%x runnable  [0x0]\n   java.lang.Thread.State: RUNNABLE\n\tat app.Cache.refresh(Cache.java:40)\n\t- locked <%s> (a %s)\n\tat app.Worker.run(Worker.java:10)\n\n", addr, id, id, addr, class)
		for w := 0; w < locks[addr]; w++ {
			id++
			fmt.Fprintf(&b, "\"w-%s-%d\" #%d prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x2 nid=0x%x waiting for monitor entry  [0x0]\n   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat app.Cache.%s(Cache.java:20)\n\t- waiting to lock <%s> (a %s)\n\tat app.Worker.run(Worker.java:12)\n\n", addr, w, id, id, method, addr, class)
		}
	}
	ds, err := threaddump.ParseString(b.String())
	require.NoError(t, err)
	return ds[0]
}

func TestLockIdentityByInstance(t *testing.T) {
	const a1, a2, a3 = "0x00000000aaaa0000", "0x00000000bbbb0000", "0x00000000cccc0000"
	tests := []struct {
		name  string
		dumps []map[string]int
		// want maps each lock's peak address to its peak waiters and the
		// number of addresses it had.
		want      map[string][2]int
		instances int
	}{
		{"two instances in one dump are two locks", []map[string]int{{a1: 3, a2: 5}},
			map[string][2]int{a1: {3, 1}, a2: {5, 1}}, 2},
		{"same address across dumps is one lock", []map[string]int{{a1: 3}, {a1: 4}},
			map[string][2]int{a1: {4, 1}}, 1},
		{"moved by the GC: one candidate fits", []map[string]int{{a1: 3}, {a2: 3}},
			map[string][2]int{a2: {3, 2}}, 1},
		{"two moved at once: ambiguous, new locks", []map[string]int{{a1: 2, a2: 2}, {a3: 2, "0x00000000dddd0000": 2}},
			map[string][2]int{a1: {2, 1}, a2: {2, 1}, a3: {2, 1}, "0x00000000dddd0000": {2, 1}}, 4},
		{"old address still held: not a move", []map[string]int{{a1: 2}, {a1: 0, a2: 2}},
			map[string][2]int{a1: {2, 1}, a2: {2, 1}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New()
			for i, d := range tc.dumps {
				a.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0.Add(time.Duration(i)*time.Second), "app.Cache", d)})
			}
			s := a.Summary()
			got := map[string][2]int{}
			for _, l := range s.Locks {
				got[l.Address] = [2]int{l.Waiters, max(len(l.Addresses), 1)}
			}
			assert.Equal(t, tc.want, got)
			require.Len(t, s.ContentionSites, 1)
			assert.Equal(t, tc.instances, s.ContentionSites[0].Instances)
		})
	}
}

// A monitor entered from two methods, moved by the GC in a dump where its
// waiters' commonest method changed: still one lock (the one moved lock of
// its class), one instance.
func TestMovedLockFollowedWhenItsWaitSiteChanged(t *testing.T) {
	a := New()
	a.Add(&snapshot.Snapshot{Dump: monitorDumpAt(t, t0, "app.Manager", map[string]int{"0x00000000aaaa0000": 5}, "get")})
	a.Add(&snapshot.Snapshot{Dump: monitorDumpAt(t, t0.Add(time.Second), "app.Manager", map[string]int{"0x00000000bbbb0000": 6}, "put")})
	s := a.Summary()
	require.Len(t, s.Locks, 1, "one lock: %+v", s.Locks)
	assert.Equal(t, []string{"0x00000000aaaa0000", "0x00000000bbbb0000"}, s.Locks[0].Addresses)
	assert.Equal(t, 5.5, s.Locks[0].AvgWaiters)

	// Two moved locks of the class, neither at the new site: ambiguous,
	// a new lock.
	b := New()
	b.Add(&snapshot.Snapshot{Dump: monitorDumpAt(t, t0, "app.Manager", map[string]int{"0x00000000aaaa0000": 2, "0x00000000cccc0000": 2}, "get")})
	b.Add(&snapshot.Snapshot{Dump: monitorDumpAt(t, t0.Add(time.Second), "app.Manager", map[string]int{"0x00000000bbbb0000": 6}, "put")})
	assert.Len(t, b.Summary().Locks, 3)
}

func TestStripedSiteIsNoHotspot(t *testing.T) {
	a := New()
	for i := 0; i < 4; i++ {
		locks := map[string]int{}
		for k := 0; k < 64; k++ {
			locks[fmt.Sprintf("0x%016x", 0x1000+k*0x100)] = 1
		}
		a.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0.Add(time.Duration(i)*time.Second), "app.Stripe", locks)})
	}
	s := a.Summary()
	assert.Len(t, s.Locks, 64)
	require.Len(t, s.ContentionSites, 1)
	cs := s.ContentionSites[0]
	assert.Equal(t, 64, cs.Instances)
	assert.Equal(t, 64, cs.PeakInstances)
	assert.Equal(t, 64, cs.Waiters)
	assert.Equal(t, 1, cs.MaxInstanceWaiters)
	assert.True(t, cs.Striped)
	assert.Equal(t, 4, cs.DumpsSeen)
	for _, f := range s.Findings {
		assert.NotEqual(t, FindingLockHotspot, f.Kind, f.Summary)
		assert.NotEqual(t, FindingSerialization, f.Kind, f.Summary)
	}

	// One hot lock of the same class at the same site is not striped.
	b := New()
	b.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0, "app.Stripe", map[string]int{"0x1000": 1, "0x2000": 6})})
	assert.False(t, b.Summary().ContentionSites[0].Striped)
}

func TestNoCriticalFromOneDump(t *testing.T) {
	a := New()
	a.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0, "app.Cache", map[string]int{"0x1000": 7})})
	s := a.Summary()
	require.Len(t, s.Locks, 1)
	assert.Equal(t, 1, s.Locks[0].DumpsSeen)
	var hot *Finding
	for i := range s.Findings {
		if s.Findings[i].Kind == FindingLockHotspot {
			hot = &s.Findings[i]
		}
	}
	require.NotNil(t, hot)
	assert.Equal(t, SeverityWarning, hot.Severity)
	assert.Contains(t, hot.Summary, "seen in 1 dump")

	// The same lock over three dumps is critical.
	b := New()
	for i := 0; i < 3; i++ {
		b.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0.Add(time.Duration(i)*time.Second), "app.Cache", map[string]int{"0x1000": 7})})
	}
	sev := ""
	for _, f := range b.Summary().Findings {
		if f.Kind == FindingLockHotspot {
			sev = f.Severity
			assert.Contains(t, f.Summary, "seen in 3 dumps")
		}
	}
	assert.Equal(t, SeverityCritical, sev)
}

// Dumps every 3 s among /proc samples every 1 s: each dump's waiters stand
// for the 3 s since the previous dump, not the 1 s since the last sample.
func TestBlockedSecondsWeighByDumpSpacing(t *testing.T) {
	for _, every := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("every %d s", every), func(t *testing.T) {
			a := New()
			for i := 0; i <= 30; i++ {
				s := liveSnap(i, []procfs.Thread{thread(1, "main", 'S', 1, 0, 0)})
				if i%every == 0 {
					s.Dump = monitorDump(t, s.Time, "app.Cache", map[string]int{"0x1000": 4})
				}
				a.Add(s)
			}
			s := a.Summary()
			require.Len(t, s.Locks, 1)
			// 30 s of 4 waiters, plus the first dump's sample interval.
			assert.InDelta(t, 4*31.0, s.Locks[0].BlockedThreadSeconds, 1e-9)
			assert.Equal(t, 30/every+1, s.Locks[0].DumpsSeen)
			assert.InDelta(t, 4*31.0, s.ContentionSites[0].BlockedThreadSeconds, 1e-9)
		})
	}
}

// A full lock table makes room by evicting old locks, never the locks of the
// dump being added (they have no waiters counted yet).
func TestFullLockTableKeepsTheCurrentDump(t *testing.T) {
	a := NewWithOptions(Options{MaxLocks: 4})
	a.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0, "app.Old", map[string]int{"0x1": 1, "0x2": 1, "0x3": 1, "0x4": 1})})
	a.Add(&snapshot.Snapshot{Dump: monitorDump(t, t0.Add(time.Second), "app.New", map[string]int{"0x5": 2, "0x6": 2, "0x7": 2})})
	s := a.Summary()
	n := 0
	for _, l := range s.Locks {
		if l.Class == "app.New" {
			n++
			assert.Equal(t, 2, l.Waiters)
		}
	}
	assert.Equal(t, 3, n)
}
