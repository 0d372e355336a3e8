package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testservers"
)

func TestTopRefusesWithoutATerminal(t *testing.T) {
	// Standard output is a buffer here, as in a pipe or a file.
	code, out, errOut := run(t, "", "top", strconv.Itoa(os.Getpid()))
	assert.Equal(t, ExitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "ctprof top needs a terminal")
	assert.Contains(t, errOut, "ctprof attach")
}

func TestTopUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"top"}, "top needs a PID or --name"},
		{"two pids", []string{"top", "1", "2"}, "top takes one PID"},
		{"pid and name", []string{"top", "1", "--name", "java"}, "not both"},
		{"not a pid", []string{"top", "java"}, `"java" is not a process id`},
		{"interval too short", []string{"top", "1", "--interval", "10ms"}, "--interval must be at least 100ms"},
		{"bad dump mode", []string{"top", "1", "--dump-mode", "x"}, "--dump-mode"},
		{"html is a directory", []string{"top", "1", "--html", os.TempDir()}, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, "", tt.args...)
			assert.NotEqual(t, ExitOK, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

// tmuxSession is one detached tmux session on a server of its own (its
// own socket), so the test touches no other tmux and kills only its own.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux %v: %s", args, out)
	return string(out)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

func (s *tmuxSession) send(keys ...string) {
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// waitFor polls the pane until cond holds, for at most timeout.
func (s *tmuxSession) waitFor(what string, timeout time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		sc := s.screen()
		if cond(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %s the screen does not show %s:\n%s", timeout, what, sc)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func containsAll(subs ...string) func(string) bool {
	return func(sc string) bool {
		for _, s := range subs {
			if !strings.Contains(sc, s) {
				return false
			}
		}
		return true
	}
}

// TestTopInATerminal runs ctprof top in a real terminal (tmux) on a JVM
// whose request threads queue on one synchronized singleton.
func TestTopInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("this test needs tmux (scripts/deps.sh installs it): %v", err)
	}
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	bin, err := buildCtprof()
	require.NoError(t, err)
	dir := t.TempDir()
	html := filepath.Join(dir, "run.html")

	s := &tmuxSession{t: t, socket: fmt.Sprintf("ctprof-top-test-%d", os.Getpid()), name: "top"}
	// The shell prints ctprof's exit code, then keeps the pane open to be read.
	command := fmt.Sprintf("NO_COLOR=1 %s top %d --html %s; echo EXIT=$?; sleep 120", bin, p.PID, html)
	s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "40", "-c", dir, command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	first := s.waitFor("the hot monitor and its pool", 30*time.Second, containsAll("SyncSingleton", "monitor", "request-N", "OWNER", "WAIT SITE"))
	t.Logf("first screen:\n%s", first)
	s.waitFor("a refresh", 10*time.Second, func(sc string) bool { return sc != first && strings.Contains(sc, "SyncSingleton") })

	s.send("Enter")
	owner := s.waitFor("the lock's owner and its frames", 10*time.Second, containsAll("Lock  monitor SyncSingleton", "Owner: request-", "Owner's frames while holding it", "SyncSingleton.handle("))
	t.Logf("lock screen:\n%s", owner)

	s.send("Escape")
	s.waitFor("the panes again", 10*time.Second, containsAll("▸ Locks"))
	s.send("r")
	s.waitFor("the report written", 30*time.Second, containsAll("wrote the HTML report to "+html))
	b, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(b), "SyncSingleton")

	s.send("q")
	end := s.waitFor("the exit code", 20*time.Second, containsAll("EXIT="))
	assert.Contains(t, end, "EXIT=0")
	assert.Contains(t, end, "ctprof: wrote the HTML report to "+html)
	assert.Contains(t, end, "SyncSingleton", "the summary follows the view")
}

// TestTopOnANativeServerInATerminal runs ctprof top in a real terminal
// (tmux) on Debian's memcached, whose workers queue on its LRU lock: the
// lock pane lists resources (a wait site and a kind of primitive), and
// Enter opens the hottest with its instances and a waiter's stack.
func TestTopOnANativeServerInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("this test needs tmux (scripts/deps.sh installs it): %v", err)
	}
	srv := testservers.StartMemcached(t)
	bin, err := buildCtprof()
	require.NoError(t, err)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("ctprof-top-native-%d", os.Getpid()), name: "top"}
	command := fmt.Sprintf("NO_COLOR=1 %s top %d --interval 100ms; echo EXIT=$?; sleep 120", bin, srv.PID)
	s.tmux("new-session", "-d", "-s", s.name, "-x", "140", "-y", "40", "-c", t.TempDir(), command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	first := s.waitFor("the resources pane with memcached's lock", 30*time.Second,
		containsAll("waiting for: ", "▸ Resources (", "mutex", "memcached+0x", "WAIT SITE", "HOLDERS DO"))
	t.Logf("first screen:\n%s", first)
	assert.NotContains(t, first, "▸ Locks", "a native target's lock pane lists resources")

	s.send("Enter")
	res := s.waitFor("the resource's detail", 10*time.Second, containsAll("Resource  ", "futex words over the run", "Waiting threads: "))
	t.Logf("resource screen:\n%s", res)

	s.send("Escape")
	s.waitFor("the panes again", 10*time.Second, containsAll("▸ Resources"))
	s.send("q")
	end := s.waitFor("the exit code", 20*time.Second, containsAll("EXIT="))
	assert.Contains(t, end, "EXIT=0")
}
