package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// syncBuffer is a child's output, read while the child writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// followChild is ctprof running in the background, its output read as it
// comes.
type followChild struct {
	t           *testing.T
	cmd         *exec.Cmd
	out, errOut syncBuffer
	done        chan struct{}
	werr        error
}

func startFollowChild(t *testing.T, stdin io.Reader, args ...string) *followChild {
	t.Helper()
	bin, err := buildCtprof()
	require.NoError(t, err)
	c := &followChild{t: t, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	c.cmd.Stdin = stdin
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	require.NoError(t, c.cmd.Start())
	go func() { c.werr = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitOut polls the child's standard output until cond holds, for at most
// timeout, and returns how long that took.
func (c *followChild) waitOut(what string, timeout time.Duration, cond func(out string) bool) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		if cond(c.out.String()) {
			return time.Since(start)
		}
		select {
		case <-c.done:
			if cond(c.out.String()) {
				return time.Since(start)
			}
			c.t.Fatalf("ctprof exited (%v) before %s\nstdout:\n%s\nstderr:\n%s", c.werr, what, c.out.String(), c.errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("after %s ctprof has not shown %s\nstdout:\n%s\nstderr:\n%s", timeout, what, c.out.String(), c.errOut.String())
		}
	}
}

// stop sends sig and returns the exit code and the peak RSS.
func (c *followChild) stop(sig syscall.Signal) (int, int64) {
	c.t.Helper()
	require.NoError(c.t, c.cmd.Process.Signal(sig))
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, for the failure
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
		}
		c.t.Fatalf("ctprof did not end within 60 s of %v\nstderr:\n%s", sig, c.errOut.String())
	}
	code := 0
	if ee, ok := c.werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(c.t, c.werr)
	}
	return code, c.cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// jsonEvents decodes the JSON Lines of analyze --follow --format json.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "every line is one JSON object: %q", sc.Text())
		evs = append(evs, ev)
	}
	return evs
}

func countDumpEvents(out string) int { return strings.Count(out, `{"event":"dump"`) }

// timedDumpEvents counts the dump records with a timestamp: the kill -3
// dumps (a log's quoted lines can pass for headerless thread lines, which
// the reader reads as a dump without a time, as analyze does).
func timedDumpEvents(out string) int {
	return strings.Count(out, `{"event":"dump"`) - strings.Count(out, `"time":null`)
}

// A real JVM logging to a file, followed from the file and, through
// tail -F, from a pipe: each of three kill -3 dumps, two seconds apart,
// shows within a few seconds with the monitor its request threads queue
// on; SIGINT and SIGTERM end them with exit 0, the summary of the three
// dumps and the HTML report.
func TestAnalyzeFollowLiveJVM(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	dir := t.TempDir()
	html := filepath.Join(dir, "follow.html")
	file := startFollowChild(t, nil, "analyze", "--follow", "--html", html, p.LogPath())

	tail := exec.Command("tail", "-n", "+1", "-F", p.LogPath())
	tailOut, err := tail.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, tail.Start())
	t.Cleanup(func() { _ = tail.Process.Kill(); _ = tail.Wait() })
	pipe := startFollowChild(t, tailOut, "analyze", "--follow", "--format", "json", "-")

	var last time.Time
	for k := 1; k <= 3; k++ {
		if wait := time.Until(last.Add(2 * time.Second)); wait > 0 {
			time.Sleep(wait) // the scenario: kill -3 two seconds apart
		}
		last = time.Now()
		p.SigQuit(t)
		file.waitOut(fmt.Sprintf("dump %d from the file", k), 5*time.Second, func(out string) bool {
			return strings.Contains(out, fmt.Sprintf("dump %d of %s", k, p.LogPath()))
		})
		d1 := time.Since(last)
		pipe.waitOut(fmt.Sprintf("dump %d from the pipe", k), 5*time.Second-d1, func(out string) bool { return countDumpEvents(out) >= k })
		t.Logf("dump %d shown %.1fs (file) and by %.1fs (pipe) after kill -3", k, d1.Seconds(), time.Since(last).Seconds())
	}
	text := file.out.String()
	assert.NotContains(t, text, "dump 4 of")
	assert.Regexp(t, `(?s)dump 1 of .*waiting now: +[1-8] on monitor SyncSingleton at SyncSingleton\.handle\(.*dump 2 of .*waiting now: +[1-8] on monitor SyncSingleton.*dump 3 of .*waiting now: +[1-8] on monitor SyncSingleton`, text, "each dump shows the hot monitor and its waiters now")
	assert.Equal(t, 3, countDumpEvents(pipe.out.String()))

	code, _ := file.stop(syscall.SIGINT)
	assert.Equal(t, 0, code, file.errOut.String())
	text = file.out.String()
	assert.Contains(t, text, "3 thread dumps from ", "the summary of every dump seen follows")
	assert.Contains(t, text, "RESOURCES")
	assert.Contains(t, file.errOut.String(), "wrote the HTML report to "+html)
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), "SyncSingleton")

	code, _ = pipe.stop(syscall.SIGTERM)
	assert.Equal(t, 0, code, pipe.errOut.String())
	evs := jsonEvents(t, pipe.out.String())
	require.Len(t, evs, 4)
	for i, ev := range evs[:3] {
		assert.Equal(t, "dump", ev["event"])
		assert.EqualValues(t, i+1, ev["dump"])
		assert.NotNil(t, ev["time"], "a kill -3 dump has its timestamp")
		res := ev["resources"].([]any)
		require.NotEmpty(t, res)
		top := res[0].(map[string]any)
		assert.Equal(t, "SyncSingleton", top["class"])
		assert.Positive(t, top["current_waiters"])
	}
	assert.NotEmpty(t, evs[0]["appeared"], "the first dump brings the lock finding")
	assert.Equal(t, "summary", evs[3]["event"])
	assert.EqualValues(t, 3, evs[3]["summary"].(map[string]any)["dumps"])
}

// A JVM that logs all the while (LogNoise: a burst of log lines every
// 20 ms, quoted lines among them) never leaves its log quiet: each kill -3
// dump still shows within a few seconds of its trailer.
func TestAnalyzeFollowBusyLog(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "LogNoise")
	c := startFollowChild(t, nil, "analyze", "--follow", "--format", "json", p.LogPath())
	var last time.Time
	for k := 1; k <= 3; k++ {
		if wait := time.Until(last.Add(2 * time.Second)); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		p.SigQuit(t)
		d := c.waitOut(fmt.Sprintf("dump %d", k), 5*time.Second, func(out string) bool { return timedDumpEvents(out) >= k })
		t.Logf("dump %d shown %.1fs after kill -3", k, d.Seconds())
	}
	code, _ := c.stop(syscall.SIGINT)
	assert.Equal(t, 0, code, c.errOut.String())
	evs := jsonEvents(t, c.out.String())
	require.NotEmpty(t, evs)
	assert.Equal(t, "summary", evs[len(evs)-1]["event"])
	assert.Equal(t, 3, timedDumpEvents(c.out.String()))
}

// A log written by hand from real dumps: a rotation (the file renamed, a
// new one at the path) and a truncation mid-run, each dump shown as it
// completes; SIGINT gives exit 0, the summary of all dumps with what
// happened to the file, and the output files.
func TestAnalyzeFollowRotationAndTruncation(t *testing.T) {
	dumps := sharedDumps(t)
	a, err := os.ReadFile(filepath.Join(dumps, "jdk25-windows-jcmd-pid-preamble-minecraft-lattice.txt"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dumps, "jdk17-selenium-cdp-deadlock-parking-not-jvm-detected.txt"))
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendTo := func(parts ...[]byte) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		require.NoError(t, err)
		for _, p := range parts {
			_, err := f.Write(p)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
	appendTo([]byte("INFO starting\n"))
	folded := filepath.Join(dir, "stacks.folded")
	c := startFollowChild(t, nil, "analyze", "--follow", "--format", "json", "--folded", folded, path)
	events := func(n int) func(string) bool { return func(out string) bool { return countDumpEvents(out) >= n } }

	appendTo(a, []byte("INFO after the dump\n"))
	c.waitOut("the first dump", 5*time.Second, events(1))

	require.NoError(t, os.Rename(path, path+".1"))
	appendTo([]byte("INFO new file\n"), b)
	c.waitOut("the dump of the new file", 5*time.Second, events(2))

	require.NoError(t, os.Truncate(path, 0))
	appendTo([]byte("INFO restarted\n"), a) // shorter than what was read (a is smaller than b)
	c.waitOut("the dump written after the truncation", 5*time.Second, events(3))

	code, _ := c.stop(syscall.SIGINT)
	require.Equal(t, 0, code, c.errOut.String())
	evs := jsonEvents(t, c.out.String())
	require.Len(t, evs, 4)
	assert.EqualValues(t, 86, evs[1]["threads"])
	assert.Equal(t, evs[0]["threads"], evs[2]["threads"])
	sum := evs[3]["summary"].(map[string]any)
	assert.EqualValues(t, 3, sum["dumps"])
	warnings := fmt.Sprint(sum["warnings"])
	assert.Contains(t, warnings, "a new file replaced it once (rotation)")
	assert.Contains(t, warnings, "it was truncated once")
	st, err := os.Stat(folded)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}

// A followed stdout log of gigabytes (log lines, exception traces and a
// real dump, again and again, made as it is read) stays within the memory
// of one dump and the Aggregator; after the writer stops, the last dump
// shows, and SIGINT sums up every dump.
func TestAnalyzeFollowLongLogStaysBounded(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join(sharedDumps(t), "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	require.NoError(t, err)
	if !bytes.HasSuffix(dump, []byte("\n")) {
		dump = append(dump, '\n')
	}
	var logBlock bytes.Buffer
	for i := 0; logBlock.Len() < 5<<20; i++ {
		fmt.Fprintf(&logBlock, "2026-11-23 12:00:00.%03d INFO  [http-nio-8080-exec-%d] c.e.Service request %d served in 12 ms\n", i%1000, i%200, i)
		if i%100 == 0 {
			logBlock.WriteString("java.lang.IllegalStateException: boom\n\tat com.example.Service.call(Service.java:42)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)\n")
		}
	}
	const total = 2 << 30
	// An OS pipe, not io.Pipe: the child reads it itself, and its end is not
	// waited for (exec.Cmd waits for the copy from an io.Reader).
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { pw.Close() })
	c := startFollowChild(t, pr, "analyze", "--follow", "--format", "json", "-")
	pr.Close()
	written := make(chan int, 1)
	go func() {
		n, dumps := 0, 0
		for n < total {
			if _, err := pw.Write(logBlock.Bytes()); err != nil {
				break
			}
			if _, err := pw.Write(dump); err != nil {
				break
			}
			n += logBlock.Len() + len(dump)
			dumps++
		}
		written <- dumps // the pipe stays open: the log is still "live"
	}()
	var dumps int
	select {
	case dumps = <-written:
	case <-time.After(10 * time.Minute):
		t.Fatal("the log was not read within 10 minutes")
	}
	c.waitOut("the last dump", 10*time.Second, func(out string) bool { return countDumpEvents(out) >= dumps })
	code, rss := c.stop(syscall.SIGINT)
	require.Equal(t, 0, code, c.errOut.String())
	t.Logf("%d dumps in %d GB, peak RSS %d MB", dumps, total>>30, rss>>20)
	evs := jsonEvents(t, c.out.String())
	require.Len(t, evs, dumps+1)
	sum := evs[dumps]["summary"].(map[string]any)
	assert.EqualValues(t, dumps, sum["dumps"])
	deadlocks := sum["deadlocks"].([]any)
	require.NotEmpty(t, deadlocks)
	assert.EqualValues(t, dumps, deadlocks[0].(map[string]any)["dumps"], "each dump keeps its deadlock report")
	assert.Less(t, rss, int64(maxRSS))
}

// top --follow in a real terminal (tmux) shows a followed log's dump (its
// pools of threads, the lock they queue on), refreshes when the next dump
// is appended, and q prints the summary with exit code 0.
func TestTopFollowInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("this test needs tmux (scripts/deps.sh installs it): %v", err)
	}
	dumps := sharedDumps(t)
	first, err := os.ReadFile(filepath.Join(dumps, "jdk17-selenium-cdp-deadlock-parking-not-jvm-detected.txt"))
	require.NoError(t, err)
	second, err := os.ReadFile(filepath.Join(dumps, "jdk8-play-devmode-monitor-contention.txt"))
	require.NoError(t, err)
	bin, err := buildCtprof()
	require.NoError(t, err)
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	require.NoError(t, os.WriteFile(log, append([]byte("INFO starting\n"), first...), 0o644))

	s := &tmuxSession{t: t, socket: fmt.Sprintf("ctprof-top-follow-test-%d", os.Getpid()), name: "topfollow"}
	command := fmt.Sprintf("NO_COLOR=1 %s top --follow %s; echo EXIT=$?; sleep 120", bin, log)
	s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "40", "-c", dir, command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	sc := s.waitFor("the dump's threads and lock", 15*time.Second, containsAll("following "+log, "1 dump", "threads 86", "CDP Connection", "ReentrantReadWriteLock"))
	t.Logf("first screen:\n%s", sc)

	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(second)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s.waitFor("the appended dump", 10*time.Second, containsAll("2 dumps", "threads 44", "DevServerStart"))

	s.send("q")
	end := s.waitFor("the exit code", 20*time.Second, containsAll("EXIT="))
	assert.Contains(t, end, "EXIT=0")
	assert.Contains(t, end, "PlayDefaultUpstreamHandler", "the summary follows the view")
}

func TestFollowUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--follow", "a.log", "b.log"}, "--follow takes one FILE"},
		{[]string{"analyze", "--follow", "--format", "folded", "a.log"}, "--follow prints text or json"},
		{[]string{"top", "--follow", "a.log", "123"}, "give no PID or --name"},
		{[]string{"top", "--follow", "a.log", "--name", "java"}, "give no PID or --name"},
	} {
		code, _, errOut := run(t, "", tt.args...)
		assert.Equal(t, ExitUsage, code, "%v", tt.args)
		assert.Contains(t, errOut, tt.want)
	}
	code, _, errOut := run(t, "", "analyze", "--follow", filepath.Join(t.TempDir(), "missing.log"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, errOut, "no such file")
}
