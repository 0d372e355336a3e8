package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// TestAttachJNILocks attaches to a JVM whose Java threads queue on the
// pthread mutexes of a JNI library of their own (testdata/java/JniLocks.java
// over testdata/c/jni_locks.c, built into libjnilocks.so): 4 "jni-worker-N"
// on the library's global jni_global_lock, 3 "jni-heap-N" on a mutex it
// malloc'ed, each holding its lock 5 ms asleep. The jni-heap threads rename
// their OS threads "jnilib-heap", so their Java names come from the dumps
// alone.
//
// ctprof must report both as futex locks: the global one by its symbol in
// libjnilocks.so, the heap one by its mapping and offset (a malloc arena of
// the thread that loaded the library: "anonymous memory+0x…"), each at the
// address the program printed, with its holder read from the mutex and
// named by its Java name, its waiters the workers; and no other futex lock
// (the JVM's own locks, its safepoint barrier). The truth is the test's own:
// a jcmd Thread.print joins tids to Java names (nid), and the waiters' tids
// are those the test saw in /proc/<pid>/task/<tid>/syscall waiting in
// futex(2) on the mutex's address. The waiters' native stacks (the
// sampler's unwinder) put them in the library's function that takes the
// lock, called from the JNI method.
func TestAttachJNILocks(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.Start(t, j, "JniLocks")
			global, heap := lockAddress(t, p, "GLOBAL_LOCK"), lockAddress(t, p, "HEAP_LOCK")

			// The /proc truth, polled while ctprof runs.
			ctx, cancel := context.WithCancel(context.Background())
			waiting := pollFutexWaiters(ctx, p.PID, global, heap)
			var doc map[string]any
			var globalLock, heapLock map[string]any
			// Bounded retries: on a loaded 2-CPU machine one run may
			// see too little (a holder read only between owners, a
			// holder's stack read after it woke up and moved on).
			for attempt := 0; attempt < 3; attempt++ {
				doc, _ = attachJSON(t, strconv.Itoa(p.PID), "--duration", "5s")
				globalLock, heapLock = lockAt(doc, global), lockAt(doc, heap)
				if jniLockSeen(globalLock, "jni_locks_global_section") && jniLockSeen(heapLock, "jni_locks_heap_section") {
					break
				}
				t.Logf("attempt %d saw too little: %v", attempt+1, doc["locks"])
			}
			cancel()
			seen := waiting()
			require.NotNil(t, globalLock, "no lock at jni_global_lock's address 0x%x: %v", global, doc["locks"])
			require.NotNil(t, heapLock, "no lock at the heap mutex's address 0x%x: %v", heap, doc["locks"])
			names := dumpNames(t, p)

			// The global mutex, by its symbol in the library.
			assert.Equal(t, "futex", globalLock["resource"])
			assert.Equal(t, "lock", globalLock["futex_kind"])
			assert.Equal(t, "jni_global_lock", globalLock["class"])
			assert.Equal(t, "libjnilocks.so", globalLock["module"])
			assert.Regexp(t, `^jni_global_lock \(libjnilocks\.so\+0x[0-9a-f]+\)$`, globalLock["symbol"])
			checkJNILock(t, globalLock, "jni-worker", names, seen[global])
			checkJNIStacks(t, globalLock, "jni_locks_global_section", "Java_JniLocks_globalWork")

			// The malloc'ed mutex, by its mapping and the offset in it: the
			// same name at every sample of the run (one address), and no
			// bare address.
			mapping, start := mappingOf(t, p.PID, heap)
			assert.Equal(t, mapping, heapLock["module"])
			assert.Equal(t, fmt.Sprintf("%s+0x%x", mapping, heap-start), heapLock["class"])
			assert.Nil(t, heapLock["addresses"], "the heap mutex kept one address")
			assert.Nil(t, heapLock["symbol"])
			checkJNILock(t, heapLock, "jni-heap", names, seen[heap])
			checkJNIStacks(t, heapLock, "jni_locks_heap_section", "Java_JniLocks_heapWork")
			// Its holder's name is the dump's, not the OS thread's.
			if h, ok := heapLock["holder"].(map[string]any); ok {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", p.PID, int(h["tid"].(float64))))
				assert.Equal(t, "jnilib-heap", strings.TrimSpace(string(comm)), "the heap workers' OS name")
			}

			// No other futex lock: not the JVM's own locks, not its
			// safepoint barrier, not ctprof's dumps.
			for _, l := range doc["locks"].([]any) {
				l := l.(map[string]any)
				if l["resource"] == "futex" {
					assert.Contains(t, []string{fmt.Sprintf("0x%x", global), fmt.Sprintf("0x%x", heap)}, l["address"], "a futex lock of the JVM's: %v", l)
				}
			}
			// The findings name each lock and its holder.
			checkJNIFindings(t, doc, heapLock)

			// The text says the same.
			code, out, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--duration", "3s")
			require.Equal(t, 0, code, errOut)
			assert.Regexp(t, `futex jni_global_lock \(libjnilocks\.so\+0x[0-9a-f]+\) <0x[0-9a-f]+>\s+held by "jni-worker-\d+" \(tid \d+\)`, out)
			assert.Regexp(t, regexp.QuoteMeta("futex "+heapLock["class"].(string))+` <0x[0-9a-f]+>\s+held by "jni-heap-\d+" \(tid \d+\)`, out)
			assert.Regexp(t, `waiters: jni-worker-\d+ \(tid \d+\), jni-worker-\d+`, out)
			assert.Regexp(t, `waiters: jni-heap-\d+ \(tid \d+\), jni-heap-\d+`, out)
			assert.Regexp(t, `wait site: jni_locks_global_section ← Java_JniLocks_globalWork \(\d+ sightings\)`, out)
			assert.Regexp(t, `wait site: jni_locks_heap_section ← Java_JniLocks_heapWork \(\d+ sightings\)`, out)
			if t.Failed() {
				t.Logf("text:\n%s", out)
			}
		})
	}
}

// checkJNILock checks a JNI lock's holder and waiters against the truth:
// Java names by tid from a dump, and the tids /proc showed waiting on it.
func checkJNILock(t *testing.T, l map[string]any, pool string, names map[int]string, waitedOnIt map[int]bool) {
	t.Helper()
	nameRE := regexp.MustCompile(`^` + pool + `-\d+$`)
	assert.GreaterOrEqual(t, l["waiters"], 2.0, "peak waiters")
	assert.GreaterOrEqual(t, l["blocked_share"], 0.5, "waiters in most samples")
	h, ok := l["holder"].(map[string]any)
	if assert.True(t, ok, "no holder: %v", l) {
		tid := int(h["tid"].(float64))
		assert.Equal(t, "mutex", h["lock"])
		assert.Regexp(t, nameRE, h["thread"])
		assert.Equal(t, names[tid], h["thread"], "the holder (tid %d) as the dump names it", tid)
		assert.Equal(t, h["thread"], l["owner"])
		assert.GreaterOrEqual(t, h["samples"], 1.0)
	}
	waiterRE := regexp.MustCompile(`^(\S+) \(tid (\d+)\)$`)
	waiters := l["waiter_threads"].([]any)
	assert.NotEmpty(t, waiters)
	for _, w := range waiters {
		m := waiterRE.FindStringSubmatch(w.(string))
		if !assert.NotNil(t, m, "waiter %q", w) {
			continue
		}
		tid, _ := strconv.Atoi(m[2])
		assert.Regexp(t, nameRE, m[1])
		assert.Equal(t, names[tid], m[1], "waiter tid %d as the dump names it", tid)
		assert.True(t, waitedOnIt[tid], "waiter %s: /proc never showed it in futex(2) on the lock (saw %v)", w, waitedOnIt)
	}
}

// jniLockSeen says a run saw enough of a JNI lock to check: a holder, and
// where the unwound stacks say the waiters and the holder are, section.
func jniLockSeen(l map[string]any, section string) bool {
	if l == nil || l["holder"] == nil || !strings.HasPrefix(fmt.Sprint(l["wait_frame"]), section+" ← ") {
		return false
	}
	h := l["holder"].(map[string]any)
	return h["stack"] == nil || strings.Contains(fmt.Sprint(h["stack"]), section)
}

// checkJNIStacks checks what the waiters' and the holder's native stacks
// (unwound from /proc/<pid>/task/<tid>/syscall and /proc/<pid>/mem) say
// of a JNI lock: the waiters wait in section, the library's function that
// takes the lock, called from the JNI method jni; the holder, when it was
// unwound (blocked in nanosleep inside its critical section), is in
// section too.
func checkJNIStacks(t *testing.T, l map[string]any, section, jni string) {
	t.Helper()
	site := section + " ← " + jni
	assert.Equal(t, site, l["wait_frame"], "the waiters' native wait site")
	frames, _ := l["wait_frames"].([]any)
	sightings := 0.0
	for _, f := range frames {
		f := f.(map[string]any)
		if f["frame"] == site {
			sightings = f["samples"].(float64)
		}
	}
	assert.GreaterOrEqual(t, sightings, 2.0, "sightings of the waiters in %s: %v", site, frames)
	if h, ok := l["holder"].(map[string]any); ok && h["stack"] != nil {
		var stack []string
		for _, f := range h["stack"].([]any) {
			stack = append(stack, f.(string))
		}
		assert.Contains(t, stack, section, "the holder's native stack")
		assert.Contains(t, h["runs"], section, "what the holder runs")
		// It ends where the JNI method returns into Java (compiled or
		// interpreted code no binary holds): the dump has the rest.
		assert.Equal(t, jni, stack[len(stack)-1], "the holder's native stack ends at the JNI method: %v", stack)
	}
}

// checkJNIFindings: one lock-hotspot finding per JNI lock, naming it, the
// waiters' native wait site and its holder; no finding on another futex.
func checkJNIFindings(t *testing.T, doc map[string]any, heapLock map[string]any) {
	t.Helper()
	var global, heap bool
	for _, f := range doc["findings"].([]any) {
		f := f.(map[string]any)
		s := f["summary"].(string)
		switch {
		case strings.Contains(s, "futex jni_global_lock (libjnilocks.so+0x"):
			global = true
			assert.Equal(t, "lock-hotspot", f["kind"])
			assert.Regexp(t, `"jni-worker-\d+" held it`, s)
			assert.Contains(t, s, " in jni_locks_global_section ← Java_JniLocks_globalWork ")
		case strings.Contains(s, "futex "+heapLock["class"].(string)+" "):
			heap = true
			assert.Equal(t, "lock-hotspot", f["kind"])
			assert.Regexp(t, `"jni-heap-\d+" held it`, s)
			assert.Contains(t, s, " in jni_locks_heap_section ← Java_JniLocks_heapWork ")
		default:
			assert.NotContains(t, s, "futex", "a finding on another futex")
			// Queued on a JNI lock, RUNNABLE in Java: not a thread stuck in
			// a loop.
			assert.NotRegexp(t, `RUNNABLE in the same .*JniLocks`, s)
		}
	}
	assert.True(t, global, "no finding on jni_global_lock: %v", doc["findings"])
	assert.True(t, heap, "no finding on the heap mutex: %v", doc["findings"])
}

// lockAddress reads "<key> 0x…" from the scenario's output.
func lockAddress(t *testing.T, p *testjvm.Process, key string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + ` 0x([0-9a-f]+)$`).FindSubmatch(p.Log())
	require.NotNil(t, m, "no %s line in the log", key)
	addr, err := strconv.ParseUint(string(m[1]), 16, 64)
	require.NoError(t, err)
	return addr
}

// lockAt is the summary's lock at addr.
func lockAt(doc map[string]any, addr uint64) map[string]any {
	want := fmt.Sprintf("0x%x", addr)
	for _, l := range doc["locks"].([]any) {
		if l := l.(map[string]any); l["address"] == want {
			return l
		}
	}
	return nil
}

// pollFutexWaiters reads every thread's /proc/<pid>/task/<tid>/syscall
// every 20 ms until ctx ends; the function it returns waits for the poll
// to end and gives, by address, the tids seen in futex(2) (syscall 202 on
// x86-64) on it.
func pollFutexWaiters(ctx context.Context, pid int, addrs ...uint64) func() map[uint64]map[int]bool {
	seen := map[uint64]map[int]bool{}
	for _, a := range addrs {
		seen[a] = map[int]bool{}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		task := fmt.Sprintf("/proc/%d/task", pid)
		for ctx.Err() == nil {
			ents, err := os.ReadDir(task)
			if err != nil {
				return
			}
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(task, e.Name(), "syscall"))
				f := strings.Fields(string(b))
				if err != nil || len(f) < 2 || f[0] != "202" {
					continue
				}
				addr, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
				tid, _ := strconv.Atoi(e.Name())
				if err == nil && seen[addr] != nil {
					seen[addr][tid] = true
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() map[uint64]map[int]bool {
		wg.Wait()
		return seen
	}
}

// dumpNames joins tids to Java names through a jcmd Thread.print: a
// thread's nid is its OS tid (in hex up to JDK 18, in decimal since).
func dumpNames(t *testing.T, p *testjvm.Process) map[int]string {
	t.Helper()
	re := regexp.MustCompile(`^"(.*)" .*\bnid=(0x[0-9a-f]+|[0-9]+)\b`)
	names := map[int]string{}
	sc := bufio.NewScanner(strings.NewReader(string(p.ThreadPrint(t))))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			tid, err := strconv.ParseInt(m[2], 0, 64)
			require.NoError(t, err)
			names[int(tid)] = m[1]
		}
	}
	require.NotEmpty(t, names, "no nid in the dump")
	return names
}

// mappingOf names the mapping of pid that holds addr as ctprof does for
// memory no binary holds ("[heap]", else "anonymous memory"), and gives its
// start.
func mappingOf(t *testing.T, pid int, addr uint64) (string, uint64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		if addr < start || addr >= end {
			continue
		}
		switch {
		case len(f) == 6 && f[5] == "[heap]":
			return "[heap]", start
		case len(f) == 5:
			return "anonymous memory", start
		}
		t.Fatalf("the heap mutex 0x%x lies in %q, not in the C heap", addr, line)
	}
	t.Fatalf("no mapping of pid %d holds 0x%x", pid, addr)
	return "", 0
}
