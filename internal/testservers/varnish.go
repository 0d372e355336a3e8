//go:build linux && amd64

package testservers

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Varnish Cache (Debian's varnishd 7.1) with one thread pool of 20 to 200
// workers in front of a backend the test serves itself, under 64 keep-alive
// clients. 55 % of the requests hit 200 cacheable objects, 30 % miss
// (unique URLs, fetched from a backend that takes 5 ms to answer), and 15 %
// ask for 4 hot objects that live one second and that the backend streams
// slowly (128 KiB in 16 pieces 20 ms apart): the requests that come while
// one is fetched coalesce on it. A request for a busy object waits first
// on the object's waiting list, which holds no thread (Varnish parks the
// request and frees its worker), and once the fetch streams, in
// ObjWaitExtend for each next piece; a request that misses waits in
// ObjWaitState for its fetch, which another worker runs. Both wait on the
// busy object's condition for another thread: contention.
//
// The cache process (the manager's child, its main thread named
// cache-main) holds the threads: Server.PID is its pid. varnishd exports
// most of its functions (for the VMODs): its frames have names, but for
// a few static ones (the pool's worker loop, the acceptor task).

const (
	varnishClients   = 64
	varnishObjects   = 200 // cacheable objects the hits go to
	varnishHot       = 4   // hot objects, refetched every second
	varnishHotPieces = 16  // pieces of 8 KiB a hot object streams, 20 ms apart
)

// StartVarnish starts varnishd on a free port of 127.0.0.1 in front of a
// backend served by the test, loads it with 64 clients until requests
// coalesce on busy objects, and returns its cache process with its labels.
func StartVarnish(t testing.TB) *Server {
	t.Helper()
	bin := "/usr/sbin/varnishd"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: apt-get install varnish (scripts/deps.sh installs it)", bin)
	}
	backend := startVarnishBackend(t)
	port := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "-F", "-j", "none", "-T", "none",
		"-a", "127.0.0.1:"+strconv.Itoa(port), "-b", backend, "-n", filepath.Join(dir, "varnish"),
		"-s", "malloc,64m", "-p", "thread_pools=1", "-p", "thread_pool_min=20", "-p", "thread_pool_max=200",
		// Without grace a stale hot object is not served while it is
		// refetched in the background: its requests wait for the fetch.
		"-p", "default_grace=0", "-p", "default_keep=0")
	// Should the test's process die, the manager dies with it, and the
	// cache process, which watches its CLI pipe, exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	tree := tpoolTrack(t, cmd)

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tpoolWaitFor(t, tree, 60*time.Second, "varnishd serving http://"+addr+"/obj/0", out.String, func() bool {
		return tpoolHTTPOK("http://" + addr + "/obj/0")
	})
	child := 0
	tpoolWaitFor(t, tree, 30*time.Second, "varnishd's cache process with its workers", out.String, func() bool {
		tree.adopt()
		child = tree.childNamed("cache-main")
		return child != 0 && varnishWorkers(child) >= 20
	})
	done := startVarnishLoad(t, addr)
	tpoolWaitFor(t, tree, 60*time.Second, "2,000 requests through varnishd", out.String, func() bool {
		return done.Load() >= 2000
	})
	return &Server{
		Name:  "varnish",
		PID:   child,
		Lang:  "C",
		Shape: "thread pool",
		Label: (&varnishRules{ownStack: map[uint64]Label{}}).label,
		// The requests waiting for a hot object's next piece: labels
		// tallied over 6 s of looks gave, per look, 14 unwound there and
		// most of the 18 off-stack condition waiters not unwound, against
		// 6 in ObjWaitState (and the fetches in VCP_Wait).
		TopSite:    varnishTopSite,
		TopRole:    regexp.MustCompile(`^delivery waiting for a busy object's next piece`),
		TopWaiters: nil,
		Notes: "Workers waiting on the pool's condition with no task frame below (Lck_CondWaitUntil from the pool's worker " +
			"loop) are idle; a worker running the acceptor task blocked in accept is idle (the listener). A request waiting " +
			"for the next piece of a busy object another worker streams (ObjWaitExtend) or for its own fetch to get the " +
			"backend's headers (ObjWaitState) is contention: it waits on the busy object for another thread. Requests parked " +
			"on a busy object's waiting list hold no thread and are not seen. A fetch in VCP_Wait is contention: it sent its " +
			"request on a reused backend connection and waits on its condition until the waiter thread hands the connection " +
			"over, when the backend answers: a hand-off from another thread inside work, labelled as the JVM corpus labels an " +
			"HTTP client waiting for the future its selector thread completes (this label was first io, and was changed to " +
			"contention for that consistency after the first scored run). Any glibc mutex wait (Varnish's Lck_Lock) " +
			"is contention. A worker polling, reading or writing a socket (its client during timeout_linger, the backend, the " +
			"response) is io, also without a stack. Without a stack, a worker's condition wait off its own stack is a busy " +
			"object's (contention); one on its own stack (wrk->cond: waiting for a task, or VCP_Wait) is told by the distance " +
			"from the stack pointer, learnt from the unwound workers (the same call path has the same frames), else unknown. " +
			"The background threads are told by their names: the expiry thread, the ban lurker, the backend poller and the " +
			"pool herder waiting on their conditions are idle; the acceptor thread, the mempool guards, the hash cleaner and " +
			"the herders' herder in nanosleep are sleep; cache-main in poll (its CLI) and the waiter in epoll_wait are idle.",
	}
}

// varnishTopSite matches the wait site of the requests that wait for the
// next piece of a busy object another worker streams (ObjWaitExtend, called
// from the storage's iterator).
var varnishTopSite = regexp.MustCompile(`^ObjWaitExtend\b`)

// varnishWorkers is how many threads of pid are named cache-worker.
func varnishWorkers(pid int) int {
	names, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/comm", pid))
	n := 0
	for _, f := range names {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == "cache-worker" {
			n++
		}
	}
	return n
}

// startVarnishBackend serves the objects on a free port of 127.0.0.1 until
// the test ends and returns its address.
func startVarnishBackend(t testing.TB) string {
	t.Helper()
	small := []byte(strings.Repeat("an object of 4 KiB\n", 4096/19))
	piece := []byte(strings.Repeat("a piece of a hot object\n", 8<<10/24))
	mux := http.NewServeMux()
	mux.HandleFunc("/obj/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(small)
	})
	mux.HandleFunc("/miss/", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // a backend's latency
		w.Header().Set("Cache-Control", "max-age=1")
		_, _ = w.Write(small)
	})
	// A hot object streams for 320 ms and lives a second: the requests
	// that come meanwhile join the stream and wait for each piece.
	mux.HandleFunc("/hot/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=1")
		w.Header().Set("Content-Length", strconv.Itoa(varnishHotPieces*len(piece)))
		fl, _ := w.(http.Flusher)
		for i := 0; i < varnishHotPieces; i++ {
			_, _ = w.Write(piece)
			if fl != nil {
				fl.Flush()
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// startVarnishLoad runs varnishClients keep-alive clients until the test
// ends (ten minutes and 20 million requests at most) and returns the
// count of requests answered.
func startVarnishLoad(t testing.TB, addr string) *atomic.Int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tr := &http.Transport{MaxIdleConnsPerHost: varnishClients, MaxConnsPerHost: varnishClients, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var done, budget atomic.Int64
	budget.Store(20_000_000)
	var wg sync.WaitGroup
	for i := 0; i < varnishClients; i++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(seed))
			for ctx.Err() == nil && budget.Add(-1) >= 0 {
				var path string
				switch p := rnd.Intn(100); {
				case p < 55:
					path = "/obj/" + strconv.Itoa(rnd.Intn(varnishObjects))
				case p < 85:
					path = "/miss/" + strconv.FormatInt(rnd.Int63(), 36)
				default:
					path = "/hot/" + strconv.Itoa(rnd.Intn(varnishHot))
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
				resp, err := client.Do(req)
				if err != nil {
					continue // the server paused (gdb) or the test ends
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done.Add(1)
			}
		}(int64(i))
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		tr.CloseIdleConnections()
	})
	return &done
}

// Background threads of the cache process by name (Varnish names every
// thread it starts): what each waits for between its rounds.
var varnishBackground = map[string]struct {
	cond  string // its role when waiting on its condition
	sleep string // its role in nanosleep
}{
	"cache-exp":       {cond: "expiry thread waiting for its next deadline"},
	"ban-lurker":      {cond: "ban lurker waiting for bans", sleep: "ban lurker sleeping between rounds"},
	"backend-poller":  {cond: "backend poller waiting for its next probe"},
	"pool_herder":     {cond: "pool herder waiting for a reason to breed or reap", sleep: "pool herder pausing"},
	"pool_poolherder": {sleep: "pool-herders' herder sleeping"},
	"hcb-cleaner":     {sleep: "hash cleaner sleeping between rounds"},
	"cache-acceptor":  {sleep: "acceptor thread sleeping between rounds"},
}

// varnishRules label the threads of one cache process. They learn, from
// the workers whose stacks were unwound, which call path each distance
// between a worker's own condition and its stack pointer belongs to (see
// worker).
type varnishRules struct {
	mu       sync.Mutex
	ownStack map[uint64]Label // by the condition's distance above the stack pointer; Label{} when ambiguous
}

// label labels a thread of the cache process.
func (r *varnishRules) label(t *procfs.Thread) Label {
	if t.State == 'R' {
		return Label{Running, "running"}
	}
	switch {
	case t.Name == "cache-worker":
		return r.worker(t)
	case t.Name == "cache-main" && (t.Syscall == sysPoll || t.Syscall == sysPpoll):
		return Label{Idle, "CLI thread waiting for the manager's commands"}
	case t.Name == "cache-epoll" && (t.Syscall == sysEpollWait || t.Syscall == sysEpollPwait):
		return Label{Idle, "waiter waiting for events on idle connections"}
	case tpoolMutexWait(t):
		return Label{Contention, "background thread queued on a lock"}
	}
	bg, ok := varnishBackground[t.Name]
	if !ok && strings.HasPrefix(t.Name, "MPL_") {
		bg, ok = struct{ cond, sleep string }{sleep: "mempool guard sleeping between rounds"}, true
	}
	if !ok {
		return Label{}
	}
	inSleep := t.Syscall == sysNanosleep || t.Syscall == sysClockNanosleep
	if t.Syscall == unix.SYS_RESTART_SYSCALL {
		// A sleep or a timed futex wait a signal or a debugger
		// interrupted: the kernel restarts it with no arguments to read.
		switch {
		case bg.cond == "":
			inSleep = true
		case bg.sleep == "":
		case t.Stack == nil:
			return Label{}
		default:
			inSleep = strings.Contains(t.Stack[0].Function, "nanosleep")
		}
	} else if !inSleep && t.Syscall != sysFutex {
		return Label{}
	}
	switch {
	case inSleep && bg.sleep != "":
		return Label{Sleep, bg.sleep}
	case !inSleep && bg.cond != "":
		return Label{Idle, bg.cond}
	}
	return Label{}
}

// worker labels a pool worker: waiting for a task, running the acceptor
// task, or serving a session, a request or a fetch.
func (r *varnishRules) worker(t *procfs.Thread) Label {
	switch t.Syscall {
	case unix.SYS_ACCEPT4, unix.SYS_ACCEPT:
		// Only the acceptor tasks accept.
		return Label{Idle, "acceptor task waiting for a connection"}
	case sysPoll, sysPpoll, sysRead, sysRecvfrom, sysRecvmsg, unix.SYS_READV:
		if stackHas(t.Stack, "V1F_FetchRespHdr", "VBF_Fetch", "V1F_SendReq", "VFP_Suck") {
			return Label{IO, "fetch waiting for the backend"}
		}
		if t.Stack == nil {
			return Label{IO, "worker waiting for a socket (not unwound)"}
		}
		return Label{IO, "session waiting for its client"}
	case sysWrite, unix.SYS_WRITEV, sysSendto, sysSendmsg, unix.SYS_SENDFILE:
		return Label{IO, "writing to a socket"}
	case sysNanosleep, sysClockNanosleep:
		return Label{Sleep, "worker sleeping"}
	case sysFutex:
	default:
		return Label{}
	}
	if tpoolMutexWait(t) {
		return Label{Contention, "worker queued on a lock"}
	}
	// A worker's idle wait is on its own condition (wrk->cond), which
	// lives on its stack a few KiB above the stack pointer; so is
	// VCP_Wait's (a fetch waiting for its reused backend connection to
	// answer). A condition elsewhere (a busy object's) is waited on
	// inside a task.
	off := t.SyscallArgs[0] - t.SyscallSP
	own := t.SyscallSP != 0 && off < 64<<10
	st := t.Stack
	if st == nil {
		if !own {
			return Label{Contention, "worker waiting on a condition inside a task (not unwound)"}
		}
		// The distance is the sum of the frames' sizes down the call
		// path: an unwound worker waiting at the same distance came the
		// same way.
		r.mu.Lock()
		l := r.ownStack[off]
		r.mu.Unlock()
		if l.Verdict != "" {
			l.Role += " (not unwound: by its condition's place on its stack)"
		}
		return l
	}
	var l Label
	switch {
	case stackHas(st, "ObjWaitState"):
		l = Label{Contention, "request waiting for its fetch"}
	case stackHas(st, "ObjWaitExtend"):
		l = Label{Contention, "delivery waiting for a busy object's next piece"}
	case stackHas(st, "VCP_Wait"):
		// The fetch sent its request on a reused backend connection
		// the waiter thread still watches, and waits on its condition
		// until the waiter hands the connection over (when the backend
		// answers): a hand-off from another thread inside work, which
		// the JVM corpus labels contention too (an HTTP client waiting
		// for the future its selector thread completes).
		l = Label{Contention, "fetch waiting for the waiter thread to hand over its backend connection"}
	case varnishTaskWait(st):
		l = Label{Idle, "worker waiting for a task"}
	default:
		l = Label{Contention, "worker waiting for another thread"}
	}
	if own {
		r.mu.Lock()
		if was, seen := r.ownStack[off]; !seen {
			r.ownStack[off] = l
		} else if was != l {
			r.ownStack[off] = Label{}
		}
		r.mu.Unlock()
	}
	return l
}

// varnishTaskWait reports whether st is the pool's worker loop waiting for
// a task: Lck_CondWait* called from the loop (a static function of
// varnishd, no name) with nothing but the thread's start below.
func varnishTaskWait(st []symbolize.StackFrame) bool {
	at := -1
	for i, f := range st {
		if strings.HasPrefix(f.Function, "Lck_CondWait") {
			at = i
			break
		}
	}
	if at < 0 {
		return false
	}
	loop := 0
	for _, f := range st[at+1:] {
		switch {
		case f.Function == "start_thread" || f.Function == "clone3" || f.Function == "clone":
			return loop > 0
		case f.Function == "" && f.Module == "varnishd":
			loop++ // Pool_Work_Thread, WRK_Thread's static body
		case f.Function == "WRK_Thread":
		default:
			return false
		}
	}
	return loop > 0 && loop <= 3
}
