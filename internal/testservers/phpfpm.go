//go:build linux && amd64

package testservers

import (
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

// PHPFPM is a PHP-FPM master a test started, its pool of worker processes
// behind an nginx that passes it the requests for session.php: a page that
// opens the client's session, as PHP's session handler does (it locks
// the session's file with flock until the request ends), and takes 20 ms.
// The requests of one session queue on that file's lock.
type PHPFPM struct {
	PID int
	// Addr is nginx's; SessionDir holds the session files ("sess_" and
	// the session's id).
	Addr, SessionDir string
	Children         int
}

// sessionPage is the page every request runs.
const sessionPage = `<?php
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
usleep(20000);
echo $_SESSION['n'], "\n";
`

// StartPHPFPM starts Debian's php-fpm in the foreground with a static pool
// of n children on a free port of 127.0.0.1, and one nginx worker in front
// of it; both are stopped by pid when the test ends.
func StartPHPFPM(t testing.TB, n int) *PHPFPM {
	t.Helper()
	bins, _ := filepath.Glob("/usr/sbin/php-fpm*")
	if len(bins) == 0 {
		t.Fatalf("php-fpm is not installed: apt-get install php-fpm (scripts/deps.sh installs it)")
	}
	// As root the pool runs as nobody, who must write the sessions and
	// read the page: a directory of its own under the temporary one (a
	// test's TempDir sits in one only its owner may enter).
	dir, err := os.MkdirTemp("", "ctprof-php-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	sessions := filepath.Join(dir, "sessions")
	require.NoError(t, os.Mkdir(sessions, 0o700))
	require.NoError(t, os.Chmod(sessions, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "session.php"), []byte(sessionPage), 0o644))
	port := freePort(t)
	conf := `[global]
error_log = ` + filepath.Join(dir, "fpm.log") + `
daemonize = no
pid = ` + filepath.Join(dir, "fpm.pid") + `
[www]
user = nobody
group = nogroup
listen = 127.0.0.1:` + strconv.Itoa(port) + `
pm = static
pm.max_children = ` + strconv.Itoa(n) + `
php_admin_value[session.save_path] = ` + sessions + `
php_admin_value[session.use_strict_mode] = 0
`
	confPath := filepath.Join(dir, "fpm.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	// -n: no php.ini, so that the machine's settings do not change the
	// test; the session handler is built in.
	cmd := exec.Command(bins[0], "-F", "-n", "-y", confPath)
	out, done := startOwned(t, cmd, syscall.SIGQUIT) // a graceful stop, which ends the pool
	ngx := startNginx(t, 1, dir, `		location = /session.php {
			fastcgi_pass 127.0.0.1:`+strconv.Itoa(port)+`;
			fastcgi_param SCRIPT_FILENAME `+filepath.Join(dir, "session.php")+`;
			fastcgi_param REQUEST_METHOD $request_method;
			fastcgi_param QUERY_STRING $query_string;
			fastcgi_param HTTP_COOKIE $http_cookie;
		}`)
	p := &PHPFPM{PID: cmd.Process.Pid, Addr: ngx.Addr, SessionDir: sessions, Children: n}
	// Ready when the pool has its children.
	require.Eventually(t, func() bool {
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "fpm.log"))
			t.Fatalf("php-fpm exited: %s%s", out.String(), b)
		default:
		}
		return len(childrenOf(p.PID)) == n
	}, 30*time.Second, 20*time.Millisecond, "php-fpm did not start %d children: %s", n, out.String())
	return p
}

// children lists a process's children (those its main thread forked).
func childrenOf(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	return strings.Fields(string(b))
}

// StartSessionLoad loads the pool with ab: conns keep-alive connections of
// one session (the cookie PHPSESSID=session) for at most seconds; killed
// when the test ends.
func (p *PHPFPM) StartSessionLoad(t testing.TB, session string, conns, seconds int) *Load {
	t.Helper()
	return startLoad(t, exec.Command(lookAB(t), "-q", "-r", "-k", "-C", "PHPSESSID="+session, "-c", strconv.Itoa(conns), "-t", strconv.Itoa(seconds), "-n", "50000000", "http://"+p.Addr+"/session.php"))
}
