package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// TestAttachRocksDBThroughJNI attaches to a JVM that reaches a real native
// library through JNI: RocksDB (rocksdbjni from Maven Central, pinned in
// testdata/javalibs/libraries.txt), with 16 writers doing synced puts
// (testdata/javalibs/RocksdbSyncWrites.java). RocksDB's write groups make
// most writers wait, in the library's code, on their own condition
// variables until the group's leader has synced the log; the Java dumps
// show every writer RUNNABLE in the native method put.
//
// The truth is /proc, swept every millisecond by the test while ctprof
// runs: how many of the writers (tids joined to Java names by a jcmd
// dump) are blocked in a futex wait. ctprof must report one native
// resource for those waits, at the library's wait site, with no address
// nor the temporary file's random name in its key, its average waiters
// within 25 % of the sweep's; count the writers there in waits[] and the
// findings, not as stuck; and continue their folded stacks from the Java
// frames into the library's.
//
// ctprof's figure ran 15-20 % under the sweep's (up to 45 % on another
// machine) while it read the writers' waits after each thread dump: the
// dump's safepoint holds a follower that a leader woke on its way back
// from put, and it queues no more, so the write group had drained by
// then. Their waits are read during the sweep now, which the dump does
// not stop (sampler.unwindEarly): over twelve runs, with the database on
// disk and on tmpfs, ctprof's figure was 0.80-1.09 of the sweep's (mean
// 0.97).
func TestAttachRocksDBThroughJNI(t *testing.T) {
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.StartLib(t, j, "RocksdbSyncWrites", "16")
			names := dumpNames(t, p)
			writers := map[int]bool{}
			for tid, name := range names {
				if strings.HasPrefix(name, "writer-") {
					writers[tid] = true
				}
			}
			require.Len(t, writers, 16, "writers in the dump")

			ctx, cancel := context.WithCancel(context.Background())
			sweep := sweepFutexWaits(ctx, p.PID, writers)
			folded := filepath.Join(t.TempDir(), "stacks.folded")
			doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--interval", "250ms", "--duration", "6s", "--folded", folded)
			cancel()
			truth := sweep()
			t.Logf("the sweep: %.2f of 16 writers in a futex wait on average over %d sweeps", truth.average(), truth.sweeps)
			require.Greater(t, truth.sweeps, 100, "sweeps of /proc")
			require.Greater(t, truth.average(), 4.0, "the load made too few writers wait to check anything")

			// The resource: the write group's wait site in the library.
			var top map[string]any
			for _, cs := range doc["contention_sites"].([]any) {
				cs := cs.(map[string]any)
				if cs["native"] != true {
					continue
				}
				// A writer coming back from put while ctprof's own dump
				// holds a safepoint waits in the JVM, not in the library:
				// that is no resource of the program's (it once ranked
				// first, "condition|libjvm.so|SafepointSynchronize::block").
				assert.NotContains(t, cs["id"], "libjvm.so", "a wait of the JVM itself as a native resource")
				if top == nil {
					top = cs
				}
			}
			require.NotNil(t, top, "no native resource: %v", doc["contention_sites"])
			id := top["id"].(string)
			t.Logf("top resource %s: %v waiters on average", id, top["avg_waiters"])
			assert.Equal(t, "condition|librocksdbjni*.so|rocksdb::WriteThread::BlockingAwaitState", id,
				"the key: kind, the library (its temporary file's random digits left out) and its wait site")
			assert.Equal(t, "writer-N", top["pool"])
			assert.InEpsilon(t, truth.average(), top["avg_waiters"], 0.25, "average waiters against the sweep's")
			stack := fmt.Sprint(top["waiter_stack"])
			assert.Contains(t, stack, "Java_org_rocksdb_RocksDB_put", "the waiters' native stack reaches the JNI method")
			for _, w := range top["waiter_threads"].([]any) {
				assert.Regexp(t, `^writer-\d+ \(tid \d+\)$`, w)
			}

			// waits[]: the writers waiting there are contention, at the
			// resource; each was seen by the sweep in a futex wait.
			contended := 0
			for _, w := range doc["waits"].([]any) {
				w := w.(map[string]any)
				tid := int(w["tid"].(float64))
				if !writers[tid] || w["verdict"] != "contention" {
					continue
				}
				contended++
				assert.Equal(t, id, w["resource"], "%v", w)
				assert.Contains(t, w["reason"], "native code", "%v", w)
				assert.True(t, truth.waited[tid], "writer tid %d: contention, yet the sweep never saw it in a futex wait", tid)
			}
			assert.Positive(t, contended, "no writer with a contention verdict in waits[]")

			// Findings: the resource's, and no writer called stuck in put.
			var hotspot bool
			for _, f := range doc["findings"].([]any) {
				f := f.(map[string]any)
				if f["kind"] == "lock-hotspot" && strings.Contains(fmt.Sprint(f["subject"]), "rocksdb::WriteThread::BlockingAwaitState") {
					hotspot = true
					assert.Contains(t, f["summary"], "writer-N")
				}
				if f["kind"] == "stuck-thread" {
					assert.NotContains(t, f["subject"], "RocksDB.put", "writers waiting in the library are not stuck: %v", f)
				}
			}
			assert.True(t, hotspot, "no finding on the write group's wait: %v", doc["findings"])

			// Folded stacks: from the Java frames on into the library's.
			b, err := os.ReadFile(folded)
			require.NoError(t, err)
			var jni bool
			for _, line := range strings.Split(string(b), "\n") {
				i := strings.Index(line, "org.rocksdb.RocksDB.put;Java_org_rocksdb_RocksDB_put")
				if i >= 0 && strings.Contains(line[i:], "rocksdb::WriteThread::BlockingAwaitState") {
					jni = true
					break
				}
			}
			assert.True(t, jni, "no folded stack goes on from RocksDB.put into the library's wait")
		})
	}
}

// futexSweep is what a sweep of /proc saw of some threads' futex waits.
type futexSweep struct {
	sweeps, waits int
	waited        map[int]bool // the threads seen in a futex wait at least once
}

func (s futexSweep) average() float64 {
	if s.sweeps == 0 {
		return 0
	}
	return float64(s.waits) / float64(s.sweeps)
}

// sweepFutexWaits reads /proc/<pid>/task/<tid>/syscall of tids every
// millisecond until ctx ends, counting those blocked in a futex wait
// (FUTEX_WAIT, FUTEX_WAIT_BITSET, private or not) and asleep by their
// stat. A thread woken from its wait shows the futex call in syscall
// until it runs again; with 16 writers on 2 CPUs two or three of them sit
// in the run queue so at any moment, and are not waiting on the library.
func sweepFutexWaits(ctx context.Context, pid int, tids map[int]bool) func() futexSweep {
	var wg sync.WaitGroup
	out := futexSweep{waited: map[int]bool{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			for tid := range tids {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
				f := strings.Fields(string(b))
				if err != nil || len(f) < 3 || f[0] != "202" {
					continue
				}
				op, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
				if err != nil || op&0x7f != 0 && op&0x7f != 9 { // FUTEX_WAIT, FUTEX_WAIT_BITSET
					continue
				}
				st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
				if i := strings.LastIndexByte(string(st), ')'); err == nil && i > 0 && i+2 < len(st) && st[i+2] == 'S' {
					out.waits++
					out.waited[tid] = true
				}
			}
			out.sweeps++
			time.Sleep(time.Millisecond)
		}
	}()
	return func() futexSweep {
		wg.Wait()
		return out
	}
}
