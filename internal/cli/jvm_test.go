package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// These tests start the scenario programs of testdata/java on real JVMs,
// take dumps with the JDK's own jcmd, and check what `ctprof analyze` says.

type summaryDoc struct {
	Dumps   int
	Threads int
	States  map[string]int
	Locks   []struct {
		Kind, Class, Address string
		Owner                *string
		OwnerFrame           *string `json:"owner_frame"`
		OwnerLockFrame       *string `json:"owner_lock_frame"`
		Waiters              int
		WaitFrame            *string  `json:"wait_frame"`
		WaiterThreads        []string `json:"waiter_threads"`
	}
	Deadlocks []struct {
		Threads []string
		Source  string
	}
	Pools []struct {
		Name    string
		Threads int
	}
	Findings []struct{ Kind, Severity, Summary string }
	Warnings []string
}

func analyzeJSON(t *testing.T, dump []byte) summaryDoc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump.txt")
	require.NoError(t, os.WriteFile(path, dump, 0o644))
	code, out, errOut := run(t, "", "analyze", "--format", "json", path)
	require.Equal(t, 0, code, errOut)
	var doc summaryDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	return doc
}

const dumpTimeout = 60 * time.Second

func TestJVMSynchronizedSingleton(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "SyncSingleton", "8")
			dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
				return testjvm.CountLines(d, "- waiting to lock") >= 3
			})
			doc := analyzeJSON(t, dump)
			require.NotEmpty(t, doc.Locks)
			l := doc.Locks[0]
			assert.Equal(t, "monitor", l.Kind)
			assert.Equal(t, "SyncSingleton", l.Class)
			assert.GreaterOrEqual(t, l.Waiters, 3)
			require.NotNil(t, l.Owner, "the monitor's owner is named")
			assert.True(t, strings.HasPrefix(*l.Owner, "request-"), *l.Owner)
			require.NotNil(t, l.OwnerFrame)
			assert.Contains(t, *l.OwnerFrame, "SyncSingleton.handle(")
			require.NotNil(t, l.WaitFrame)
			assert.Contains(t, *l.WaitFrame, "SyncSingleton.handle(")
			for _, w := range l.WaiterThreads {
				assert.True(t, strings.HasPrefix(w, "request-"), w)
				assert.NotEqual(t, *l.Owner, w, "the owner is not its own waiter")
			}
			assert.Equal(t, "lock-hotspot", doc.Findings[0].Kind)
			assert.Contains(t, poolSizes(doc), "request-N")
			assert.Equal(t, 8, poolSizes(doc)["request-N"])
			assert.Empty(t, doc.Warnings)
		})
	}
}

func TestJVMReentrantLockContention(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "LockContention", "8")
			// -l prints "Locked ownable synchronizers", where the owner shows.
			dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
				return testjvm.CountLines(d, "ReentrantLock$NonfairSync)") >= 4 &&
					strings.Contains(string(d), "Locked ownable synchronizers:\n\t- <0x")
			}, "-l")
			doc := analyzeJSON(t, dump)
			require.NotEmpty(t, doc.Locks)
			l := doc.Locks[0]
			assert.Equal(t, "synchronizer", l.Kind)
			assert.Equal(t, "java.util.concurrent.locks.ReentrantLock$NonfairSync", l.Class)
			assert.GreaterOrEqual(t, l.Waiters, 3)
			require.NotNil(t, l.Owner)
			assert.True(t, strings.HasPrefix(*l.Owner, "worker-"), *l.Owner)
			require.NotNil(t, l.WaitFrame)
			assert.Contains(t, *l.WaitFrame, "LockContention.work(", "the first frame outside the JDK")
		})
	}
}

func TestJVMMonitorDeadlock(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "MonitorDeadlock")
			dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
				return strings.Contains(string(d), "Found one Java-level deadlock")
			})
			doc := analyzeJSON(t, dump)
			require.Len(t, doc.Deadlocks, 1)
			assert.ElementsMatch(t, []string{"deadlock-A", "deadlock-B"}, doc.Deadlocks[0].Threads)
			assert.Equal(t, "jvm+ctprof", doc.Deadlocks[0].Source)
			assert.Equal(t, "deadlock", doc.Findings[0].Kind)
			for _, l := range doc.Locks {
				assert.NotContains(t, l.WaiterThreads, "bystander", "a thread in wait() is not contending")
			}
		})
	}
}

func TestJVMReentrantLockCycle(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Parallel()
			p := testjvm.Start(t, jdk, "LockDeadlock")
			dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
				return testjvm.CountLines(d, "ReentrantLock$NonfairSync)") >= 6
			}, "-l")
			doc := analyzeJSON(t, dump)
			require.Len(t, doc.Deadlocks, 1)
			assert.ElementsMatch(t, []string{"cycle-1", "cycle-2", "cycle-3"}, doc.Deadlocks[0].Threads)
			assert.Contains(t, doc.Deadlocks[0].Source, "ctprof")
		})
	}
}

func poolSizes(doc summaryDoc) map[string]int {
	m := map[string]int{}
	for _, p := range doc.Pools {
		m[p.Name] = p.Threads
	}
	return m
}
