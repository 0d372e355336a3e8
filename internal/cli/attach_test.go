package cli

import (
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// attachJSON runs `ctprof attach` with args and decodes its JSON summary.
func attachJSON(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	code, out, errOut := run(t, "", append([]string{"attach", "--format", "json"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc, errOut
}

func TestAttachNamesAContendedPthreadMutex(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	// A few samples, then retry: on a loaded machine one sweep may catch
	// the contenders between lock calls.
	var lock map[string]any
	var doc map[string]any
	for attempt := 0; attempt < 5 && lock == nil; attempt++ {
		doc, _ = attachJSON(t, strconv.Itoa(p.PID), "--count", "4", "--interval", "100ms")
		for _, l := range doc["locks"].([]any) {
			l := l.(map[string]any)
			if l["kind"] == "futex" && l["class"] == "contended_mutex" && l["waiters"].(float64) >= 2 {
				lock = l
			}
		}
	}
	require.NotNil(t, lock, "no futex hotspot on contended_mutex: %v", doc["locks"])

	assert.Equal(t, float64(4), doc["samples"])
	target := doc["target"].(map[string]any)
	assert.Equal(t, float64(p.PID), target["pid"])
	assert.Equal(t, "native", target["kind"])
	assert.Regexp(t, `^contended_mutex \(mutex_contention\+0x[0-9a-f]+\)$`, lock["symbol"])
	assert.Greater(t, lock["blocked_share"].(float64), 0.0)
	assert.Greater(t, lock["avg_waiters"].(float64), 0.0)

	// The idle pool waits on a condition: reported apart, not as a lock.
	for _, l := range doc["locks"].([]any) {
		assert.NotContains(t, l.(map[string]any)["class"], "work_ready")
	}
	var cond map[string]any
	for _, w := range doc["futex_waits"].([]any) {
		if w := w.(map[string]any); strings.HasPrefix(w["symbol"].(string), "work_ready") {
			cond = w
		}
	}
	require.NotNil(t, cond, "futex_waits: %v", doc["futex_waits"])
	assert.Equal(t, float64(3), cond["waiters"])

	cs := doc["context_switches"].(map[string]any)
	assert.Greater(t, cs["voluntary_per_second"].(float64), 0.0, "contenders block and wake")
	assert.Greater(t, cs["host_per_second"].(float64), 0.0)

	// The finding says it in words, with the symbol.
	var found bool
	for _, f := range doc["findings"].([]any) {
		if strings.Contains(f.(map[string]any)["summary"].(string), "contended_mutex") {
			found = true
		}
	}
	assert.True(t, found, "findings: %v", doc["findings"])
}

func TestAttachCountsConnectedClients(t *testing.T) {
	const clients, perClient = 6, 3
	p := testnative.Start(t, "tcp_server", strconv.Itoa(perClient))
	port := p.Value("PORT")
	for i := 0; i < clients; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	var doc map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		doc, _ = attachJSON(t, strconv.Itoa(p.PID), "--count", "2", "--interval", "100ms")
		conns := doc["connections"].(map[string]any)
		if conns["established"] == float64(clients) && doc["threads"].(float64) >= 1+clients*perClient || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	conns := doc["connections"].(map[string]any)
	assert.Equal(t, float64(clients), conns["established"])
	assert.Equal(t, map[string]any{port: float64(clients)}, conns["by_port"])
	assert.Equal(t, []any{mustAtof(t, port)}, conns["listening"])
	tpc := doc["threads_per_connection"].(map[string]any)
	// 1 main thread + perClient threads per client.
	assert.InDelta(t, float64(1+clients*perClient)/clients, tpc["ratio"], 0.01)

	// --port of another port counts none of them.
	doc, _ = attachJSON(t, strconv.Itoa(p.PID), "--count", "1", "--port", "1")
	assert.Equal(t, float64(0), doc["connections"].(map[string]any)["established"])
}

func mustAtof(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}

func TestAttachEndsCleanlyWhenTheTargetExits(t *testing.T) {
	p := testnative.Start(t, "many_threads", "20", "1500")
	code, out, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--interval", "100ms")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "exited after")
	assert.Contains(t, out, "native")
	assert.Contains(t, out, "sleeper-N", "the pool seen before the exit is summarised")
}

func TestAttachUnderThreadChurn(t *testing.T) {
	p := testnative.Start(t, "thread_churn")
	doc, errOut := attachJSON(t, strconv.Itoa(p.PID), "--count", "30", "--interval", "20ms")
	assert.NotContains(t, errOut, "error")
	assert.Equal(t, float64(30), doc["samples"])
	cs := doc["context_switches"].(map[string]any)
	assert.GreaterOrEqual(t, cs["voluntary_per_second"].(float64), 0.0)
	assert.GreaterOrEqual(t, doc["cpu_percent"].(float64), 0.0)
}

func TestAttachErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"attach"}, 2, "needs a PID or --name"},
		{[]string{"attach", "abc"}, 2, "not a process id"},
		{[]string{"attach", "1", "--interval", "1ms"}, 2, "at least 10ms"},
		{[]string{"attach", "1", "--format", "folded"}, 2, "text or json"},
		{[]string{"attach", strconv.Itoa(1 << 22)}, 1, "no process with pid"},
		{[]string{"attach", "--name", "(unclosed"}, 2, "--name"},
		{[]string{"attach", "--name", "^no-such-process-name-xyz$"}, 1, "no process matches"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, "", tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, errOut, tc.msg)
			assert.True(t, strings.HasPrefix(errOut, "ctprof: "), errOut)
		})
	}
}

func TestAttachByName(t *testing.T) {
	p := testnative.Start(t, "many_threads", "5")
	doc, _ := attachJSON(t, "--name", "^many_threads$", "--count", "1")
	assert.Equal(t, float64(p.PID), doc["target"].(map[string]any)["pid"])
}

// buildCtprof builds the binary once per test run, into a directory other
// users may read (for the permission test); TestMain removes it.
var buildCtprof = sync.OnceValues(func() (string, error) {
	builtBinary = true
	dir, err := os.MkdirTemp("", "ctprof-bin-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ctprof")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ctprof").CombinedOutput()
	if err != nil {
		return "", &exec.Error{Name: "go build: " + string(out), Err: err}
	}
	return bin, nil
})

// Run as an unprivileged user against a root process, ctprof reads what it
// may and says once, in the summary, what was missing and how to get it.
func TestAttachWithoutPrivilegesSaysWhatIsMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test starts ctprof as another user and needs root (CI runs as root)")
	}
	bin, err := buildCtprof()
	require.NoError(t, err)
	p := testnative.Start(t, "mutex_contention", "3", "2", "2000")

	cmd := exec.Command(bin, "attach", strconv.Itoa(p.PID), "--count", "2", "--interval", "100ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "syscall", "says the system calls could not be read")
	assert.Contains(t, out, "/proc/<pid>/fd", "says the connections could not be read")
	assert.Contains(t, out, "run ctprof as root or as the target's user")
	assert.Contains(t, out, "contender-N", "still summarises what it could read")
}

func TestPsListsProcessesWithThreadsAndConnections(t *testing.T) {
	p := testnative.Start(t, "tcp_server", "1")
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", p.Value("PORT")))
	require.NoError(t, err)
	defer c.Close()
	var row map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for row == nil || row["established"] != float64(1) {
		if time.Now().After(deadline) {
			t.Fatalf("ps row: %v", row)
		}
		code, out, errOut := run(t, "", "ps", "--format", "json", "--all")
		require.Equal(t, 0, code, errOut)
		var rows []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		for _, r := range rows {
			if r["pid"] == float64(p.PID) {
				row = r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, false, row["jvm"])
	assert.GreaterOrEqual(t, row["threads"].(float64), 2.0)

	code, out, _ := run(t, "", "ps")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "PID")
	assert.Contains(t, out, strconv.Itoa(p.PID))
}

// The market-data story: a server that runs a fixed number of threads per
// connected user, most of them waking every 50 ms. As users connect during
// the run, ctprof must find the threads added per connection (within 10 %),
// the pool that grows with them, and the polling period (within 20 %).
// Natively (usleep in a loop) and on a JVM (Object.wait(50) on a shared
// monitor).
func TestAttachMarketDataStory(t *testing.T) {
	const perClient = 21
	t.Run("native", func(t *testing.T) {
		p := testnative.Start(t, "tcp_server", strconv.Itoa(perClient))
		marketDataStory(t, p.PID, p.Value("PORT"), perClient, "session-poll")
	})
	t.Run("jvm", func(t *testing.T) {
		p := testjvm.Start(t, testjvm.JDK17(t), "SessionServer", strconv.Itoa(perClient))
		m := regexp.MustCompile(`(?m)^PORT (\d+)`).FindSubmatch(p.Log())
		require.NotNil(t, m, "no PORT line: %s", p.Log())
		marketDataStory(t, p.PID, string(m[1]), perClient, "sess-N-poll-N")
	})
}

func marketDataStory(t *testing.T, pid int, port string, perClient int, pollPool string) {
	const clients = 8
	dial := func() {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	dial()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < clients; i++ {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
			}
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	doc, _ := attachJSON(t, strconv.Itoa(pid), "--count", "20", "--interval", "250ms")
	close(stop)
	<-done

	tpc := doc["threads_per_connection"].(map[string]any)
	require.Contains(t, tpc, "slope", "connections changed during the run: %v", tpc)
	assert.InDelta(t, perClient, tpc["slope"].(float64), 0.1*float64(perClient), "threads added per connection, within 10 %%")
	assert.Greater(t, tpc["r2"].(float64), 0.9)
	var grows bool
	for _, g := range tpc["growing_pools"].([]any) {
		if g.(map[string]any)["pool"] == pollPool {
			grows = true
			assert.InDelta(t, perClient-1, g.(map[string]any)["slope"].(float64), 0.1*float64(perClient))
		}
	}
	assert.True(t, grows, "growing pools: %v", tpc["growing_pools"])

	var wake map[string]any
	for _, w := range doc["wakeups"].([]any) {
		if w.(map[string]any)["pool"] == pollPool {
			wake = w.(map[string]any)
		}
	}
	require.NotNil(t, wake, "wakeups: %v", doc["wakeups"])
	t.Logf("threads per connection %.2f (want %d), polling period %.1f ms (want 50)", tpc["slope"], perClient, wake["period_ms"])
	assert.InDelta(t, 50, wake["period_ms"].(float64), 10, "the polling period, within 20 %%")

	findings := map[string]map[string]any{}
	for _, f := range doc["findings"].([]any) {
		f := f.(map[string]any)
		findings[f["kind"].(string)] = f
	}
	require.Contains(t, findings, "thread-per-connection", "findings: %v", doc["findings"])
	f := findings["thread-per-connection"]
	assert.InDelta(t, perClient, f["threads_per_connection"].(float64), 0.1*float64(perClient))
	assert.Equal(t, pollPool, f["pool"])
	require.Contains(t, findings, "wakeup-storm", "findings: %v", doc["findings"])
	f = findings["wakeup-storm"]
	assert.InDelta(t, 0.050, f["period_seconds"].(float64), 0.010)
	assert.GreaterOrEqual(t, f["threads"].(float64), float64(perClient-1))
}

func TestAttachSeesCPUSaturation(t *testing.T) {
	// Prioritized: a busy neighbour in another session would otherwise
	// take half of the CPUs under the kernel's fair share between sessions.
	p := testnative.StartWith(t, testnative.Options{Prioritized: true}, "spinners", "6")
	doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--count", "6", "--interval", "250ms")
	sc := doc["scheduling"].(map[string]any)
	assert.Greater(t, sc["runnable_avg"].(float64), 2.0, "6 spinners on 2 CPUs")
	assert.Greater(t, sc["run_queue_wait_share"].(float64), 0.3)
	var found bool
	for _, f := range doc["findings"].([]any) {
		if f.(map[string]any)["kind"] == "cpu-saturation" {
			found = true
		}
	}
	assert.True(t, found, "findings: %v", doc["findings"])
	use := doc["cpu_use"].(map[string]any)
	assert.Greater(t, use["share_of_allowed"].(float64), 0.5)
}

// lineWatcher is an io.Writer that remembers output and reports the first
// match of a pattern, for tests that must act while a command runs.
type lineWatcher struct {
	mu    sync.Mutex
	buf   strings.Builder
	re    *regexp.Regexp
	found chan string
}

func newLineWatcher(pattern string) *lineWatcher {
	return &lineWatcher{re: regexp.MustCompile(pattern), found: make(chan string, 1)}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := w.re.FindStringSubmatch(w.buf.String()); m != nil {
		select {
		case w.found <- m[len(m)-1]:
		default:
		}
	}
	return len(p), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestAttachServesMetricsWhileSampling(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "2", "3000")
	errOut := newLineWatcher(`serving metrics on http://([0-9.:]+)/metrics`)
	var out strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"attach", strconv.Itoa(p.PID), "--interval", "100ms", "--count", "60", "--listen", "127.0.0.1:0"}, strings.NewReader(""), &out, errOut)
	}()
	var addr string
	select {
	case addr = <-errOut.found:
	case <-time.After(30 * time.Second):
		t.Fatalf("no listen address; stderr: %s", errOut.String())
	}
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(body, `ctprof_lock_blocked_threads{`) || !strings.Contains(body, "contended_mutex") {
		require.True(t, time.Now().Before(deadline), "metrics never showed the mutex:\n%s", body)
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Contains(t, body, fmt.Sprintf(`ctprof_up{pid="%d",target="mutex_contentio"} 1`, p.PID))
	require.Equal(t, 0, <-done, errOut.String())
	assert.Contains(t, out.String(), "contended_mutex", "the summary still prints")
	_, err := http.Get("http://" + addr + "/metrics")
	assert.Error(t, err, "the server stops with the run")

	code, _, errText := run(t, "", "attach", strconv.Itoa(p.PID), "--web.config.file", "x.yml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errText, "needs --listen")
}

// The synchronized-singleton story on a live JVM: the monitor, the site,
// the owner's frame, the serialized pool, CPU use against the CPUs allowed,
// Java threads joined with OS threads, and the pause ctprof caused.
func TestAttachJVMSynchronizedSingleton(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			// Prioritized: its one running thread uses about a core however
			// busy the rest of the machine is.
			p := testjvm.StartWith(t, jdk, "SyncSingleton", testjvm.Options{Prioritized: true}, "8")
			doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--count", "8", "--interval", "250ms")
			target := doc["target"].(map[string]any)
			assert.Equal(t, "jvm", target["kind"])
			assert.Equal(t, "SyncSingleton", target["name"])
			require.NotEmpty(t, doc["locks"])
			lock := doc["locks"].([]any)[0].(map[string]any)
			assert.Equal(t, "monitor", lock["kind"])
			assert.Equal(t, "SyncSingleton", lock["class"])
			assert.Equal(t, "SyncSingleton.handle(SyncSingleton.java:29)", lock["wait_frame"])
			assert.GreaterOrEqual(t, lock["avg_waiters"].(float64), 4.0)
			assert.Positive(t, lock["blocked_thread_seconds"].(float64))

			var ser map[string]any
			for _, f := range doc["findings"].([]any) {
				if f.(map[string]any)["kind"] == "serialization" {
					ser = f.(map[string]any)
				}
			}
			require.NotNil(t, ser, "findings: %v", doc["findings"])
			assert.Contains(t, ser["summary"], `serializes pool "request-N"`)
			use := doc["cpu_use"].(map[string]any)
			assert.InDelta(t, 1.0, use["cores_used"].(float64), 0.35, "one thread at a time runs")

			joined := 0
			for _, r := range doc["thread_cpu"].([]any) {
				r := r.(map[string]any)
				if strings.HasPrefix(r["thread"].(string), "request-") {
					joined++
					assert.NotEmpty(t, r["java_state"], "a Java thread carries its Java state beside its OS figures")
					assert.Positive(t, r["tid"])
				}
			}
			// The table holds the busiest 20 threads; the owner is among them.
			assert.Positive(t, joined, "request threads joined with their OS threads")
			cost := doc["sample_cost"].(map[string]any)
			assert.Positive(t, cost["dumps"])
			assert.Contains(t, cost, "target_pause_seconds")
			jvmDoc := doc["jvm"].(map[string]any)
			assert.GreaterOrEqual(t, jvmDoc["live_threads"].(float64), 9.0)
		})
	}
}

func TestAttachJVMWithAttachDisabled(t *testing.T) {
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{JVMFlags: []string{"-XX:+DisableAttachMechanism"}}, "4")
	doc, errOut := attachJSON(t, strconv.Itoa(p.PID), "--count", "3", "--interval", "200ms")
	assert.Equal(t, "jvm", doc["target"].(map[string]any)["kind"])
	assert.Equal(t, float64(0), doc["dumps"])
	assert.Contains(t, fmt.Sprint(doc["warnings"]), "attach mechanism is disabled", "stderr: %s", errOut)
	assert.Contains(t, doc, "jvm", "hsperfdata counters still read")
	assert.False(t, p.Exited())
}

func TestAttachJVMDumpToFileMode(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "SyncSingleton", "4")
	doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--count", "3", "--interval", "300ms", "--dump-mode", "file")
	assert.Positive(t, doc["dumps"])
	methods := doc["sample_cost"].(map[string]any)["dump_methods"].(map[string]any)
	assert.Contains(t, methods, "dump_to_file")
	require.NotEmpty(t, doc["locks"])
	assert.Equal(t, "SyncSingleton", doc["locks"].([]any)[0].(map[string]any)["class"])

	code, _, errText := run(t, "", "attach", strconv.Itoa(p.PID), "--dump-mode", "stream")
	assert.Equal(t, 2, code)
	assert.Contains(t, errText, "--dump-mode")
}
