//go:build linux && amd64

package testservers

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// Apache httpd (Debian's apache2 2.4, event MPM) with one child process of
// 25 workers and a listener, under ab with keep-alive. The load makes
// contention the way real sites get it: a RewriteMap of type prg (the
// map's program is /bin/cat, which answers each key with itself) maps
// every request of /m/…, and mod_rewrite serialises the requests that
// use such a map on its "rewrite-map" mutex, held while the request
// writes its key to the program's pipe and reads the answer back. 16 of
// ab's keep-alive connections ask for /m/small.txt (the workers serving
// them queue on that mutex), 8 ask for a 512 KiB file; the other workers
// wait for a task.
// The threads live in the child process, which the parent (the one this
// package starts) forks: Server.PID is the child's.
//
// apache2 exports its own API and apr its functions (ap_queue_pop_something,
// ap_run_process_connection, apr_global_mutex_lock), but mod_mpm_event.so
// and mod_rewrite.so export no function: their frames are
// module+offset, and the rules below never need their offsets.

const (
	apacheThreads   = 25 // ThreadsPerChild: the child's worker pool
	apacheMapConns  = 16 // ab's connections through the RewriteMap
	apacheFileConns = 8  // ab's connections fetching the large file
)

// apacheBinaries is the apache2 server and its load generator, ab, or the
// test fails saying which package to install.
func apacheBinaries(t testing.TB) (bin, ab string) {
	t.Helper()
	bin = "/usr/sbin/apache2"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: apt-get install apache2 apache2-utils (scripts/deps.sh installs them)", bin)
	}
	return bin, lookAB(t)
}

// startApache2 starts apache2 in the foreground on the configuration
// conf, its files in dir, followed as a tree (tpoolTrack) until the test
// ends; errorLog is what it printed and its error.log. Should the test's
// process die, apache2 dies with it, and its children then read the end
// of the pipe of death and exit. ownGroup gives it a process group of its
// own: prefork's parent stops its children with kill(-its group), which
// would otherwise take the test too.
func startApache2(t testing.TB, bin, dir, conf string, ownGroup bool) (*exec.Cmd, *tpoolTree, func() string) {
	t.Helper()
	cmd := exec.Command(bin, "-f", conf, "-DFOREGROUND")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: ownGroup}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	tree := tpoolTrack(t, cmd)
	errorLog := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return out.String() + string(b)
	}
	return cmd, tree, errorLog
}

// StartApache starts apache2 with the event MPM on a free port of
// 127.0.0.1, loads it with ab until its workers serve the load, and returns
// its child process with its labels.
func StartApache(t testing.TB) *Server {
	t.Helper()
	bin, ab := apacheBinaries(t)
	dir := apacheDir(t)
	port := freePort(t)
	conf := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(conf, []byte(apacheConfig(dir, port)), 0o644))

	_, tree, errorLog := startApache2(t, bin, dir, conf, false)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tpoolWaitFor(t, tree, 60*time.Second, "apache2 serving http://"+addr+"/m/small.txt", errorLog, func() bool {
		return tpoolHTTPOK("http://" + addr + "/m/small.txt")
	})
	// The worker child is the parent's child named apache2 (the other is
	// the RewriteMap's cat); its workers have all started once it has
	// its 25 workers, the listener and its main thread.
	child := 0
	tpoolWaitFor(t, tree, 60*time.Second, "apache2's child with its worker threads", errorLog, func() bool {
		tree.adopt()
		child = tree.childNamed("apache2")
		return child != 0 && tpoolThreadCount(child) >= apacheThreads+2
	})

	accessLog := filepath.Join(dir, "access.log")
	startApacheLoad(t, tree, ab, addr)
	// The load runs once the access log grows (BufferedLogs writes it 4 KB
	// at a time): about 1,500 requests served.
	tpoolWaitFor(t, tree, 60*time.Second, "ab's requests in the access log", errorLog, func() bool {
		st, err := os.Stat(accessLog)
		return err == nil && st.Size() > 100<<10
	})
	return &Server{
		Name:  "apache",
		PID:   child,
		Lang:  "C",
		Shape: "thread pool (event MPM) with a listener",
		Label: (&apacheRules{pid: child, byWord: map[uint64]Label{}}).label,
		// The requests queued on the rewrite-map mutex: apr_global_mutex_lock
		// (the waiting machinery, by its name) called from mod_rewrite's
		// lookup of the prg map, a frame of mod_rewrite.so.
		TopSite:    apacheRewriteMapSite,
		TopRole:    regexp.MustCompile(`^request queued on the RewriteMap's mutex`),
		TopWaiters: nil,
		Notes: "Workers in ap_queue_pop_something waiting on the queue's condition are idle (a pool worker waiting for a task); " +
			"the same workers queued on the queue's mutex (to take it, or to re-take it after the signal) are contention. " +
			"Requests queued on mod_rewrite's rewrite-map mutex (apr_global_mutex_lock from mod_rewrite.so; Debian's apr makes " +
			"it a process-shared, priority-inheriting pthread mutex: FUTEX_LOCK_PI) are contention; the request holding it, " +
			"blocked reading the map program's answer from its pipe, is io (the program is another process). Requests blocked " +
			"writing to or polling their client are io, also without a stack (the listener's sockets are non-blocking). The " +
			"listener in epoll_wait is idle, also without a stack (only it calls epoll_wait); the listener blocked pushing to " +
			"the worker queue or waiting for an idle worker is contention. The child's main thread reading the pipe of death " +
			"is idle (it waits for the parent's order; its tid is the child's pid). Any glibc mutex wait (FUTEX_WAIT on a word " +
			"set to 2, or FUTEX_LOCK_PI) is contention also without a stack; another futex wait without a stack takes the " +
			"role of the unwound threads seen waiting on the same word (a condition's word is that condition's), else unknown.",
	}
}

// apacheRewriteMapSite matches the wait site of the rewrite-map mutex: the
// first frame above apr_global_mutex_lock, mod_rewrite's static lookup of
// a prg map (module+offset: the module exports no function). Below
// apr_global_mutex_lock, the frame above pthread_mutex_lock is apr's own
// static proc_mutex_pthread_acquire (libapr-1.so+offset, between
// apr_proc_mutex_cleanup and apr_proc_mutex_lock): the lock's machinery,
// not the site.
var apacheRewriteMapSite = regexp.MustCompile(`^mod_rewrite\.so\+0x[0-9a-f]+`)

// apacheDir makes the server root: the document root with a small and a
// large file, readable by the user the child switches to when the test
// runs as root (www-data: t.TempDir's directories are private to root).
func apacheDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	docs := filepath.Join(dir, "htdocs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "small.txt"), bytes.Repeat([]byte("small file\n"), 100), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "large.txt"), bytes.Repeat([]byte("a larger file, 512 KiB\n"), 512<<10/23), 0o644))
	return dir
}

// apacheConfig is a minimal httpd.conf: one child (ServerLimit 1) of
// apacheThreads workers, the modules a static site needs, the access log
// buffered, and the RewriteMap that serialises the /m/ requests.
func apacheConfig(dir string, port int) string {
	return apacheConfigHead(dir, "event", port) + fmt.Sprintf(`LoadModule rewrite_module %[2]smod_rewrite.so
StartServers 1
ServerLimit 1
ThreadLimit %[3]d
ThreadsPerChild %[3]d
MaxRequestWorkers %[3]d
MinSpareThreads 1
MaxSpareThreads 1000
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
LogFormat "%%h %%l %%u %%t \"%%r\" %%>s %%b" common
CustomLog %[1]s/access.log common
BufferedLogs On
DocumentRoot %[1]s/htdocs
<Directory %[1]s/htdocs>
  Require all granted
  AllowOverride None
</Directory>
RewriteEngine On
RewriteMap echo "prg:/bin/cat"
RewriteRule "^/m/(.*)$" "/${echo:$1}" [PT]
`, dir, apacheModules, apacheThreads)
}

// apacheModules is where Debian's apache2 keeps its modules.
const apacheModules = "/usr/lib/apache2/modules/"

// apacheConfigHead is what every test's httpd.conf begins with: the
// server root in dir, its logs and pid file there, the user its children
// switch to when the test runs as root (Apache refuses to serve as root:
// the user Debian's package creates), a listener on port of 127.0.0.1,
// the MPM (event or prefork) and the modules a static site needs.
func apacheConfigHead(dir, mpm string, port int) string {
	user := ""
	if os.Geteuid() == 0 {
		user = "User www-data\nGroup www-data\n"
	}
	return fmt.Sprintf(`ServerRoot %[1]s
ServerName 127.0.0.1
DefaultRuntimeDir %[1]s
PidFile %[1]s/httpd.pid
ErrorLog %[1]s/error.log
LogLevel warn
%[3]sListen 127.0.0.1:%[2]d
LoadModule mpm_%[5]s_module %[4]smod_mpm_%[5]s.so
LoadModule authz_core_module %[4]smod_authz_core.so
LoadModule dir_module %[4]smod_dir.so
LoadModule mime_module %[4]smod_mime.so
TypesConfig /etc/mime.types
`, dir, port, user, apacheModules, mpm)
}

// startApacheLoad runs two ab processes until the test ends (ten minutes
// and 20 million requests at most): keep-alive connections through the
// RewriteMap, and a few fetching the large file.
func startApacheLoad(t testing.TB, tree *tpoolTree, ab, addr string) {
	t.Helper()
	for _, l := range []struct {
		conns int
		path  string
	}{{apacheMapConns, "/m/small.txt"}, {apacheFileConns, "/large.txt"}} {
		// -r: keep going when the server closes a keep-alive connection
		// (it does when every worker is busy); -t before -n, which -t
		// would otherwise reset to 50,000.
		cmd := exec.Command(ab, "-q", "-r", "-k", "-c", strconv.Itoa(l.conns), "-t", "600", "-n", "20000000",
			"http://"+addr+l.path)
		tree.load(t, cmd)
	}
}

// Roles of the child's threads.
var (
	// apacheRequestFrames are the functions a worker runs a connection's
	// request under.
	apacheRequestFrames = []string{"ap_run_process_connection", "ap_process_connection", "ap_process_request",
		"ap_process_async_request", "ap_read_request", "ap_lingering_close", "ap_core_output_filter"}
	// apacheListenerFutex are the functions the listener blocks in on the
	// worker queue: pushing a connection (its mutex, or the condition's
	// signal waiting for the waiters to move on), or waiting for a worker
	// to be idle.
	apacheListenerFutex = []string{"ap_queue_push_socket", "ap_queue_push_timer", "ap_queue_info_wait_for_idler"}
)

// apacheRules label the threads of the child process pid. They learn,
// from the threads whose stacks were unwound, which role waits on each
// condition's futex word (the worker queue's, the idlers'): a word is one
// condition, so a thread not unwound waiting on it has that role.
type apacheRules struct {
	pid    int
	mu     sync.Mutex
	byWord map[uint64]Label // Label{} when threads of two roles waited on it
}

// label labels a thread of the child.
func (r *apacheRules) label(t *procfs.Thread) Label {
	if t.State == 'R' {
		return Label{Running, "running"}
	}
	if t.TID == r.pid {
		// child_main, after it started the threads: it reads the pipe of
		// death until the parent tells it to stop.
		if t.Syscall == sysRead {
			return Label{Idle, "child's main thread waiting on the pipe of death"}
		}
		return Label{}
	}
	if t.Syscall == sysEpollWait || t.Syscall == sysEpollPwait {
		// Only the listener has a pollset: the workers' apr_poll of one
		// socket is poll(2).
		return Label{Idle, "listener waiting for connections and events"}
	}
	if tpoolMutexWait(t) && t.Stack == nil {
		return Label{Contention, "queued on a mutex (not unwound)"}
	}
	word := t.SyscallArgs[0]
	if t.Stack == nil {
		switch t.Syscall {
		case sysFutex:
		case sysRead, sysWrite, unix.SYS_WRITEV, unix.SYS_SENDFILE, sysPoll, sysPpoll:
			// Besides the main thread (above), only requests block in
			// these: the listener's sockets and pipe are non-blocking.
			return Label{IO, "request's I/O (not unwound)"}
		default:
			return Label{}
		}
		r.mu.Lock()
		l := r.byWord[word]
		r.mu.Unlock()
		if l.Verdict != "" {
			l.Role += " (not unwound: by its futex word)"
		}
		return l
	}
	l := apacheByStack(t)
	if t.Syscall == sysFutex && !tpoolMutexWait(t) && l.Verdict != "" {
		r.mu.Lock()
		if was, seen := r.byWord[word]; !seen {
			r.byWord[word] = l
		} else if was != l {
			r.byWord[word] = Label{}
		}
		r.mu.Unlock()
	}
	return l
}

// apacheByStack labels a worker or the listener by its unwound stack.
func apacheByStack(t *procfs.Thread) Label {
	st := t.Stack
	switch {
	case stackHas(st, "ap_queue_pop_something"):
		if t.Syscall != sysFutex {
			return Label{}
		}
		if tpoolMutexWait(t) {
			return Label{Contention, "worker queued on the worker queue's mutex"}
		}
		return Label{Idle, "worker waiting for a task"}
	case stackHas(st, apacheRequestFrames...):
		return apacheRequest(t)
	case stackHas(st, apacheListenerFutex...) && t.Syscall == sysFutex:
		return Label{Contention, "listener waiting on the worker queue"}
	case tpoolMutexWait(t):
		return Label{Contention, "queued on a mutex"}
	}
	return Label{}
}

// apacheRequest labels a worker serving a request.
func apacheRequest(t *procfs.Thread) Label {
	st := t.Stack
	rewrite := tpoolHasModule(st, "mod_rewrite.so")
	switch t.Syscall {
	case sysFutex:
		if rewrite && stackHas(st, "apr_global_mutex_lock") {
			return Label{Contention, "request queued on the RewriteMap's mutex"}
		}
		return Label{Contention, "request waiting for another thread"}
	case sysRead:
		if rewrite {
			return Label{IO, "request reading the RewriteMap program's answer"}
		}
		return Label{IO, "request reading"}
	case sysWrite, unix.SYS_WRITEV, unix.SYS_SENDFILE, sysSendmsg, sysSendto:
		return Label{IO, "request writing to its client"}
	case sysPoll, sysPpoll:
		// apr_wait_for_io_or_timeout: the socket has no room for the
		// response, or the request is not all in yet.
		return Label{IO, "request waiting for its client's socket"}
	}
	return Label{IO, "request's system call"}
}

// tpoolMutexWait reports whether t is queued on a glibc mutex: FUTEX_WAIT
// (not a condition's FUTEX_WAIT_BITSET) on a word set to 2, the value
// __lll_lock_wait sleeps on, or FUTEX_LOCK_PI, how a priority-inheriting
// mutex queues (apr's process-shared pthread mutexes are such). Whatever
// the stack, the thread waits for the mutex's holder.
func tpoolMutexWait(t *procfs.Thread) bool {
	const (
		futexWait    = 0    // FUTEX_WAIT
		futexLockPI  = 6    // FUTEX_LOCK_PI
		futexLockPI2 = 13   // FUTEX_LOCK_PI2
		futexCmdMask = 0x7f // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
	)
	if t.Syscall != sysFutex {
		return false
	}
	switch t.SyscallArgs[1] & futexCmdMask {
	case futexWait:
		return t.SyscallArgs[2] == 2
	case futexLockPI, futexLockPI2:
		return true
	}
	return false
}

// tpoolHasModule reports whether a frame of st is in module (a frame
// without a symbol keeps its module: "mod_rewrite.so+0x9635").
func tpoolHasModule(st []symbolize.StackFrame, module string) bool {
	for _, f := range st {
		if f.Module == module {
			return true
		}
	}
	return false
}

// tpoolHTTPOK reports whether a GET of url answers 200.
func tpoolHTTPOK(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tpoolThreadCount is how many threads process pid has (0 when gone).
func tpoolThreadCount(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// tpoolProcStat reads a process's name, parent and start time from
// /proc/<pid>/stat; ok is false when it is gone.
func tpoolProcStat(pid int) (comm string, ppid int, start uint64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, 0, false
	}
	// After the name: state ppid ... starttime is the 20th field.
	f := strings.Fields(s[closing+1:])
	if len(f) < 20 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return s[open+1 : closing], ppid, start, true
}

// tpoolTree is a server's process tree a test started: the process it ran,
// the descendants found since (a pid with its start time, so that a pid
// taken by another process later is never killed), and the load
// generators, all stopped by pid when the test ends.
type tpoolTree struct {
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
	kids  map[int]uint64
	loads []*tpoolLoad
}

// tpoolLoad is a load generator the test started.
type tpoolLoad struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
}

// tpoolTrack reaps cmd when it exits and, when the test ends, stops the
// loads, then the server: SIGTERM to the process it started (a server
// stops its children itself), SIGKILL after 10 s, then SIGKILL to every
// descendant still there.
func tpoolTrack(t testing.TB, cmd *exec.Cmd) *tpoolTree {
	tr := &tpoolTree{cmd: cmd, done: make(chan struct{}), kids: map[int]uint64{}}
	go func() { _ = cmd.Wait(); close(tr.done) }()
	t.Cleanup(func() {
		for _, l := range tr.loads {
			_ = l.cmd.Process.Kill() // our child: its pid is ours until reaped
			<-l.done
		}
		tr.adopt()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-tr.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-tr.done
		}
		alive := func(pid int, start uint64) bool {
			_, _, s, ok := tpoolProcStat(pid)
			return ok && s == start
		}
		for pid, start := range tr.kids {
			if alive(pid, start) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		// They are not the test's children: their new parent reaps them.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			left := 0
			for pid, start := range tr.kids {
				if alive(pid, start) {
					left++
				}
			}
			if left == 0 {
				break
			}
		}
	})
	return tr
}

// adopt records the descendants of the server's process now.
func (tr *tpoolTree) adopt() {
	parents := []int{tr.cmd.Process.Pid}
	for len(parents) > 0 {
		pid := parents[0]
		parents = parents[1:]
		for _, kid := range tpoolChildren(pid) {
			if _, ppid, start, ok := tpoolProcStat(kid); ok && ppid == pid {
				if _, seen := tr.kids[kid]; !seen {
					tr.kids[kid] = start
				}
				parents = append(parents, kid)
			}
		}
	}
}

// childNamed is the pid of a process the server's process forked whose
// name is comm (0 when none).
func (tr *tpoolTree) childNamed(comm string) int {
	for _, kid := range tpoolChildren(tr.cmd.Process.Pid) {
		if name, _, _, ok := tpoolProcStat(kid); ok && name == comm {
			return kid
		}
	}
	return 0
}

// load starts a load generator: the tree's cleanup stops it first.
func (tr *tpoolTree) load(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	l := &tpoolLoad{cmd: cmd, done: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = &l.out, &l.out
	require.NoError(t, cmd.Start())
	tr.loads = append(tr.loads, l)
	go func() { _ = cmd.Wait(); close(l.done) }()
}

// tpoolChildren lists the children of every thread of pid.
func tpoolChildren(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if kid, err := strconv.Atoi(s); err == nil {
				kids = append(kids, kid)
			}
		}
	}
	return kids
}

// tpoolWaitFor polls ok every 20 ms until it holds, and fails the test
// when timeout passes first or the server or a load exits meanwhile,
// with diag's account of what happened.
func tpoolWaitFor(t testing.TB, tr *tpoolTree, timeout time.Duration, what string, diag func() string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		select {
		case <-tr.done:
			t.Fatalf("waiting for %s: the server exited (%v): %s", what, tr.cmd.ProcessState, diag())
		default:
		}
		for _, l := range tr.loads {
			select {
			case <-l.done:
				t.Fatalf("waiting for %s: the load %s exited (%v): %s", what, l.cmd.Path, l.cmd.ProcessState, l.out.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v: %s", what, timeout, diag())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
