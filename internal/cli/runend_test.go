package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
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

	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// signalWriter collects standard error and closes started once ctprof
// says it samples, so a test acts on its target only mid-run.
type signalWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	started chan struct{}
	once    sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ctprof: sampling pid") {
		w.once.Do(func() { close(w.started) })
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// attachWhile runs `ctprof attach --format json args...` and, a second
// after it has begun to sample, calls act. It returns the summary, standard
// error and how long the run took.
func attachWhile(t *testing.T, act func(), args ...string) (map[string]any, string, time.Duration) {
	t.Helper()
	errOut := &signalWriter{started: make(chan struct{})}
	var out bytes.Buffer
	done := make(chan int, 1)
	start := time.Now()
	// The run records its samples, so that the test acts once two are
	// taken, however slow the machine (a fixed second was not always
	// enough on a busy 2-core one for the first).
	rec := filepath.Join(t.TempDir(), "run.ctprof")
	go func() {
		done <- Main(append([]string{"attach", "--format", "json", "--record", rec}, args...), strings.NewReader(""), &out, errOut)
	}()
	select {
	case <-errOut.started:
		waitRecorded(t, rec, 2, done)
		act()
	case code := <-done:
		t.Fatalf("attach ended (%d) before it sampled: %s", code, errOut.String())
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("attach did not end: %s", errOut.String())
	}
	took := time.Since(start)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	return doc, errOut.String(), took
}

// waitRecorded waits until the recording at path holds n complete
// samples (it is written sample by sample), or fails the test if the run
// ends first or a minute passes.
func waitRecorded(t *testing.T, path string, n int, done chan int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if recordedSamples(path) >= n {
			return
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("attach ended (%d) before it recorded %d samples", code, n)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d samples recorded within a minute", n)
		}
	}
}

// recordedSamples counts the complete samples of a recording being
// written.
func recordedSamples(path string) int {
	r, err := record.Open(path)
	if err != nil {
		return 0
	}
	defer r.Close()
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			return n
		}
		n++
	}
}

// startProcess starts a program, killed by pid when the test ends.
func startProcess(t *testing.T, name string, args ...string) int {
	t.Helper()
	cmd := exec.Command(name, args...)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return pid
}

// A target that replaces its program mid-run: the run stops at the exec,
// says so in the summary, and has only the first program's samples.
func TestAttachStopsWhenTheTargetExecs(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "go")
	pid := startProcess(t, "sh", "-c", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; exec sleep 60", flag))
	doc, errOut, took := attachWhile(t, func() { require.NoError(t, os.WriteFile(flag, nil, 0o644)) },
		strconv.Itoa(pid), "--interval", "100ms", "--duration", "60s")
	assert.Less(t, took, 30*time.Second, "the run ends at the exec, not at --duration")
	assert.Contains(t, errOut, fmt.Sprintf("pid %d exec'd another program after", pid))
	assert.Regexp(t, fmt.Sprintf(`pid %d exec'd sleep at \d\d:\d\d:\d\d \(after \d+ samples\); the summary covers sh until then`, pid), fmt.Sprint(doc["warnings"]))
	assert.Equal(t, "sh", doc["target"].(map[string]any)["name"])
	assert.GreaterOrEqual(t, doc["samples"].(float64), float64(2))
	rows, _ := doc["thread_cpu"].([]any)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		assert.NotContains(t, r.(map[string]any)["thread"], "sleep", "a thread of the program exec'd")
	}
}

// A target killed mid-run: the run ends at once and the summary says the
// target exited, after how many samples.
func TestAttachSaysTheTargetWasKilled(t *testing.T) {
	pid := startProcess(t, "sleep", "60")
	doc, errOut, took := attachWhile(t, func() { require.NoError(t, syscall.Kill(pid, syscall.SIGKILL)) },
		strconv.Itoa(pid), "--interval", "100ms", "--duration", "60s")
	assert.Less(t, took, 30*time.Second)
	assert.Contains(t, errOut, fmt.Sprintf("pid %d exited after", pid))
	assert.Regexp(t, fmt.Sprintf(`pid %d exited after \d+ samples; the summary covers sleep until then`, pid), fmt.Sprint(doc["warnings"]))
}

// A JVM that gives no dump and no Flight Recorder data: the run says so
// with the reason, in the text summary, the JSON warnings and the HTML.
func TestAttachSaysWhatAnEmptyRunLacked(t *testing.T) {
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{JVMFlags: []string{"-XX:+DisableAttachMechanism"}}, "4")
	html := filepath.Join(t.TempDir(), "run.html")
	code, out, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--jfr", "--duration", "2s", "--interval", "500ms", "--html", html)
	require.Equal(t, 0, code, errOut)
	// A loaded machine may stretch a tick: the count of samples varies.
	noDump := regexp.MustCompile(`no thread dump in \d+ samples, so no Java threads, locks or stacks: the JVM's attach mechanism is disabled \(-XX:\+DisableAttachMechanism\)`)
	const noJFR = "--jfr: no Flight Recorder data, so no exact lock waits: the JVM cannot be attached to"
	assert.Regexp(t, noDump, out)
	assert.Contains(t, out, noJFR)
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Regexp(t, `no thread dump in \d+ samples, so no Java threads, locks or stacks`, string(page))
	assert.Contains(t, string(page), "--jfr: no Flight Recorder data, so no exact lock waits")

	doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--jfr", "--duration", "2s", "--interval", "500ms")
	warnings := fmt.Sprint(doc["warnings"])
	assert.Regexp(t, noDump, warnings)
	assert.Contains(t, warnings, noJFR)
}

// A run whose samples cost far more than its interval (a dump of 2,000
// threads every 10 ms) took fewer than half the samples asked for, and
// says so with what the samples cost.
func TestAttachSaysSamplesWereStarved(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "2000")
	doc, _ := attachJSON(t, strconv.Itoa(p.PID), "--interval", "10ms", "--duration", "2s", "--pause-budget", "99")
	n := int(doc["samples"].(float64))
	t.Logf("%d samples; warnings: %v", n, doc["warnings"])
	require.Less(t, 2*n, 201, "the test needs samples that cost more than two intervals")
	assert.Regexp(t, fmt.Sprintf(`took %d of the 201 samples asked for \(one every 10ms\): a sample took \S+ on average, the longest \S+`, n),
		fmt.Sprint(doc["warnings"]))
}
