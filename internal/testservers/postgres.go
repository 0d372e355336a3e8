//go:build linux && amd64

package testservers

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PostgreSQL (Debian's, stripped, with its dynamic symbols) under
// pgbench's TPC-B: a server made of processes. The postmaster forks a
// backend per client; 32 clients on a scale-1 database (one branch row,
// which every transaction updates) queue on row locks. A backend waiting
// for a row lock (Lock: transactionid or tuple) sleeps in ProcSleep on its
// latch: epoll_wait on a set of only its signalfd and the postmaster's
// death pipe; one waiting for its client's next query sleeps in
// epoll_wait on a set holding the client's socket. The server counts the
// waiters itself: pg_stat_activity's wait_event_type 'Lock'.

// PostgresTools holds the paths of the programs a PostgreSQL test runs.
type PostgresTools struct {
	Bin              string // the server's bin directory (postgres, initdb)
	Pgbench, Psql    string
	uid, gid         int
	userName, binDir string
}

// FindPostgres finds the newest PostgreSQL under /usr/lib/postgresql,
// pgbench and psql, and the postgres user the server runs as (it refuses
// root).
func FindPostgres(t testing.TB) PostgresTools {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		t.Fatalf("PostgreSQL is not installed: apt-get install postgresql (scripts/deps.sh installs it)")
	}
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) < pgVersion(dirs[j]) })
	bin := filepath.Dir(dirs[len(dirs)-1])
	tools := PostgresTools{Bin: bin, Pgbench: filepath.Join(bin, "pgbench"), Psql: filepath.Join(bin, "psql")}
	for _, p := range []string{tools.Pgbench, tools.Psql, filepath.Join(bin, "initdb")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: apt-get install postgresql postgresql-client (scripts/deps.sh installs them)", p)
		}
	}
	tools.uid, tools.gid = os.Getuid(), os.Getgid()
	if tools.uid == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "PostgreSQL refuses to run as root and there is no postgres user (Debian's postgresql package creates it)")
		tools.uid, _ = strconv.Atoi(u.Uid)
		tools.gid, _ = strconv.Atoi(u.Gid)
	}
	return tools
}

func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// asServerUser runs cmd as the user the server runs as.
func (p PostgresTools) asServerUser(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.uid != os.Getuid() {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}
	}
	return cmd
}

// Postgres is a postmaster a test started.
type Postgres struct {
	PID  int
	Port int
	Dir  string
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncBuffer
}

// Start creates a database cluster in a new directory owned by the
// server's user, starts the postmaster on 127.0.0.1 and a free port (and a
// Unix socket in the same directory), waits until it accepts connections,
// and stops it by its pid, then removes the directory, when the test
// ends.
func (p PostgresTools) Start(t testing.TB) *Postgres {
	t.Helper()
	// Not t.TempDir: its parents are root's, closed to the server's user.
	dir, err := os.MkdirTemp("", "ctprof-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chown(dir, p.uid, p.gid))
	data := filepath.Join(dir, "data")
	out, err := p.asServerUser(exec.Command(filepath.Join(p.Bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")).CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	port := freePort(t)
	cmd := p.asServerUser(exec.Command(filepath.Join(p.Bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=80", "-c", "shared_buffers=32MB",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"))
	pg := &Postgres{Port: port, Dir: dir, cmd: cmd, done: make(chan struct{}), out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = pg.out, pg.out
	require.NoError(t, cmd.Start())
	pg.PID = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(pg.done) }()
	t.Cleanup(func() { pg.Stop(t) })
	deadline := time.Now().Add(45 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			if out, err := exec.Command(p.Psql, p.connArgs(pg, "-c", "SELECT 1")...).CombinedOutput(); err == nil {
				return pg
			} else if time.Now().After(deadline) {
				t.Fatalf("postgres does not answer: %s; %s", out, pg.out.String())
			}
		}
		select {
		case <-pg.done:
			t.Fatalf("postgres exited: %s", pg.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "postgres did not accept connections on port %d: %v; %s", port, err, pg.out.String())
	}
}

// Stop shuts the server down (SIGINT: a fast shutdown, which ends its
// backends); killed if it takes too long. A no-op once it has exited.
func (pg *Postgres) Stop(t testing.TB) {
	select {
	case <-pg.done:
		return
	default:
	}
	_ = pg.cmd.Process.Signal(syscall.SIGINT) // our child: its pid is ours until reaped
	select {
	case <-pg.done:
	case <-time.After(30 * time.Second):
		_ = pg.cmd.Process.Kill()
		<-pg.done
		t.Logf("postgres %d did not shut down within 30 s; killed", pg.PID)
	}
}

// connArgs are a client's arguments to reach pg over TCP as postgres.
func (p PostgresTools) connArgs(pg *Postgres, more ...string) []string {
	return append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres", "-X", "-q", "-d", "postgres"}, more...)
}

// Query runs one SQL statement over a psql session and returns what it
// printed, unaligned and without headers ("0").
func (p PostgresTools) Query(t testing.TB, pg *Postgres, sql string) string {
	t.Helper()
	out, err := exec.Command(p.Psql, p.connArgs(pg, "-A", "-t", "-c", sql)...).CombinedOutput()
	require.NoError(t, err, "psql -c %q: %s", sql, out)
	return strings.TrimSpace(string(out))
}

// InitPgbench creates pgbench's tables at scale 1: one branch, which every
// TPC-B transaction updates.
func (p PostgresTools) InitPgbench(t testing.TB, pg *Postgres) {
	t.Helper()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres", "-i", "-s", "1", "-q", "postgres"}
	out, err := exec.Command(p.Pgbench, args...).CombinedOutput()
	require.NoError(t, err, "pgbench -i: %s", out)
}

// StartPgbench runs TPC-B with clients connections over TCP for at most
// seconds; killed when the test ends.
func (p PostgresTools) StartPgbench(t testing.TB, pg *Postgres, clients, seconds int) *Load {
	t.Helper()
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", "postgres",
		"-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(seconds), "postgres"}
	return startLoad(t, exec.Command(p.Pgbench, args...))
}

// pgLockQuery counts the backends waiting for a heavyweight lock (a row's
// transaction or tuple lock under pgbench), and 0: the server keeps no
// sum of the time waited.
const pgLockQuery = "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), 0 FROM pg_stat_activity;\n"

// WatchLockWaits reads pg_stat_activity's count of backends waiting for a
// lock every 50 ms over one psql session, until stopped (at the latest
// when the test ends).
func (p PostgresTools) WatchLockWaits(t testing.TB, pg *Postgres) *RowLockWatch {
	t.Helper()
	return watchRowLocks(t, exec.Command(p.Psql, p.connArgs(pg, "-A", "-t", "-F", " ")...), pgLockQuery)
}

// Session is an idle client session: a psql that connected and waits
// for input, so that its backend waits for the client's next query.
type Session struct{ load *Load }

// OpenSession connects a psql that runs one query and then waits.
func (p PostgresTools) OpenSession(t testing.TB, pg *Postgres) *Session {
	t.Helper()
	cmd := exec.Command(p.Psql, p.connArgs(pg)...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	s := &Session{load: startLoad(t, cmd)}
	_, err = in.Write([]byte("SELECT 1;\n"))
	require.NoError(t, err)
	t.Cleanup(func() { in.Close() })
	return s
}
