//go:build linux && amd64

package testservers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
)

const (
	// haproxyThreads is nbthread: four event loops on two cores.
	haproxyThreads = 4
	// haproxyClients is the load's concurrent keep-alive clients.
	haproxyClients = 64
	// haproxyLoadFor and haproxyMaxRequests bound the load in time and
	// count; the test ends it sooner.
	haproxyLoadFor     = 90 * time.Second
	haproxyMaxRequests = 5_000_000
)

// StartHAProxy runs Debian's haproxy with four threads in the foreground
// (-db), proxying HTTP on 127.0.0.1 to a small backend served from the
// test process, its stats socket in a temporary directory, under 64
// keep-alive clients looping on GET from the test process. It returns
// once a request went through, and stops the load, haproxy (by pid) and
// the backend when the test ends.
func StartHAProxy(t testing.TB) *Server {
	t.Helper()
	bin := findHAProxy(t)
	dir := t.TempDir()
	backend := startHAProxyBackend(t)
	port := freePort(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(dir, port, backend)), 0o600); err != nil {
		t.Fatalf("write %s: %v", cfg, err)
	}
	out, err := os.Create(filepath.Join(dir, "haproxy.out"))
	if err != nil {
		t.Fatalf("create haproxy.out: %v", err)
	}
	defer out.Close()
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our child: its pid is ours until reaped
		<-done
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	waitHAProxyServing(t, url, filepath.Join(dir, "haproxy.out"), done)
	startHAProxyLoad(t, url)
	return &Server{
		Name:    "haproxy",
		PID:     cmd.Process.Pid,
		Lang:    "C",
		Shape:   "event loop per thread",
		Label:   haproxyLabel(cmd.Process.Pid),
		TopSite: nil,
		Notes: "Every HAProxy thread, the main one included, runs the same event loop (run_poll_loop; " +
			"the epoll poller's _do_poll has no symbol, haproxy+offset) and blocks only in epoll_wait " +
			"for its next events: idle, also without a stack (no other code of HAProxy calls " +
			"epoll_wait). Its sockets are non-blocking and its locks are spinlocks (HA_SPIN_LOCK, " +
			"thread_isolate spins), so under load a thread is running or in epoll_wait; a futex wait " +
			"is contention only when it is a glibc mutex's queue (FUTEX_WAIT on 2, or __lll_lock_wait " +
			"on the stack: a library's lock), and unknown otherwise; so is a thread caught sleeping in " +
			"another system call (its sockets and wake-up pipes never block). No contended resource appears under this load, so TopSite is nil; HAProxy " +
			"has no waiter count to give TopWaiters.",
	}
}

// findHAProxy finds haproxy, which Debian installs in /usr/sbin (not on a
// plain user's PATH).
func findHAProxy(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy", "/usr/local/sbin/haproxy"} {
		if p, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	t.Fatalf("haproxy is not installed: apt-get install haproxy (scripts/deps.sh installs it)")
	return ""
}

// haproxyConfig is the configuration: threads, the stats socket in dir,
// one HTTP frontend on 127.0.0.1:port and the backend. Timeouts are long
// enough for a loaded machine; no logging (it would add a syslog socket).
func haproxyConfig(dir string, port int, backend string) string {
	return fmt.Sprintf(`global
    nbthread %d
    maxconn 4096
    stats socket %s mode 600 level admin

defaults
    mode http
    option http-keep-alive
    timeout connect 10s
    timeout client 60s
    timeout server 60s

frontend fe
    bind 127.0.0.1:%d
    default_backend be

backend be
    http-reuse always
    server app %s
`, haproxyThreads, filepath.Join(dir, "stats.sock"), port, backend)
}

// startHAProxyBackend serves a small page on 127.0.0.1 from the test
// process and returns its address; it is shut down when the test ends.
func startHAProxyBackend(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("backend listen: %v", err)
	}
	body := []byte("hello from the backend\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	}), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// waitHAProxyServing waits until a request through haproxy returns 200:
// it parsed its configuration, started its threads and reached the
// backend.
func waitHAProxyServing(t testing.TB, url, outPath string, done <-chan struct{}) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		b, _ := os.ReadFile(outPath)
		select {
		case <-done:
			t.Fatalf("haproxy exited: %s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not serve %s within 30 s: %v; %s", url, err, b)
		}
	}
}

// startHAProxyLoad runs the clients: each loops on GET over its own
// keep-alive connection until the test ends, haproxyLoadFor passes or
// the clients made haproxyMaxRequests requests.
func startHAProxyLoad(t testing.TB, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), haproxyLoadFor)
	tr := &http.Transport{MaxIdleConnsPerHost: haproxyClients, MaxConnsPerHost: haproxyClients, DisableCompression: true}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	requests := 0
	for range haproxyClients {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				requests++
				over := requests > haproxyMaxRequests
				mu.Unlock()
				if over {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := c.Do(req)
				if err != nil {
					// A refused or reset connection (the machine is
					// loaded) is retried after a breath.
					time.Sleep(10 * time.Millisecond)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		tr.CloseIdleConnections()
	})
}

// haproxyLabel labels HAProxy's threads (see Notes); pid is the main
// thread's tid.
func haproxyLabel(pid int) func(t *procfs.Thread) Label {
	return func(t *procfs.Thread) Label {
		if t.State == 'R' {
			return Label{Verdict: Running, Role: "running"}
		}
		switch t.Syscall {
		case unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
			if t.TID == pid {
				return Label{Verdict: Idle, Role: "main thread's event loop in epoll_wait"}
			}
			return Label{Verdict: Idle, Role: "thread's event loop in epoll_wait"}
		case unix.SYS_FUTEX:
			// HAProxy's own locks spin; a glibc mutex (in a library:
			// OpenSSL, Lua) queues its waiters: contention. Any other
			// futex wait is not in this load's roles: unknown.
			if rhQueuedOnMutex(t) {
				return Label{Verdict: Contention, Role: "thread queued on a mutex"}
			}
		}
		return Label{}
	}
}
