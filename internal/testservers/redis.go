//go:build linux && amd64

package testservers

import (
	"bufio"
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Redis (Debian's redis-server 7.0) on a Unix socket, with an append-only
// file synced every second (its bio threads have work) and one I/O thread
// besides the main one, under redis-benchmark: 50 clients pipelining
// SET, LPUSH and INCR. Redis runs commands on its one event loop; the I/O
// thread writes replies while the main thread waits for it, spinning, and
// the bio threads take jobs (the AOF's fsync, closing files, lazy frees)
// from queues. Nothing in this load queues threads on a lock: the main
// thread runs all the time, and there is no contended resource to find.

// StartRedis starts redis-server and redis-benchmark against it, until the
// test ends, and returns it with its labels.
func StartRedis(t testing.TB) *Server {
	t.Helper()
	server := lookRedis(t, "redis-server", "redis-server")
	bench := lookRedis(t, "redis-benchmark", "redis-tools")
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	pid := startRedisServer(t, server, dir, sock)
	startRedisBenchmark(t, bench, sock)
	return &Server{
		Name:  "redis",
		PID:   pid,
		Lang:  "C",
		Shape: "event loop, with background and I/O threads",
		Label: redisLabel(pid),
		// No resource: the load makes no thread wait for another's lock
		// (the corpus then checks ctprof reports no contention finding
		// above a warning).
		TopSite: nil,
		Notes: "The main thread in epoll_wait (aeMain) is idle, its event loop. The I/O thread blocked in pthread_mutex_lock " +
			"at the top of IOThreadMain is idle too: the main thread holds io_threads_mutex to park it when there are too few " +
			"replies to share (stopThreadedIO), so it waits for its next unit of work, not for a lock's holder to finish with " +
			"it; under this load it mostly spins (running). bio threads in pthread_cond_wait in bioProcessBackgroundJobs wait " +
			"for a job (idle); the one fsyncing the AOF is io. jemalloc's background threads waiting on their conditions " +
			"are idle. No resource is expected: TopSite is nil.",
	}
}

func lookRedis(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: apt-get install %s (scripts/deps.sh installs it)", name, pkg)
	}
	return p
}

// startRedisServer starts redis-server on the Unix socket sock only (port
// 0: no TCP), its files in dir, waits until it answers and kills it by its
// pid when the test ends.
func startRedisServer(t testing.TB, bin, dir, sock string) int {
	t.Helper()
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--dir", dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
		// One I/O thread besides the main one (the count includes it).
		"--io-threads", "2", "--daemonize", "no", "--logfile", "")
	out, done := startOwned(t, cmd, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if redisPing(sock) {
			return cmd.Process.Pid
		}
		select {
		case <-done:
			t.Fatalf("redis-server exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not answer on %s: %s", sock, out.String())
	}
}

// redisPing reports whether the server answers PING on sock.
func redisPing(sock string) bool {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 16)
	n, _ := c.Read(b)
	return string(b[:n]) == "+PONG\r\n"
}

// startRedisBenchmark runs redis-benchmark on sock until the test ends:
// bounded by its request count (10 million of each command, more than a
// test lasts) and by ten minutes, and killed by pid at cleanup. It waits
// until the server has run some of its commands.
func startRedisBenchmark(t testing.TB, bin, sock string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "-s", sock, "-n", "10000000", "-t", "set,lpush,incr", "-c", "50", "-P", "4", "-q")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel() // kills it by its pid
		<-done
	})
	// The load is on when the server counts its clients' commands.
	deadline := time.Now().Add(30 * time.Second)
	for redisCommands(sock) < 10000 {
		select {
		case <-done:
			t.Fatalf("redis-benchmark ended: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "redis-benchmark ran no command: %s", out.String())
	}
}

// redisCommands is the server's total_commands_processed (-1 when it
// cannot be read).
func redisCommands(sock string) int64 {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return -1
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO stats\r\n")); err != nil {
		return -1
	}
	// A bulk string: "$<length>\r\n<text>\r\n".
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return -1
	}
	size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || size < 0 {
		return -1
	}
	text := make([]byte, size)
	if _, err := io.ReadFull(r, text); err != nil {
		return -1
	}
	for _, line := range strings.Split(string(text), "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// redisLabel labels redis-server's threads, which it names: the main
// thread keeps the process's name, io_thd_<n>, bio_close_file,
// bio_aof_fsync, bio_lazy_free, and jemalloc's jemalloc_bg_thd.
func redisLabel(pid int) func(t *procfs.Thread) Label {
	return func(t *procfs.Thread) Label {
		if t.State == 'R' {
			return Label{Running, "running"}
		}
		switch {
		case t.TID == pid:
			return redisMain(t)
		case strings.HasPrefix(t.Name, "io_thd_"):
			if t.Syscall == sysFutex && (t.Stack == nil || stackHas(t.Stack, "IOThreadMain")) {
				// IOThreadMain's pthread_mutex_lock(&io_threads_mutex[id]):
				// parked by the main thread until it has replies to
				// share out.
				return Label{Idle, "I/O thread parked by the main thread"}
			}
			return Label{}
		case strings.HasPrefix(t.Name, "bio_"):
			switch t.Syscall {
			case sysFutex:
				if t.SyscallArgs[1]&0x7f == futexWait {
					// Its queue's mutex, held by the main thread
					// submitting a job.
					return Label{Contention, "bio thread queued on a mutex"}
				}
				if t.Stack == nil || stackHas(t.Stack, "bioProcessBackgroundJobs") && stackHas(t.Stack, "pthread_cond_wait") {
					return Label{Idle, "bio thread waiting for a job"}
				}
				return Label{}
			case sysFsync, sysFdatasync:
				return Label{IO, "bio thread syncing the AOF"}
			}
			return Label{IO, "bio thread's job I/O"}
		case t.Name == "jemalloc_bg_thd" && t.Syscall == sysFutex:
			// Its condition, between purges of dirty pages.
			return Label{Idle, "jemalloc background thread waiting for its next purge"}
		}
		return Label{}
	}
}

// redisMain labels the main thread: the event loop.
func redisMain(t *procfs.Thread) Label {
	switch t.Syscall {
	case sysEpollWait, sysEpollPwait:
		return Label{Idle, "main thread's event loop"}
	case sysWrite, sysRead, sysFsync, sysFdatasync, sysRecvfrom, sysSendto:
		// A client's socket or the AOF, inside a command's work.
		return Label{IO, "main thread's I/O"}
	case sysFutex:
		if t.SyscallArgs[1]&0x7f == futexWait {
			// Queued on a bio queue's mutex while it submits a job, or
			// behind the I/O thread: another thread's lock.
			return Label{Contention, "main thread queued on a mutex"}
		}
	}
	return Label{}
}
