//go:build linux && amd64

package testservers

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Nginx is an nginx master a test started, with its workers: a server made
// of processes, each worker an event loop (epoll_wait on its listening
// and client sockets).
type Nginx struct {
	PID     int
	Addr    string
	Workers int
	cmd     *exec.Cmd
	done    <-chan struct{}
	out     *syncBuffer
}

// StartNginx starts Debian's nginx in the foreground on 127.0.0.1 and a
// free port with workers worker processes, serving a small file, and
// stops it by its pid when the test ends.
func StartNginx(t testing.TB, workers int) *Nginx {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte(strings.Repeat("ctprof ", 100)), 0o644))
	return startNginx(t, workers, dir, "")
}

// startNginx starts nginx over root (its temporary files there too), with
// locations (nginx configuration) in its server beside the files.
func startNginx(t testing.TB, workers int, dir, locations string) *Nginx {
	t.Helper()
	bin := "/usr/sbin/nginx"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("nginx is not installed: apt-get install nginx (scripts/deps.sh installs it)")
	}
	port := freePort(t)
	conf := `daemon off;
master_process on;
worker_processes ` + strconv.Itoa(workers) + `;
pid ` + filepath.Join(dir, "nginx.pid") + `;
error_log ` + filepath.Join(dir, "error.log") + ` warn;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path ` + dir + `;
	proxy_temp_path ` + dir + `;
	fastcgi_temp_path ` + dir + `;
	uwsgi_temp_path ` + dir + `;
	scgi_temp_path ` + dir + `;
	server {
		listen 127.0.0.1:` + strconv.Itoa(port) + `;
		root ` + dir + `;
` + locations + `
	}
}
`
	// As root the workers run as nobody, who must reach the files.
	require.NoError(t, os.Chmod(dir, 0o755))
	confPath := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	cmd := exec.Command(bin, "-c", confPath, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	n := &Nginx{Addr: "127.0.0.1:" + strconv.Itoa(port), Workers: workers, cmd: cmd}
	n.out, n.done = startOwned(t, cmd, syscall.SIGQUIT) // a graceful stop, which ends the workers
	n.PID = cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", n.Addr, time.Second)
		if err == nil {
			c.Close()
			return n
		}
		select {
		case <-n.done:
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %s%s", n.out.String(), b)
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "nginx did not accept connections on %s: %v", n.Addr, err)
	}
}

// lookAB is ab, Apache's HTTP load generator, or the test fails saying
// which package to install.
func lookAB(t testing.TB) string {
	t.Helper()
	ab, err := exec.LookPath("ab")
	if err != nil {
		t.Fatalf("ab is not installed: apt-get install apache2-utils (scripts/deps.sh installs it)")
	}
	return ab
}

// StartAB loads addr with ab: conns keep-alive connections for at most
// seconds; killed when the test ends.
func StartAB(t testing.TB, addr string, conns, seconds int) *Load {
	t.Helper()
	return startLoad(t, exec.Command(lookAB(t), "-q", "-r", "-k", "-c", strconv.Itoa(conns), "-t", strconv.Itoa(seconds), "-n", "50000000", "http://"+addr+"/index.html"))
}
