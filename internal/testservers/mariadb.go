//go:build linux && amd64

package testservers

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// MariaDB (Debian's mariadbd, stripped: InnoDB's code has no symbol, only
// module+offset) under sysbench's oltp_write_only: 32 clients over the Unix
// socket on a table of 16 rows, so most transactions queue on row locks. A
// row-lock wait is pthread_cond_timedwait on the waiting transaction's own
// condition (trx->lock.cond), called from InnoDB's lock_wait: many
// addresses, one resource. The server counts those waiters itself
// (Innodb_row_lock_current_waits), read beside it every 50 ms.

// StartMariaDB installs a private MariaDB in a temporary directory, starts
// it on a Unix socket only, loads it with sysbench until at least 8
// transactions queue on row locks, and returns it with its labels.
func StartMariaDB(t testing.TB) *Server {
	t.Helper()
	tools := FindMariaDB(t)
	dir := t.TempDir()
	tools.Install(t, dir)
	db := tools.Start(t, dir)
	tools.SQL(t, db.Sock, "CREATE DATABASE sbtest")
	tools.PrepareSysbench(t, db.Sock)
	watch := tools.WatchRowLocks(t, db.Sock)
	// Ten minutes bound the load if the test outlives its cleanup.
	load := tools.StartSysbench(t, db.Sock, 600)
	watch.WaitQueued(t, load, 8)
	return &Server{
		Name:       "mariadb",
		PID:        db.PID,
		Lang:       "C++",
		Shape:      "thread per connection, with a task pool",
		Label:      mariadbLabel(db.PID),
		TopSite:    mariadbRowLockSite,
		TopWaiters: watch.MeanSinceLast,
		Notes: "Connection threads queued on a row lock (InnoDB's lock_wait, a condition per transaction) are contention, " +
			"and so is every other futex wait inside a command (InnoDB latches through syscall(2), lock_sys.wait_mutex re-acquired " +
			"after a grant, the commit's mutexes, the wait for the redo log before the OK packet goes out): each waits for another " +
			"thread. A connection thread polling its client's socket between commands (vio_io_wait) is io, not idle: the wait model " +
			"calls a read on one descriptor io. The thread cache's wait for a new connection, tpool workers in wait_for_tasks, the " +
			"listener, the signal, manager and timer threads and InnoDB's and Aria's background threads waiting for their next " +
			"period are idle. Without a stack, a poll is the listener's (the main thread) or a connection's (io); a futex is unknown.",
	}
}

// mariadbRowLockSite matches the row-lock wait's site: the return address
// into InnoDB's lock_wait (and its caller row_search_mvcc) in Debian 12's
// stripped mariadbd 10.11, or their names where debug symbols are
// installed.
var mariadbRowLockSite = regexp.MustCompile(`^(mariadbd\+0xd5b024|lock_wait\b)`)

// MariaDBTools holds the paths of the programs a MariaDB test runs.
type MariaDBTools struct {
	Server, Installer, Client, Sysbench string
}

// FindMariaDB finds MariaDB's server, installer and client and sysbench,
// or fails saying which Debian package installs them.
func FindMariaDB(t testing.TB) MariaDBTools {
	t.Helper()
	look := func(name, pkg string) string {
		for _, dir := range []string{"", "/usr/sbin/", "/usr/local/sbin/"} {
			if p, err := exec.LookPath(dir + name); err == nil {
				return p
			}
		}
		t.Fatalf("%s is not installed: apt-get install %s (scripts/deps.sh installs it)", name, pkg)
		return ""
	}
	return MariaDBTools{
		Server:    look("mariadbd", "mariadb-server"),
		Installer: look("mariadb-install-db", "mariadb-server"),
		Client:    look("mariadb", "mariadb-client"),
		Sysbench:  look("sysbench", "sysbench"),
	}
}

// mariadbUser is --user for the server and installer: mariadbd refuses to
// run as root unless told to.
func mariadbUser() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// Install creates an empty datadir under dir, whose root logs in without a
// password over the socket (no unix_socket plugin: the test may run as
// root or not). A small redo log keeps it at 34 MB and 2 s.
func (m MariaDBTools) Install(t testing.TB, dir string) {
	t.Helper()
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--innodb-log-file-size=16M", "--innodb-buffer-pool-size=64M"}, mariadbUser()...)
	out, err := exec.Command(m.Installer, args...).CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
}

// MariaDB is a mariadbd a test started.
type MariaDB struct {
	PID  int
	Sock string
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncBuffer
}

// Start starts mariadbd on dir's datadir, listening on a Unix socket only,
// waits until it accepts a connection and kills it by its pid when the
// test ends.
func (m MariaDBTools) Start(t testing.TB, dir string) *MariaDB {
	t.Helper()
	sock := filepath.Join(dir, "sock")
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"),
		"--socket=" + sock, "--skip-networking", "--pid-file=" + filepath.Join(dir, "pid"),
		"--innodb-log-file-size=16M", "--innodb-buffer-pool-size=64M",
		// Row-lock waits end by grant or deadlock, never by timeout,
		// within a run.
		"--innodb-lock-wait-timeout=50",
		"--log-error=" + filepath.Join(dir, "err.log")}, mariadbUser()...)
	cmd := exec.Command(m.Server, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &MariaDB{Sock: sock, cmd: cmd, done: make(chan struct{}), out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	p.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our child: its pid is ours until reaped
		<-p.done
	})
	errLog := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "err.log"))
		return p.out.String() + string(b)
	}
	// InnoDB's recovery and startup take 1-2 s here, longer on a loaded
	// machine.
	deadline := time.Now().Add(45 * time.Second)
	for {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("mariadbd exited: %s", errLog())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "mariadbd did not accept connections on %s: %v; %s", sock, err, errLog())
	}
}

// Stop shuts the server down cleanly (SIGTERM), so the next start needs
// no crash recovery; killed if it takes too long.
func (p *MariaDB) Stop(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Logf("mariadbd %d did not shut down within 30 s; killed", p.PID)
	}
}

// SQL runs one statement with the mariadb client over sock.
func (m MariaDBTools) SQL(t testing.TB, sock, sql string) {
	t.Helper()
	out, err := exec.Command(m.Client, "--no-defaults", "--socket="+sock, "-uroot", "-e", sql).CombinedOutput()
	require.NoError(t, err, "mariadb -e %q: %s", sql, out)
}

// sysbenchArgs is the load: oltp_write_only's transactions (two updates, a
// delete and an insert of random rows) on 16 rows, so that nearly every
// transaction waits for another's row locks.
func sysbenchArgs(sock string) []string {
	return []string{"oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + sock, "--mysql-user=root",
		"--mysql-db=sbtest", "--tables=1", "--table-size=16", "--rand-type=uniform"}
}

// PrepareSysbench creates sysbench's table in the database sbtest.
func (m MariaDBTools) PrepareSysbench(t testing.TB, sock string) {
	t.Helper()
	out, err := exec.Command(m.Sysbench, append(sysbenchArgs(sock), "prepare")...).CombinedOutput()
	require.NoError(t, err, "sysbench prepare: %s", out)
}

// Load is a load generator's run a test started (sysbench, pgbench, ab).
type Load struct {
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncBuffer
}

// startLoad starts cmd, killed when the test ends.
func startLoad(t testing.TB, cmd *exec.Cmd) *Load {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s := &Load{cmd: cmd, done: make(chan struct{}), out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the run (and is a no-op after it ended).
func (s *Load) Stop() {
	_ = s.cmd.Process.Kill() // our child: its pid is ours until reaped
	<-s.done
}

// Done is closed when the run ended.
func (s *Load) Done() <-chan struct{} { return s.done }

// Output is what the load generator printed so far.
func (s *Load) Output() string { return s.out.String() }

// StartSysbench runs 32 clients for at most seconds (a bound if the test
// is stopped before it stops them); killed when the test ends.
func (m MariaDBTools) StartSysbench(t testing.TB, sock string, seconds int) *Load {
	t.Helper()
	args := append(sysbenchArgs(sock), "--threads=32", "--time="+strconv.Itoa(seconds), "run")
	return startLoad(t, exec.Command(m.Sysbench, args...))
}

// rowLockRead is one read of the server's row-lock counters.
type rowLockRead struct {
	at       time.Time // the middle of the query
	waits    float64   // Innodb_row_lock_current_waits
	waitedMS float64   // Innodb_row_lock_time: ms waited by ended waits
	took     time.Duration
}

// RowLockWatch reads a server's row-lock counters every 50 ms over one
// client connection (a client kept open: a new one per read would cost
// the server a login each time). Its query answers one line of two
// numbers: the transactions waiting for a row lock now, and the
// milliseconds waited so far by ended waits (0 where the server keeps no
// such count).
//
// MariaDB's truth is Innodb_row_lock_current_waits, not INNODB_TRX: that
// table is a cache refreshed only when nobody read it for 100 ms, so read
// every 50 ms it never changes.
type RowLockWatch struct {
	mu     sync.Mutex
	reads  []rowLockRead
	taken  int // reads MeanSinceLast has used
	query  string
	client *exec.Cmd
	done   chan struct{}
	quit   chan struct{}
}

const rowLockQuery = "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_ROW_LOCK_CURRENT_WAITS'), " +
	"(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_ROW_LOCK_TIME');\n"

// WatchRowLocks starts reading the row-lock counters over sock until
// stopped (at the latest when the test ends).
func (m MariaDBTools) WatchRowLocks(t testing.TB, sock string) *RowLockWatch {
	t.Helper()
	cmd := exec.Command(m.Client, "--no-defaults", "--socket="+sock, "-uroot", "-N", "-B", "--unbuffered")
	return watchRowLocks(t, cmd, rowLockQuery)
}

// watchRowLocks starts a client that reads query from its stdin and
// answers a line for each.
func watchRowLocks(t testing.TB, cmd *exec.Cmd, query string) *RowLockWatch {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	w := &RowLockWatch{client: cmd, query: query, done: make(chan struct{}), quit: make(chan struct{})}
	t.Cleanup(w.Stop)
	go w.loop(stdin, bufio.NewReader(stdout))
	return w
}

func (w *RowLockWatch) loop(in io.WriteCloser, out *bufio.Reader) {
	defer close(w.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		start := time.Now()
		if _, err := io.WriteString(in, w.query); err != nil {
			return
		}
		line, err := out.ReadString('\n')
		if err != nil {
			return
		}
		took := time.Since(start)
		f := strings.Fields(line)
		if len(f) == 2 {
			waits, err1 := strconv.ParseFloat(f[0], 64)
			ms, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil {
				w.mu.Lock()
				w.reads = append(w.reads, rowLockRead{at: start.Add(took / 2), waits: waits, waitedMS: ms, took: took})
				w.mu.Unlock()
			}
		}
		select {
		case <-w.quit:
			_ = in.Close()
			return
		case <-tick.C:
		}
	}
}

// Latest is the last count read (-1 before the first).
func (w *RowLockWatch) Latest() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reads) == 0 {
		return -1
	}
	return w.reads[len(w.reads)-1].waits
}

// MeanSinceLast is the mean of the counts read since its previous call
// (since the watch started, the first time); the last count when no read
// came in between.
func (w *RowLockWatch) MeanSinceLast() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reads) == 0 {
		return 0
	}
	from := w.taken
	if from == len(w.reads) {
		from--
	}
	var sum float64
	for _, r := range w.reads[from:] {
		sum += r.waits
	}
	w.taken = len(w.reads)
	return sum / float64(len(w.reads)-from)
}

// WaitQueued waits until the load queued at least n transactions on row
// locks; fails if the load ends first or it takes 30 s (a loaded machine
// may take that long to start 32 clients).
func (w *RowLockWatch) WaitQueued(t testing.TB, load *Load, n float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for w.Latest() < n {
		select {
		case <-load.Done():
			t.Fatalf("the load generator ended before the load queued: %s", load.Output())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the load never queued %v transactions on row locks (last count %v): %s", n, w.Latest(), load.Output())
	}
}

// Stop ends the watch.
func (w *RowLockWatch) Stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	// Our child; killing it also ends a read the server never answers.
	_ = w.client.Process.Kill()
	<-w.done
	_ = w.client.Wait()
}

// RowLockWindow is the server's count over a window of time.
type RowLockWindow struct {
	Reads      int
	Mean, Last float64
	Min, Max   float64
	Recent     float64 // the mean over the last half second
	ReadMS     float64 // mean duration of a read
	TimeRate   float64 // Innodb_row_lock_time's growth per ms: waiters, by Little's law
}

// Window summarises the reads taken between from and to.
func (w *RowLockWatch) Window(from, to time.Time) RowLockWindow {
	w.mu.Lock()
	defer w.mu.Unlock()
	var in []rowLockRead
	for _, r := range w.reads {
		if !r.at.Before(from) && !r.at.After(to) {
			in = append(in, r)
		}
	}
	var win RowLockWindow
	if len(in) == 0 {
		return win
	}
	vals := make([]float64, len(in))
	var sum float64
	var took time.Duration
	for i, r := range in {
		vals[i] = r.waits
		sum += r.waits
		took += r.took
	}
	sort.Float64s(vals)
	first, last := in[0], in[len(in)-1]
	win = RowLockWindow{Reads: len(in), Mean: sum / float64(len(in)), Last: last.waits, Min: vals[0], Max: vals[len(vals)-1],
		ReadMS: float64(took.Microseconds()) / 1000 / float64(len(in))}
	var recent, nRecent float64
	for _, r := range in {
		if last.at.Sub(r.at) <= 500*time.Millisecond {
			recent += r.waits
			nRecent++
		}
	}
	win.Recent = recent / nRecent
	if span := last.at.Sub(first.at); span > 0 {
		win.TimeRate = (last.waitedMS - first.waitedMS) / (float64(span.Microseconds()) / 1000)
	}
	return win
}

// syncBuffer is an io.Writer several goroutines may write to (a child's
// stdout and stderr).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Roles of mariadbd's threads, by the frames that name them. Debian's
// mariadbd exports its C and C++ API (so the server's own functions have
// names) but not InnoDB's or Aria's code: their background threads are
// named by the return address into their start routine, module+offset of
// Debian 12's 10.11 build (see /tmp/native-stacks/README.txt's evidence
// in the test's history: gdb and ctprof agree on these).
var (
	// mariadbRowLockWait is the return address into InnoDB's lock_wait
	// from its pthread_cond_timedwait on trx->lock.cond.
	mariadbRowLockWait = moduleOffset{"mariadbd", 0xd5b024}
	// mariadbIdleBackground are the start routines of background threads
	// that wait on a condition for their next period: buf_flush_page_cleaner,
	// mysys's thr_timer, Aria's checkpoint and background thread.
	mariadbIdleBackground = map[moduleOffset]string{
		{"mariadbd", 0xe2d6c2}: "InnoDB page cleaner waiting for its next period",
		{"mariadbd", 0xe2dbcf}: "InnoDB page cleaner waiting for its next period", // its timed wait between batches
		{"mariadbd", 0xefef8d}: "timer thread waiting for its next trigger",
		{"mariadbd", 0xc1f59d}: "Aria background thread waiting for its next period",
	}
	// mariadbIdleLoops are the exported start routines of threads that
	// wait for their next event: signals, the manager's requests, the
	// listener's connections, the deadlock handler's requests.
	mariadbIdleLoops = map[string]string{
		"signal_hand":                "signal handler waiting for a signal",
		"handle_manager":             "manager thread waiting for a request",
		"slave_deadlock_handler":     "deadlock handler thread waiting for a request",
		"handle_connections_sockets": "listener waiting for a connection",
	}
)

// mariadbLabel labels mariadbd's threads (pid is the main thread, the
// listener).
//
// Under this load a row-lock waiter is granted and queues again every few
// milliseconds, so its stack is often not unwound (it moved while it was
// read). A thread blocked on the same futex word at the same stack
// pointer and program counter as when its stack was last labelled is in
// the same wait (a connection's transaction, and its condition, live as
// long as the connection): it keeps that label.
func mariadbLabel(pid int) func(t *procfs.Thread) Label {
	var mu sync.Mutex
	known := map[mariadbWaitKey]Label{}
	return func(t *procfs.Thread) Label {
		if t.State == 'R' {
			return Label{Running, "running"}
		}
		key := mariadbWaitKey{t.TID, t.Syscall, t.SyscallArgs[0], t.SyscallSP, t.SyscallPC}
		mu.Lock()
		defer mu.Unlock()
		if t.Stack == nil {
			if l, ok := known[key]; ok && t.Syscall == sysFutex {
				return l
			}
			return mariadbBySyscall(pid, t)
		}
		l := mariadbByStack(t)
		if l.Verdict != "" && t.Syscall == sysFutex {
			known[key] = l
		}
		return l
	}
}

// mariadbWaitKey is where a thread waits: its system call's first
// argument (a futex word), its stack pointer and program counter.
type mariadbWaitKey struct {
	tid, syscall int
	arg0, sp, pc uint64
}

// mariadbByStack labels a thread by its unwound stack.
func mariadbByStack(t *procfs.Thread) Label {
	st := t.Stack
	for _, f := range st {
		if role, ok := mariadbIdleLoops[funcName(f)]; ok {
			return Label{Idle, role}
		}
	}
	switch {
	case stackHas(st, "handle_one_connection", "do_handle_one_connection"):
		return mariadbConnection(t)
	case stackHas(st, "vio_io_wait"):
		// Only connection threads wait on a socket through vio; the
		// unwinder loses the frames below it (poll ← vio_io_wait ←
		// "Protocol::net_send_ok", a wrong name, and no more).
		return Label{IO, "connection thread waiting for its client"}
	case stackHas(st, "tpool::thread_pool_generic::wait_for_tasks"):
		return Label{Idle, "tpool worker waiting for a task"}
	case stackHas(st, "tpool::thread_pool_generic::worker_main"):
		if t.Syscall == sysFutex {
			return Label{Contention, "tpool task waiting for another thread"}
		}
		return Label{IO, "tpool task's I/O"}
	case t.Syscall == sysIOUringEnter:
		return Label{Idle, "InnoDB AIO thread waiting for completions"}
	}
	if t.Syscall == sysFutex || t.Syscall == sysRestartSyscall {
		for _, f := range st {
			if role, ok := mariadbIdleBackground[offsetOf(f)]; ok {
				return Label{Idle, role}
			}
		}
	}
	return Label{}
}

// mariadbConnection labels a connection thread (handle_one_connection).
func mariadbConnection(t *procfs.Thread) Label {
	st := t.Stack
	switch t.Syscall {
	case sysPoll, sysPpoll:
		// vio_io_wait: the socket has nothing to read yet (between
		// commands), or no room to write.
		return Label{IO, "connection thread waiting for its client"}
	case sysRead, sysRecvfrom, sysWrite, sysSendto, sysSendmsg, sysRecvmsg:
		return Label{IO, "connection thread's socket I/O"}
	case sysFutex:
	default:
		return Label{IO, "connection thread's I/O"}
	}
	if !stackHas(st, "dispatch_command", "do_command") {
		// cache_thread(), inlined into do_handle_one_connection: the
		// thread waits for a new connection to serve.
		return Label{Idle, "thread cache waiting for a new connection"}
	}
	if !stackHas(st, "dispatch_command") {
		return Label{}
	}
	// Inside a command, any futex wait waits for another thread.
	switch {
	case stackHasOffset(st, mariadbRowLockWait) || stackHas(st, "lock_wait"):
		return Label{Contention, "row-lock wait"}
	case funcName(st[0]) == "syscall":
		return Label{Contention, "InnoDB latch (raw futex)"}
	case stackHas(st, "net_real_write"):
		return Label{Contention, "waiting for the redo log before the reply"}
	case stackHas(st, "ha_commit_trans", "trans_commit"):
		return Label{Contention, "commit waiting for a mutex"}
	}
	return Label{Contention, "futex wait inside a command"}
}

// mariadbBySyscall labels a thread whose stack was not unwound, where its
// system call alone says its role.
func mariadbBySyscall(pid int, t *procfs.Thread) Label {
	switch t.Syscall {
	case sysPoll, sysPpoll:
		if t.TID == pid {
			return Label{Idle, "listener waiting for a connection"}
		}
		// Only connection threads poll besides the listener: vio_io_wait
		// on their socket.
		return Label{IO, "connection thread waiting for its client"}
	case sysIOUringEnter:
		return Label{Idle, "InnoDB AIO thread waiting for completions"}
	case sysRtSigtimedwait:
		return Label{Idle, "signal handler waiting for a signal"}
	}
	return Label{}
}

// System calls the rules of this package's servers read (amd64, which the
// servers' module offsets are of too).
const (
	sysFutex          = unix.SYS_FUTEX
	sysPoll           = unix.SYS_POLL
	sysPpoll          = unix.SYS_PPOLL
	sysRead           = unix.SYS_READ
	sysWrite          = unix.SYS_WRITE
	sysRecvfrom       = unix.SYS_RECVFROM
	sysSendto         = unix.SYS_SENDTO
	sysRecvmsg        = unix.SYS_RECVMSG
	sysSendmsg        = unix.SYS_SENDMSG
	sysEpollWait      = unix.SYS_EPOLL_WAIT
	sysEpollPwait     = unix.SYS_EPOLL_PWAIT
	sysIOUringEnter   = unix.SYS_IO_URING_ENTER
	sysRtSigtimedwait = unix.SYS_RT_SIGTIMEDWAIT
	sysNanosleep      = unix.SYS_NANOSLEEP
	sysClockNanosleep = unix.SYS_CLOCK_NANOSLEEP
	sysFsync          = unix.SYS_FSYNC
	sysFdatasync      = unix.SYS_FDATASYNC
	// A system call a debugger's attach interrupted, being restarted.
	sysRestartSyscall = unix.SYS_RESTART_SYSCALL
)

// funcName is a frame's function without its parameter list
// ("dispatch_command" for "dispatch_command(enum_server_command, THD*, …)");
// "" for a frame without a symbol.
func funcName(f symbolize.StackFrame) string {
	name, _, _ := strings.Cut(f.Function, "(")
	return name
}

// stackHas reports whether a frame of st is one of the functions.
func stackHas(st []symbolize.StackFrame, functions ...string) bool {
	for _, f := range st {
		n := funcName(f)
		for _, want := range functions {
			if n == want {
				return true
			}
		}
	}
	return false
}

// moduleOffset names a frame without a symbol: module and offset from its
// load address, the same in every run of that binary.
type moduleOffset struct {
	module string
	offset uint64
}

func offsetOf(f symbolize.StackFrame) moduleOffset {
	if f.Function != "" {
		return moduleOffset{}
	}
	return moduleOffset{f.Module, f.Offset}
}

func stackHasOffset(st []symbolize.StackFrame, at moduleOffset) bool {
	for _, f := range st {
		if offsetOf(f) == at {
			return true
		}
	}
	return false
}
