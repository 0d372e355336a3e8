//go:build linux && amd64

package cli

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testservers"
)

// ctprof attach on Debian's MariaDB (stripped: InnoDB's code has no
// symbol, only module+offset) under sysbench's oltp_write_only: 32
// clients over the Unix socket on a table of 16 rows, so most
// transactions queue on row locks. A row-lock wait is
// pthread_cond_timedwait on the waiting transaction's own condition
// (trx->lock.cond), called from InnoDB's lock_wait: many addresses, one
// resource. The test checks ctprof's resources against the server's own
// count of row-lock waiters, read beside it every 50 ms, and against
// /proc/<pid>/task/*/syscall read every millisecond; then restarts the
// server and checks the resource keeps its name (it holds no address).
//
// The truth is Innodb_row_lock_current_waits, not INNODB_TRX: that table
// is a cache refreshed only when nobody read it for 100 ms, so read every
// 50 ms it never changes.
func TestAttachMariaDB(t *testing.T) {
	tools := testservers.FindMariaDB(t)
	dir := t.TempDir()
	tools.Install(t, dir)

	srv := tools.Start(t, dir)
	tools.SQL(t, srv.Sock, "CREATE DATABASE sbtest")
	tools.PrepareSysbench(t, srv.Sock)
	first := loadAndAttach(t, tools, srv, true)
	srv.Stop(t)

	// The same datadir, a new process: every runtime address moves.
	srv2 := tools.Start(t, dir)
	require.NotEqual(t, srv.PID, srv2.PID)
	second := loadAndAttach(t, tools, srv2, false)

	for i, r := range []mariadbRound{first, second} {
		checkMariaDBRound(t, i+1, r)
	}
	if len(first.doc.ContentionSites) > 0 && len(second.doc.ContentionSites) > 0 {
		assert.Equal(t, first.doc.ContentionSites[0].ID, second.doc.ContentionSites[0].ID,
			"the top resource's id changed across a restart of mariadbd")
	}
}

// mariadbRound is one load-and-attach: what ctprof said and what the
// server and /proc said beside it.
type mariadbRound struct {
	pid   int
	sock  string
	doc   mariadbAttach
	truth testservers.RowLockWindow
	// futex is /proc's view (first round only): threads seen blocked in
	// futex(2), by address.
	futex map[uint64]map[int]bool
}

// mariadbAttach is what this test reads of ctprof's JSON.
type mariadbAttach struct {
	Samples         int           `json:"samples"`
	ContentionSites []mariadbSite `json:"contention_sites"`
	Waits           []mariadbWait `json:"waits"`
	Connections     *struct {
		Established int            `json:"established"`
		ByPath      map[string]int `json:"by_path"`
	} `json:"connections"`
}

type mariadbSite struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Class      string  `json:"class"`
	WaitFrame  string  `json:"wait_frame"`
	AvgWaiters float64 `json:"avg_waiters"`
	Waiters    int     `json:"waiters"`
}

type mariadbWait struct {
	TID      int64  `json:"tid"`
	Verdict  string `json:"verdict"`
	Resource string `json:"resource"`
	Frame    string `json:"frame"`
	Reason   string `json:"reason"`
}

// runtimeAddress is a hex number too long for an offset in a binary: an
// address of this run (heap, mappings, stacks), which a restart moves.
var runtimeAddress = regexp.MustCompile(`0x[0-9a-fA-F]{9,}`)

// checkMariaDBRound asserts what ctprof said in round n against the truth.
func checkMariaDBRound(t *testing.T, n int, r mariadbRound) {
	t.Helper()
	d := r.doc
	require.NotEmpty(t, d.ContentionSites, "round %d: no contention site while the server counted %.1f row-lock waiters on average", n, r.truth.Mean)
	top := d.ContentionSites[0]

	// (1) The top resource is the row-lock wait: a condition, in
	// mariadbd's code, with as many waiters as InnoDB counts.
	assert.Equal(t, "condition", top.Kind, "round %d: the top resource %s", n, top.ID)
	assert.Equal(t, "mariadbd", top.Class, "round %d: the top resource's module", n)
	assert.InEpsilon(t, r.truth.Mean, top.AvgWaiters, 0.25,
		"round %d: avg_waiters of %s against Innodb_row_lock_current_waits (mean of %d reads)", n, top.ID, r.truth.Reads)

	// (2) Its key holds no address of this run.
	assert.NotRegexp(t, runtimeAddress, top.ID, "round %d: the top resource's id", n)
	assert.NotRegexp(t, runtimeAddress, top.WaitFrame, "round %d: the top resource's wait frame", n)
	assert.NotEmpty(t, top.WaitFrame, "round %d: the top resource has no wait frame", n)

	// (3) The threads ctprof calls contention on it at its last sample,
	// against the server's count at the end of the attach.
	verdicts := map[string]int{}
	var onTop []mariadbWait
	for _, w := range d.Waits {
		verdicts[w.Verdict]++
		if w.Verdict == "contention" && w.Resource == top.ID {
			onTop = append(onTop, w)
		}
	}
	t.Logf("round %d: waits[] verdicts %v; %d contention on the top resource", n, verdicts, len(onTop))
	for i, w := range onTop {
		if i == 3 {
			break
		}
		t.Logf("round %d:   tid %d at %s (%s)", n, w.TID, w.Frame, w.Reason)
	}
	// One instant against reads up to 50 ms away, while the server starts
	// and ends some 2,500 row-lock waits a second: the server's count is
	// the mean of its reads over the last half second, and 2 threads more
	// are allowed to have moved in between.
	tol := 0.25*r.truth.Recent + 2
	assert.InDelta(t, r.truth.Recent, float64(len(onTop)), tol,
		"round %d: threads in contention on %s at the last sample, against the server's count over its last half second", n, top.ID)
	// The waiters were really blocked in futex(2): /proc saw each there.
	if r.futex != nil {
		seen := map[int]bool{}
		for _, tids := range r.futex {
			for tid := range tids {
				seen[tid] = true
			}
		}
		for _, w := range onTop {
			assert.True(t, seen[int(w.TID)], "round %d: tid %d waits on %s, but /proc never saw it in futex", n, w.TID, top.ID)
		}
	}

	// (4) Clients on the Unix socket are clients: 32 of sysbench's and
	// the truth's own.
	if assert.NotNil(t, d.Connections, "round %d: no connections in the summary", n) {
		assert.GreaterOrEqual(t, d.Connections.Established, 30, "round %d: established connections (32 sysbench clients on %s)", n, r.sock)
		assert.GreaterOrEqual(t, d.Connections.ByPath[r.sock], 30, "round %d: connections on the socket %s: %v", n, r.sock, d.Connections.ByPath)
	}
}

// loadAndAttach loads the server with sysbench until its row-lock waits
// queue, runs ctprof attach for 5 s beside the truth, and stops the load.
func loadAndAttach(t *testing.T, tools testservers.MariaDBTools, srv *testservers.MariaDB, watchProc bool) mariadbRound {
	t.Helper()
	truth := tools.WatchRowLocks(t, srv.Sock)
	load := tools.StartSysbench(t, srv.Sock, 20)
	// Transactions queue within a second on a quiet machine; a loaded one
	// (CI) may take longer to start 32 clients.
	truth.WaitQueued(t, load, 8)
	var futex *futexTruth
	if watchProc {
		futex = watchFutexes(t, srv.PID)
	}

	from := time.Now()
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(srv.PID), "--duration", "5s", "--interval", "50ms", "--format", "json")
	to := time.Now()
	require.Equal(t, 0, code, stderr)
	r := mariadbRound{pid: srv.PID, sock: srv.Sock}
	if futex != nil {
		futex.stop()
		r.futex = futex.futex
		t.Logf("/proc/%d/task/*/syscall: %d sweeps, futex waits on %d addresses", srv.PID, futex.sweeps, len(futex.futex))
	}
	r.truth = truth.Window(from, to)
	truth.Stop()
	load.Stop()
	require.NoError(t, json.Unmarshal([]byte(stdout), &r.doc))

	t.Logf("pid %d: Innodb_row_lock_current_waits over the attach: mean %.1f of %d reads (min %v, max %v, last %v, last half second %.1f), %.1f ms a read; Innodb_row_lock_time rate %.1f waiters",
		srv.PID, r.truth.Mean, r.truth.Reads, r.truth.Min, r.truth.Max, r.truth.Last, r.truth.Recent, r.truth.ReadMS, r.truth.TimeRate)
	t.Logf("pid %d: ctprof: %d samples, %d contention sites", srv.PID, r.doc.Samples, len(r.doc.ContentionSites))
	for i, s := range r.doc.ContentionSites {
		if i == 5 {
			break
		}
		t.Logf("  site %d: %s kind %s class %s avg %.2f peak %d at %s", i+1, s.ID, s.Kind, s.Class, s.AvgWaiters, s.Waiters, s.WaitFrame)
	}
	if c := r.doc.Connections; c != nil {
		t.Logf("  connections: %d established, by path %v", c.Established, c.ByPath)
	}
	return r
}
