//go:build linux && amd64

package testservers

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Apache httpd's prefork MPM (Debian's apache2 2.4): a parent and
// apachePreforkChildren single-threaded children, each serving one
// connection at a time. With two Listen directives the children take
// turns on the accept mutex (Debian's apr makes it a process-shared,
// priority-inheriting pthread mutex): one of them waits in epoll_wait for
// a connection on either socket with the mutex held, the others wait for
// the mutex. The server's own account of its children is mod_status's
// scoreboard ('_' waiting for a connection, 'W' sending a reply, ...),
// served on the second port.

const apachePreforkChildren = 8

// PreforkServer is a running Apache prefork server.
type PreforkServer struct {
	// PID is the parent's pid: the tree ctprof attaches to.
	PID int
	// Addr serves the document root, StatusURL mod_status's machine-
	// readable page.
	Addr, StatusURL string
}

// StartApachePrefork starts apache2 with the prefork MPM on two free ports
// of 127.0.0.1, waits for its children, and when conns > 0 loads it with
// ab (conns concurrent connections, no keep-alive: every request takes a
// turn on the accept mutex) until the test ends. mutex is the accept
// mutex's mechanism (Apache's Mutex directive: "flock" or "fcntl", file
// locks on a file in the server's directory), "" for Debian's default.
func StartApachePrefork(t testing.TB, conns int, mutex string) *PreforkServer {
	t.Helper()
	bin, ab := apacheBinaries(t)
	dir := apacheDir(t)
	port, statusPort := freePort(t), freePort(t)
	conf := filepath.Join(dir, "httpd.conf")
	require.NoError(t, os.WriteFile(conf, []byte(apachePreforkConfig(dir, port, statusPort, mutex)), 0o644))
	cmd, tree, errorLog := startApache2(t, bin, dir, conf, true)
	s := &PreforkServer{
		PID:       cmd.Process.Pid,
		Addr:      net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		StatusURL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(statusPort)) + "/server-status?auto",
	}
	// Every child up: all but the one answering the status request wait
	// for a connection.
	tpoolWaitFor(t, tree, 60*time.Second, "apache2's prefork children", errorLog, func() bool {
		st, err := s.Status()
		return err == nil && strings.Count(st.Scoreboard, "_") >= apachePreforkChildren-1
	})
	tree.adopt()
	if conns > 0 {
		tree.load(t, exec.Command(ab, "-q", "-r", "-c", strconv.Itoa(conns), "-t", "600", "-n", "20000000", "http://"+s.Addr+"/small.txt"))
		tpoolWaitFor(t, tree, 60*time.Second, "ab's requests served", errorLog, func() bool {
			st, err := s.Status()
			return err == nil && st.Accesses > 500
		})
	}
	return s
}

// PreforkStatus is what mod_status says: the scoreboard, a character per
// slot ('_' a child waiting for a connection, 'W' one sending a reply,
// '.' an empty slot; the child answering the status request is one 'W'),
// and the requests served so far.
type PreforkStatus struct {
	Scoreboard string
	Accesses   int
}

// Status reads mod_status's machine-readable page.
func (s *PreforkServer) Status() (PreforkStatus, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(s.StatusURL)
	if err != nil {
		return PreforkStatus{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return PreforkStatus{}, err
	}
	var st PreforkStatus
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Scoreboard: "); ok {
			st.Scoreboard = v
		}
		if v, ok := strings.CutPrefix(l, "Total Accesses: "); ok {
			st.Accesses, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if st.Scoreboard == "" {
		return st, fmt.Errorf("no scoreboard in %s", s.StatusURL)
	}
	return st, nil
}

// apachePreforkConfig is a minimal httpd.conf for the prefork MPM: a fixed
// number of children (no spares started or stopped meanwhile), two
// listeners (hence the accept mutex), mod_status on the second.
func apachePreforkConfig(dir string, port, statusPort int, mutex string) string {
	conf := apacheConfigHead(dir, "prefork", port)
	if mutex != "" {
		conf += fmt.Sprintf("Mutex %s:%s mpm-accept\n", mutex, dir)
	}
	return conf + fmt.Sprintf(`Listen 127.0.0.1:%[2]d
LoadModule status_module %[3]smod_status.so
ExtendedStatus On
StartServers %[4]d
MinSpareServers 1
MaxSpareServers %[4]d
ServerLimit %[4]d
MaxRequestWorkers %[4]d
MaxConnectionsPerChild 0
KeepAlive Off
DocumentRoot %[1]s/htdocs
<Directory %[1]s/htdocs>
  Require all granted
</Directory>
<Location /server-status>
  SetHandler server-status
  Require all granted
</Location>
`, dir, statusPort, apacheModules, apachePreforkChildren)
}
