package threaddump_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// forgedEntry, forgedClosed and forgedOpen mirror testdata/java/ForgedNames.java.
func forgedEntry(name string, nid int, waits, holds string) string {
	return fmt.Sprintf("\"%s\" #9%d daemon prio=5 os_prio=0 cpu=0.00ms elapsed=1.00s tid=0x00007f0000000001 nid=0x%x waiting for monitor entry  [0x00007f0000000000]\n", name, nid%10, nid) +
		"   java.lang.Thread.State: BLOCKED (on object monitor)\n" +
		"\tat Evil.run(Evil.java:1)\n" +
		"\t- waiting to lock <" + waits + "> (a ForgedNames$X)\n" +
		"\t- locked <" + holds + "> (a ForgedNames$Y)\n"
}

var (
	forgedWaiters = []string{
		"waiter-0",
		"waiter-1\nline two of waiter-1",
		"waiter-2",
		"waiter-3\n\tat Fake.frame(Fake.java:1)\n\t- waiting to lock <0x0000000000000009> (a Fake)",
		"waiter-4",
		"waiter-5\n   java.lang.Thread.State: RUNNABLE",
		"waiter-6",
		"waiter-7\n\"quoted second line",
		"waiter-8",
		"waiter-9",
	}
	forgedHolder = "gate-holder\nsecond line of the holder"
	forgedClosed = "forger-closed\n\n" +
		forgedEntry("evil1", 0x7ffffff0, "0x00000000deadbee0", "0x00000000deadbee8") + "\n" +
		forgedEntry("evil2", 0x7ffffff1, "0x00000000deadbee8", "0x00000000deadbee0") + "\n" +
		"Found one Java-level deadlock:\n" +
		"=============================\n" +
		"\"evil1\":\n" +
		"  waiting to lock monitor 0x00007f0000000010 (object 0x00000000deadbee0, a ForgedNames$X),\n" +
		"  which is held by \"evil2\"\n" +
		"\"evil2\":\n" +
		"  waiting to lock monitor 0x00007f0000000018 (object 0x00000000deadbee8, a ForgedNames$Y),\n" +
		"  which is held by \"evil1\"\n" +
		"\n" +
		"Java stack information for the threads listed above:\n" +
		"===================================================\n" +
		"\n" +
		"Found 1 deadlock.\n" +
		"\n" +
		"end of forger-closed"
	forgedOpen = "forger-open\n\n" +
		forgedEntry("evil3", 0x7ffffff2, "0x00000000deadbef0", "0x00000000deadbef8") + "\n" +
		forgedEntry("evil4", 0x7ffffff3, "0x00000000deadbef8", "0x00000000deadbef0") + "\n" +
		"\"end of forger-open"
)

// isForgedNID says whether nid is one of the forged entries' (no Linux task
// can have it: pid_max is at most 2^22).
func isForgedNID(nid int64) bool { return nid >= 0x7ffffff0 && nid <= 0x7ffffff3 }

// realDeadlocks are the deadlocks of d that analysis may report: the JVM's
// own reports and ctprof's cycles not made of suspect threads only.
func realDeadlocks(d *threaddump.Dump) []string {
	var out []string
	for _, dl := range d.Deadlocks {
		if !dl.Suspect {
			out = append(out, "jvm: "+strings.Join(dl.Threads, ", "))
		}
	}
	for _, c := range d.FindDeadlocks() {
		all := true
		var names []string
		for _, t := range c.Threads {
			all = all && t.Suspect
			names = append(names, t.Name)
		}
		if !all {
			out = append(out, "cycle: "+strings.Join(names, ", "))
		}
	}
	return out
}

// checkGate asserts the ten real waiters and the holder of the gate.
func checkGate(t *testing.T, d *threaddump.Dump) {
	t.Helper()
	byName := map[string]*threaddump.Thread{}
	for i := range d.Threads {
		byName[d.Threads[i].Name] = &d.Threads[i]
	}
	for _, name := range forgedWaiters {
		th := byName[name]
		if assert.NotNil(t, th, "waiter %q missing", name) {
			assert.Equal(t, threaddump.StateBlocked, th.State, name)
			ev, ok := th.BlockedOn()
			assert.True(t, ok, name)
			assert.Equal(t, "ForgedNames$Gate", ev.Lock.Class, name)
			assert.NotZero(t, th.OSThreadID, name)
		}
	}
	if h := byName[forgedHolder]; assert.NotNil(t, h, "holder") {
		assert.Equal(t, "ForgedNames$Gate", h.Holds()[0].Class)
	}
	var gate *threaddump.LockInfo
	for _, li := range d.Locks() {
		if li.Lock.Class == "ForgedNames$Gate" {
			gate = li
		}
	}
	if assert.NotNil(t, gate) {
		assert.Len(t, gate.Waiters, len(forgedWaiters))
		if assert.NotNil(t, gate.Owner) {
			assert.Equal(t, forgedHolder, gate.Owner.Name)
		}
	}
	if c := byName[forgedClosed]; assert.NotNil(t, c, "forger-closed, whole") {
		assert.False(t, c.Suspect)
		assert.Empty(t, c.Locks, "the lock lines in the name are not the thread's")
	}
}

// TestJVMForgedNames reads a real Thread.print of threads whose names hold
// thread entries, lock lines and a deadlock report.
func TestJVMForgedNames(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "ForgedNames")
			raw := p.ThreadPrint(t)
			require.Contains(t, string(raw), "\"evil1\" #9", "the forged entries are in the dump")

			t.Run("offline", func(t *testing.T) {
				d := parseOne(t, raw)
				checkGate(t, d)
				assert.Empty(t, realDeadlocks(d))
				for i := range d.Threads {
					th := &d.Threads[i]
					if isForgedNID(th.OSThreadID) {
						assert.True(t, th.Suspect, "forged entry %q taken as a thread", th.Name)
					}
				}
				// forger-open's end cannot be told from the text: the
				// forged entries stay, as suspects, and that is said.
				assert.True(t, d.HasSuspects())
				joined := strings.Join(d.Warnings, "\n")
				assert.Regexp(t, `the name of the thread at line \d+ spans lines \d+-\d+; the thread entries between are part of it`, joined)
				assert.Regexp(t, `the name of the thread at line \d+ spans lines \d+-\d+ or more; the entries between may be part of it`, joined)
			})

			t.Run("live", func(t *testing.T) {
				tasks := taskSet(t, p.PID)
				dumps, err := threaddump.ParseHotSpot(raw, threaddump.ParseOptions{
					ThreadExists: func(nid int64) bool { return tasks[nid] },
					JavaThreads:  1,
				})
				require.NoError(t, err)
				require.Len(t, dumps, 1)
				d := dumps[0]
				checkGate(t, d)
				assert.Empty(t, realDeadlocks(d))
				assert.False(t, d.HasSuspects())
				names := map[string]bool{}
				for i := range d.Threads {
					th := &d.Threads[i]
					assert.False(t, isForgedNID(th.OSThreadID), "forged entry %q taken as a thread", th.Name)
					assert.True(t, tasks[th.OSThreadID], "%q: nid %d is no task", th.Name, th.OSThreadID)
					names[th.Name] = true
				}
				assert.True(t, names[forgedOpen], "forger-open, whole")
				joined := strings.Join(d.Warnings, "\n")
				assert.Contains(t, joined, "the thread entries in it name no thread of the process")
				assert.Contains(t, joined, "Java threads but the JVM counts 1 live")
			})
		})
	}
}

// taskSet lists /proc/<pid>/task.
func taskSet(t *testing.T, pid int) map[int64]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	require.NoError(t, err)
	out := map[int64]bool{}
	for _, e := range ents {
		n, err := strconv.ParseInt(e.Name(), 10, 64)
		if err == nil {
			out[n] = true
		}
	}
	return out
}
