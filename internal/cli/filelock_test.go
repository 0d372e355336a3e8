//go:build linux && amd64

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/ctprof/ctprof/internal/testservers"
)

// lockWaiters sweeps /proc/locks, the kernel's own list of file locks and
// of the processes blocked on them ("->" lines), every few milliseconds
// until stop is called, and returns the mean number of blocked waiters on
// each of the inodes asked for.
func lockWaiters(t *testing.T, inodes ...uint64) (stop func() map[uint64]float64) {
	t.Helper()
	sums := map[uint64]int{}
	sweeps := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			b, err := os.ReadFile("/proc/locks")
			if err != nil {
				continue
			}
			sweeps++
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) < 7 || f[1] != "->" {
					continue
				}
				// "1: -> FLOCK ADVISORY WRITE 20640 fe:00:9987323 0 EOF"
				parts := strings.Split(f[6], ":")
				ino, err := strconv.ParseUint(parts[len(parts)-1], 10, 64)
				if err != nil {
					continue
				}
				for _, want := range inodes {
					if ino == want {
						sums[ino]++
					}
				}
			}
		}
	}()
	return func() map[uint64]float64 {
		close(done)
		wg.Wait()
		out := map[uint64]float64{}
		for _, ino := range inodes {
			if sweeps > 0 {
				out[ino] = float64(sums[ino]) / float64(sweeps)
			}
		}
		return out
	}
}

// A server made of processes that queue on file locks (testdata/c/
// file_locks.c: four workers flock one journal, three lockf one ledger,
// each holding its lock for 20 ms): ctprof attach on the parent names one
// resource per wait site, of kind filelock, on one file each, named by its
// path, its holder sleeping out its hold; its average waiters agree with
// the kernel's /proc/locks, swept every 5 ms in the same run, within 25 %;
// and a finding names each.
// Before, a thread in flock or fcntl(F_SETLKW) was "io" and no finding
// told of the queue.
func TestAttachFileLockQueues(t *testing.T) {
	dir := t.TempDir()
	p := testnative.Start(t, "file_locks", "7", dir, "20")
	require.Eventually(t, func() bool { return len(treePIDs(t, p.PID)) == 8 }, 10*time.Second, 10*time.Millisecond)
	inode := func(name string) uint64 {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	journal, ledger := inode("journal"), inode("ledger")
	stop := lockWaiters(t, journal, ledger)
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--duration", "4s", "--interval", "200ms", "--format", "json")
	truth := stop()
	require.Equal(t, 0, code, stderr)
	var doc struct {
		treeAttach
		ContentionSites []struct {
			ID         string   `json:"id"`
			Kind       string   `json:"kind"`
			Instances  int      `json:"instances"`
			AvgWaiters float64  `json:"avg_waiters"`
			Files      []string `json:"files"`
			Holders    []struct {
				Frame string `json:"frame"`
			} `json:"holders"`
		} `json:"contention_sites"`
		Findings []struct {
			Subject string `json:"subject"`
			Summary string `json:"summary"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Greater(t, doc.Samples, 10)
	t.Logf("/proc/locks: journal %.2f, ledger %.2f waiters on average", truth[journal], truth[ledger])
	for _, want := range []struct {
		id, file string
		waiters  float64
	}{
		{"filelock|file_locks|take_journal ← append_entry", filepath.Join(dir, "journal"), truth[journal]},
		{"filelock|file_locks|take_ledger ← post_entry", filepath.Join(dir, "ledger"), truth[ledger]},
	} {
		found := false
		for _, cs := range doc.ContentionSites {
			if cs.ID != want.id {
				continue
			}
			found = true
			assert.Equal(t, "filelock", cs.Kind)
			assert.Equal(t, 1, cs.Instances, "one file at %s", cs.ID)
			assert.Equal(t, []string{want.file}, cs.Files)
			require.Greater(t, want.waiters, 1.0, "the kernel saw a queue on %s", want.file)
			t.Logf("%s: ctprof %.2f waiters on average, /proc/locks %.2f", cs.ID, cs.AvgWaiters, want.waiters)
			assert.InEpsilon(t, want.waiters, cs.AvgWaiters, 0.25, "average waiters at %s against /proc/locks", cs.ID)
			// The holder, a worker of one thread, sleeps out its hold
			// with the file locked.
			if assert.NotEmpty(t, cs.Holders, "the holders /proc/locks named at %s", cs.ID) {
				assert.True(t, strings.HasPrefix(cs.Holders[0].Frame, "in clock_nanosleep"), cs.Holders[0].Frame)
			}
		}
		assert.True(t, found, "a resource %s in %+v", want.id, doc.ContentionSites)
		named := false
		for _, f := range doc.Findings {
			named = named || f.Subject == "resource "+want.id
		}
		assert.True(t, named, "a finding names %s: %+v", want.id, doc.Findings)
	}
	for _, w := range doc.Waits {
		if w.Thread == "file_locks: worker" && w.Verdict == "contention" {
			assert.Contains(t, w.Reason, "queued on a file lock")
		}
	}
}

// PHP-FPM, a real pool of processes nobody here wrote, under ab: eight
// clients of one session, each request holding the session's file locked
// (PHP's session handler flocks it from session_start to the request's
// end). ctprof attach on the master: the top resource is a file lock on
// that session's file, with the pool's children as its waiters and as its
// holders, and its average waiters agree with /proc/locks within 25 %.
func TestAttachPHPSessionLock(t *testing.T) {
	srv := testservers.StartPHPFPM(t, 6)
	srv.StartSessionLoad(t, "ctprof", 8, 60)
	file := filepath.Join(srv.SessionDir, "sess_ctprof")
	var ino uint64
	require.Eventually(t, func() bool {
		fi, err := os.Stat(file)
		if err != nil {
			return false
		}
		ino = fi.Sys().(*syscall.Stat_t).Ino
		b, _ := os.ReadFile("/proc/locks")
		return strings.Contains(string(b), ":"+strconv.FormatUint(ino, 10)+" ")
	}, 30*time.Second, 20*time.Millisecond, "the session's file is locked")
	stop := lockWaiters(t, ino)
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(srv.PID), "--duration", "4s", "--interval", "200ms", "--format", "json")
	truth := stop()[ino]
	require.Equal(t, 0, code, stderr)
	var doc struct {
		treeAttach
		ContentionSites []struct {
			ID         string   `json:"id"`
			Kind       string   `json:"kind"`
			Instances  int      `json:"instances"`
			AvgWaiters float64  `json:"avg_waiters"`
			Pool       string   `json:"pool"`
			Files      []string `json:"files"`
			Holders    []struct {
				Frame   string `json:"frame"`
				Samples int    `json:"samples"`
			} `json:"holders"`
		} `json:"contention_sites"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	t.Logf("/proc/locks: %.2f waiters on average on %s", truth, file)
	require.Greater(t, truth, 1.0, "the kernel saw the requests queue on the session's lock")
	require.NotEmpty(t, doc.ContentionSites, stdout)
	top := doc.ContentionSites[0]
	assert.Equal(t, "filelock", top.Kind, "%+v", doc.ContentionSites)
	assert.True(t, strings.HasPrefix(top.ID, "filelock|php-fpm"), top.ID)
	assert.Equal(t, []string{file}, top.Files)
	assert.Equal(t, 1, top.Instances)
	assert.Equal(t, "php-fpm: pool www", top.Pool)
	t.Logf("%s: ctprof %.2f waiters on average, /proc/locks %.2f", top.ID, top.AvgWaiters, truth)
	assert.InEpsilon(t, truth, top.AvgWaiters, 0.25, "average waiters against /proc/locks")
	assert.NotEmpty(t, top.Holders, "the children that held the session, as /proc/locks named them")
	t.Logf("holders: %+v", top.Holders)
	if assert.NotNil(t, doc.Processes) {
		assert.Equal(t, 7, doc.Processes.Last, "the master and its pool")
	}
	named := false
	for _, f := range doc.Findings {
		if f.Subject == "resource "+top.ID {
			named = true
			assert.Contains(t, f.Summary, "processes", "the pool's children are processes of one thread: %s", f.Summary)
		}
	}
	assert.True(t, named, "a finding names %s", top.ID)
}
