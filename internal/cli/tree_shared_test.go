//go:build linux && amd64

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// A server made of processes whose workers each map one shared memory
// object at an address of their own (testdata/c/shm_convoy.c: a memfd with
// a process-shared mutex in it, mapped by every child after the fork, as
// PostgreSQL's backends attach its dynamic segments) and queue on the
// mutex. The kernel keys their waits on one futex (the object and the
// offset); so must ctprof: one resource of one instance, named by the
// object and the offset, its holder a worker of another process, and as
// many waiters as /proc shows, swept every millisecond beside the attach.
func TestAttachProcessesMappingASegmentApart(t *testing.T) {
	p := testnative.Start(t, "shm_convoy", "5")
	var words map[int]uint64
	require.Eventually(t, func() bool {
		words = shmConvoyWords(t, p.PID)
		return len(words) == 5
	}, 10*time.Second, 10*time.Millisecond, "the workers did not map the segment")
	seen := map[uint64]bool{}
	for _, w := range words {
		seen[w] = true
	}
	require.Len(t, seen, 5, "the workers must map the segment at addresses of their own: %x", words)

	truth := sweepSharedWaiters(words)
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--duration", "3s", "--interval", "200ms", "--format", "json")
	mean, sweeps := truth.stop()
	require.Equal(t, 0, code, stderr)
	var doc struct {
		treeAttach
		Locks []struct {
			Kind       string  `json:"kind"`
			Class      string  `json:"class"`
			Site       string  `json:"site"`
			Owner      *string `json:"owner"`
			AvgWaiters float64 `json:"avg_waiters"`
			Exact      *struct {
				Waits int64 `json:"waits"`
			} `json:"exact_waits"`
		} `json:"locks"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	t.Logf("/proc swept every millisecond: %.2f workers waiting on the mutex on average (%d sweeps)", mean, sweeps)
	for _, s := range doc.ContentionSites {
		t.Logf("resource %s: avg %.2f, %d instance(s)", s.ID, s.AvgWaiters, s.Instances)
	}
	require.Greater(t, sweeps, 500, "the sweep barely ran")
	require.Greater(t, mean, 1.0, "the workers hardly queued: nothing to compare")

	const site = "mutex|shm_convoy|update_shared ← serve_request"
	require.NotEmpty(t, doc.ContentionSites, stdout)
	top := doc.ContentionSites[0]
	assert.Equal(t, site, top.ID)
	assert.Equal(t, 1, top.Instances, "one futex word, whatever address each process maps it at")
	assert.InEpsilon(t, mean, top.AvgWaiters, 0.25, "avg_waiters of %s against /proc's", top.ID)

	const word = "shared memory (file /memfd:shm_convoy (deleted))+0x100"
	var locks int
	for _, l := range doc.Locks {
		if !strings.HasPrefix(l.Class, "shared memory (file /memfd:shm_convoy") {
			continue
		}
		locks++
		assert.Equal(t, word, l.Class, "the lock is named by the object and the offset")
		assert.Equal(t, site, l.Site)
		if assert.NotNil(t, l.Owner, "the mutex's holder, a worker of another process") {
			assert.Equal(t, "shm_convoy: worker", *l.Owner)
		}
		if os.Geteuid() == 0 && assert.NotNil(t, l.Exact, "no exact waits as root") {
			assert.Greater(t, l.Exact.Waits, int64(100), "the kernel's count of the workers' waits on the one word")
		}
	}
	assert.Equal(t, 1, locks, "locks on the segment: %s", stdout)
}

// shmConvoyWords finds, per worker of shm_convoy, the address of the
// mutex's futex word in its own mapping of the segment (struct segment's
// 256-byte header comes first).
func shmConvoyWords(t *testing.T, parent int) map[int]uint64 {
	out := map[int]uint64{}
	for pid := range treePIDs(t, parent) {
		if pid == parent {
			continue
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := sc.Text(); strings.HasSuffix(line, "/memfd:shm_convoy (deleted)") {
				start, err := strconv.ParseUint(line[:strings.IndexByte(line, '-')], 16, 64)
				if err == nil {
					out[pid] = start + 0x100
				}
			}
		}
		f.Close()
	}
	return out
}

// sharedWaiters counts, every millisecond, the workers asleep in futex(2)
// on the mutex's word at their own address.
type sharedWaiters struct {
	done   chan struct{}
	wg     sync.WaitGroup
	sum    int
	sweeps int
}

func sweepSharedWaiters(words map[int]uint64) *sharedWaiters {
	w := &sharedWaiters{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			n := 0
			for pid, word := range words {
				if asleepOnWord(pid, word) {
					n++
				}
			}
			w.sum += n
			w.sweeps++
		}
	}()
	return w
}

func (w *sharedWaiters) stop() (mean float64, sweeps int) {
	close(w.done)
	w.wg.Wait()
	if w.sweeps == 0 {
		return 0, 0
	}
	return float64(w.sum) / float64(w.sweeps), w.sweeps
}

// asleepOnWord reports a single-threaded process asleep in futex(2) on
// word: its syscall file names futex (202) at the word, and its state,
// read right after, is S.
func asleepOnWord(pid int, word uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != "202" {
		return false
	}
	if addr, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64); err != nil || addr != word {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(st)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'S'
}

// A prefork server whose workers retire all the time (testdata/c/
// forked_workers.c churn: each waits on the shared semaphore for 100-300 ms,
// then exits or execs sleep(1), and the parent forks another): processes
// that exit or exec mid-run are normal. The run keeps its length and
// counts every process it sampled; none is reported as unsampleable; the
// waiters of processes gone by the end still make the resource.
func TestAttachTreeWhoseWorkersComeAndGo(t *testing.T) {
	p := testnative.Start(t, "forked_workers", "6", "churn")
	require.Eventually(t, func() bool { return len(treePIDs(t, p.PID)) == 7 }, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--duration", "3s", "--interval", "200ms", "--format", "json")
	took := time.Since(start)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		treeAttach
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.GreaterOrEqual(t, took, 3*time.Second, "the run keeps its promised length")
	assert.GreaterOrEqual(t, doc.Samples, 10, "samples over 3 s at 200 ms")
	if assert.NotNil(t, doc.Processes) {
		t.Logf("%d processes over the run, %d at the end", doc.Processes.Seen, doc.Processes.Last)
		// Some 90 workers start over 3 s (6 of them, living 200 ms on
		// average); a sample every 200 ms finds most of them.
		assert.Greater(t, doc.Processes.Seen, doc.Processes.Last+20, "the processes sampled over the run, the ones gone included")
	}
	for _, w := range doc.Warnings {
		assert.NotContains(t, w, "could not be sampled", "a process that exits or execs is normal")
	}
	require.NotEmpty(t, doc.ContentionSites, stdout)
	assert.Equal(t, "semaphore|forked_workers|take_slot ← serve_request", doc.ContentionSites[0].ID)
	assert.Greater(t, doc.ContentionSites[0].AvgWaiters, 2.0, "the workers wait on the one word through their short lives")
}
