package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// lockedBuffer is an io.Writer several goroutines may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs `ctprof serve args...` in this process, parsing the flags
// with the real command, on a free port, and returns the metrics URL. The
// run is cancelled (as by Ctrl-C) when the test ends, and must then return
// cleanly.
func startServe(t *testing.T, args ...string) (url string, errOut *lockedBuffer) {
	t.Helper()
	errOut = &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	cmd := NewCmdServe(IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: errOut}, func(o *ServeOptions) error {
		o.onListen = func(a string) { addr <- a }
		go func() { done <- serveRun(ctx, o) }()
		return nil
	})
	cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0"}, args...))
	require.NoError(t, cmd.Execute())
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "serve after Ctrl-C; stderr:\n%s", errOut.String())
			assert.Contains(t, errOut.String(), "ctprof: stopped")
		case <-time.After(15 * time.Second):
			t.Errorf("serve did not stop after cancel; stderr:\n%s", errOut.String())
		}
	})
	select {
	case a := <-addr:
		return "http://" + a + "/metrics", errOut
	case err := <-done:
		t.Fatalf("serve ended before listening: %v\n%s", err, errOut.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not listen; stderr:\n%s", errOut.String())
	}
	return "", nil
}

// scrape fetches and parses the exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// seriesOf returns "name{labels} value" for every series whose pid label
// is pid.
func seriesOf(mfs map[string]*dto.MetricFamily, pid int) map[string]float64 {
	out := map[string]float64{}
	p := strconv.Itoa(pid)
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			match := false
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
				if lp.GetName() == "pid" && lp.GetValue() == p {
					match = true
				}
			}
			if !match {
				continue
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// waitSeries polls the exposition until cond holds for pid's series.
func waitSeries(t *testing.T, url string, pid int, what string, cond func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := seriesOf(scrape(t, url), pid)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: %s: not within 30s; series: %v", pid, what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// namedProcess is a test program started under a name of its own, so
// --name matches it and nothing another test started.
type namedProcess struct {
	pid  int
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

func startNamed(t *testing.T, program, name string, args ...string) *namedProcess {
	t.Helper()
	src := testnative.Build(t, program)
	bin := filepath.Join(t.TempDir(), name)
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &namedProcess{pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "READY" {
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("%s exited before READY", name)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not print READY", name)
	}
	return p
}

// stop kills the program by its pid (our child, not yet reaped) and reaps it.
func (p *namedProcess) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

func uniqueName(t *testing.T, prefix string) string {
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return prefix + hex.EncodeToString(b) // under the kernel's 15-byte comm
}

// Targets that start after serve are picked up (by --name), targets that
// exit are dropped, and an explicit --pid that exits or never existed
// stays as ctprof_up 0.
func TestServePicksUpAndDropsTargets(t *testing.T) {
	name := uniqueName(t, "srvt")
	explicit := startNamed(t, "many_threads", uniqueName(t, "expl"), "2")
	const missing = 1 << 22 // above the kernel's pid_max: never a process
	url, errOut := startServe(t, "--name", "^"+regexp.QuoteMeta(name)+"$", "--pid", strconv.Itoa(explicit.pid),
		"--pid", strconv.Itoa(missing), "--interval", "100ms", "--discovery-interval", "200ms")

	s := waitSeries(t, url, explicit.pid, "explicit pid up", func(s map[string]float64) bool { return len(s) > 1 })
	assert.Equal(t, 1.0, s[fmt.Sprintf("ctprof_up{pid=%d,target=%s}", explicit.pid, explicitName(explicit))])
	s = seriesOf(scrape(t, url), missing)
	assert.Equal(t, map[string]float64{fmt.Sprintf("ctprof_up{pid=%d,target=}", missing): 0}, s)

	// Started after serve: picked up without a restart.
	late := startNamed(t, "many_threads", name, "5")
	up := fmt.Sprintf("ctprof_up{pid=%d,target=%s}", late.pid, name)
	threads := func(s map[string]float64) float64 {
		var n float64
		for k, v := range s {
			if strings.HasPrefix(k, "ctprof_threads{") {
				n += v
			}
		}
		return n
	}
	s = waitSeries(t, url, late.pid, "picked up", func(s map[string]float64) bool { return s[up] == 1 && threads(s) == 6 })
	assert.Equal(t, 5.0, s[fmt.Sprintf("ctprof_pool_threads{pid=%d,pool=sleeper-N,target=%s}", late.pid, name)])

	// It exits: every series of it disappears.
	late.stop()
	waitSeries(t, url, late.pid, "dropped", func(s map[string]float64) bool { return len(s) == 0 })

	// The explicit one exits: only ctprof_up 0 remains.
	explicit.stop()
	s = waitSeries(t, url, explicit.pid, "down", func(s map[string]float64) bool { return len(s) == 1 })
	assert.Equal(t, 0.0, s[fmt.Sprintf("ctprof_up{pid=%d,target=%s}", explicit.pid, explicitName(explicit))])

	log := errOut.String()
	assert.Contains(t, log, fmt.Sprintf("sampling pid %d (%s, native)", late.pid, name))
	assert.Contains(t, log, fmt.Sprintf("pid %d (%s) exited; its series are dropped", late.pid, name))
	assert.Contains(t, log, fmt.Sprintf("exporting ctprof_up{pid=\"%d\"} 0", missing))
}

func explicitName(p *namedProcess) string { return filepath.Base(p.cmd.Path) }

// The exporter serves what the samplers see: one scrape of a contended
// program, with the lock by its symbol.
func TestServeExportsALockHotspot(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	url, _ := startServe(t, "--pid", strconv.Itoa(p.PID), "--interval", "100ms")
	// site is where the waiters wait, from their native stacks
	// ("contender ← start_thread"); taken when the lock is first exported.
	prefix := fmt.Sprintf("ctprof_lock_blocked_threads{lock=futex contended_mutex,pid=%d,site=", p.PID)
	waitSeries(t, url, p.PID, "contended_mutex waiters", func(s map[string]float64) bool {
		for k, v := range s {
			if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, ",target=mutex_contentio}") && v >= 1 {
				return true
			}
		}
		return false
	})
}

func TestServeErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	p := testnative.Start(t, "many_threads", "1")
	pid := strconv.Itoa(p.PID)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"serve"}, 2, "serve needs targets"},
		{[]string{"serve", "123"}, 2, "--pid N, --name REGEX or --java, not arguments"},
		{[]string{"serve", "--pid", "0"}, 2, "not a process id"},
		{[]string{"serve", "--pid", "x"}, 2, "invalid argument"},
		{[]string{"serve", "--name", "(unclosed"}, 2, "--name"},
		{[]string{"serve", "--java", "--interval", "1ms"}, 2, "at least 10ms"},
		{[]string{"serve", "--java", "--top", "0"}, 2, "--top"},
		{[]string{"serve", "--java", "--port", "70000"}, 2, "--port"},
		{[]string{"serve", "--java", "--exact-waits", "on"}, 2, "serve --exact-waits takes auto or off"},
		{[]string{"serve", "--java", "--max-requests", "-1"}, 2, "--max-requests -1"},
		{[]string{"serve", "--java", "--exact-waits", "always"}, 2, "--exact-waits must be auto, on or off"},
		{[]string{"serve", "--pid", pid, "--listen", "nonsense"}, 2, "want host:port"}, // the caller's typo
		{[]string{"serve", "--pid", pid, "--listen", busy.Addr().String()}, 1,
			"ctprof: listen " + busy.Addr().String() + ": address already in use; choose another with --listen\n"},
		{[]string{"serve", "--pid", pid, "--listen", "127.0.0.1:0", "--web.config.file", "/nonexistent/web.yml"}, 1, "web config /nonexistent/web.yml"},
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

// The real binary stops cleanly on Ctrl-C (SIGINT), exit code 0, and never
// harms its target.
func TestServeBinaryStopsOnSIGINT(t *testing.T) {
	// A binary of its own: the shared one of the attach tests is removed
	// by one of them.
	bin := filepath.Join(t.TempDir(), "ctprof")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ctprof").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	p := testnative.Start(t, "many_threads", "2")
	cmd := exec.Command(bin, "serve", "--pid", strconv.Itoa(p.PID), "--listen", "127.0.0.1:0", "--interval", "100ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	lines := make(chan string, 100)
	var all lockedBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&all, sc.Text())
			select {
			case lines <- sc.Text():
			default:
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // our child; no-op once it has exited and been reaped

	var url string
	re := regexp.MustCompile(`serving metrics on (http://\S+/metrics)`)
	for url == "" {
		select {
		case l := <-lines:
			if m := re.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
		case err := <-done:
			t.Fatalf("ctprof serve exited early: %v\n%s", err, all.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("ctprof serve did not say where it listens:\n%s", all.String())
		}
	}
	waitSeries(t, url, p.PID, "sampled", func(s map[string]float64) bool {
		return s[fmt.Sprintf("ctprof_samples_total{pid=%d,target=many_threads}", p.PID)] >= 2
	})
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-done:
		assert.NoError(t, err, "exit status after Ctrl-C; stderr:\n%s", all.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("ctprof serve did not stop on SIGINT:\n%s", all.String())
	}
	assert.Contains(t, all.String(), "ctprof: stopped")
	select {
	case <-p.Done():
		t.Fatal("the target died")
	default:
	}
}

// --java finds a JVM started after serve, by its libjvm mapping, and
// exports its OS threads and pools (Java states arrive with the JVM
// sampler).
func TestServeJavaFindsJVMs(t *testing.T) {
	url, _ := startServe(t, "--java", "--interval", "200ms", "--discovery-interval", "200ms")
	jvm := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton")
	// A JVM is named by its main class, and its thread dumps give Java
	// states and the contended monitor.
	info := fmt.Sprintf("ctprof_target_info{kind=jvm,pid=%d,target=SyncSingleton}", jvm.PID)
	pool := fmt.Sprintf("ctprof_pool_threads{pid=%d,pool=request-N,target=SyncSingleton}", jvm.PID)
	lock := fmt.Sprintf("ctprof_lock_blocked_threads{lock=monitor SyncSingleton,pid=%d,site=SyncSingleton.handle(SyncSingleton.java:29),target=SyncSingleton}", jvm.PID)
	waitSeries(t, url, jvm.PID, "JVM found", func(s map[string]float64) bool { return s[info] == 1 && s[pool] == 8 && s[lock] >= 2 })
}

// Every `ctprof serve` invocation the project ships (Kubernetes manifests,
// the systemd unit, docs/prometheus.md, the command's own examples) parses
// with the real command.
func TestServeDeployExamplesParse(t *testing.T) {
	root := filepath.Join("..", "..")
	var invocations [][]string
	for _, f := range []string{"sidecar.yaml", "daemonset.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy", "kubernetes", f))
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		found := false
		for {
			var doc struct {
				Spec struct {
					Template struct {
						Spec struct {
							HostPID               bool `yaml:"hostPID"`
							ShareProcessNamespace bool `yaml:"shareProcessNamespace"`
							Containers            []struct {
								Name string   `yaml:"name"`
								Args []string `yaml:"args"`
								Env  []struct {
									Name string `yaml:"name"`
								} `yaml:"env"`
								SecurityContext struct {
									Capabilities struct {
										Add []string `yaml:"add"`
									} `yaml:"capabilities"`
								} `yaml:"securityContext"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); err == io.EOF {
				break
			} else {
				require.NoError(t, err, f)
			}
			ps := doc.Spec.Template.Spec
			for _, c := range ps.Containers {
				if c.Name != "ctprof" {
					continue
				}
				found = true
				assert.True(t, ps.HostPID || ps.ShareProcessNamespace, "%s: ctprof must see the JVM's processes", f)
				assert.Contains(t, c.SecurityContext.Capabilities.Add, "SYS_PTRACE", f)
				require.NotEmpty(t, c.Args, f)
				assert.Equal(t, "serve", c.Args[0], f)
				assert.Contains(t, strings.Join(c.Args, " "), "--listen :9901", "%s: a pod is scraped over the pod network", f)
				invocations = append(invocations, c.Args[1:])
				var env []string
				for _, e := range c.Env {
					env = append(env, e.Name)
				}
				// The downward API names the pod only where it is the
				// target's (docs/otlp.md).
				assert.Contains(t, env, "K8S_NODE_NAME", f)
				assert.Equal(t, f == "sidecar.yaml", slices.Contains(env, "K8S_POD_NAME"), "%s: %v", f, env)
			}
		}
		assert.True(t, found, "%s has a ctprof container", f)
	}

	unit, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "ctprof.service"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^ExecStart=/usr/local/bin/ctprof serve \$CTPROF_ARGS$`, string(unit))
	assert.Contains(t, string(unit), "\nEnvironmentFile=-/etc/ctprof/otlp.env\n", "the OTLP settings")
	envRE := regexp.MustCompile(`(?m)^#?\s*Environment="CTPROF_ARGS=([^"]*)"$`)
	envs := envRE.FindAllStringSubmatch(string(unit), -1)
	require.Len(t, envs, 2, "the default and the drop-in example")
	for _, m := range envs {
		invocations = append(invocations, strings.Fields(m[1]))
	}

	docs, err := os.ReadFile(filepath.Join(root, "docs", "prometheus.md"))
	require.NoError(t, err)
	otlpDocs, err := os.ReadFile(filepath.Join(root, "docs", "otlp.md"))
	require.NoError(t, err)
	docs = append(append(docs, '\n'), otlpDocs...)
	cmdRE := regexp.MustCompile(`(?m)^(?:\s*)ctprof serve (.*?)\s*(?:#.*)?$`)
	lines := cmdRE.FindAllStringSubmatch(string(docs)+"\n"+serveExample, -1)
	require.GreaterOrEqual(t, len(lines), 8)
	for _, m := range lines {
		invocations = append(invocations, shellWords(m[1]))
	}

	for _, args := range invocations {
		var got *ServeOptions
		cmd := NewCmdServe(IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, func(o *ServeOptions) error {
			got = o
			return nil
		})
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		assert.NoError(t, cmd.Execute(), "ctprof serve %s", strings.Join(args, " "))
		assert.NotNil(t, got, "ctprof serve %s", strings.Join(args, " "))
	}
}

// shellWords splits a command line on spaces, honouring single quotes (all
// the examples use).
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			inQuote = !inQuote
			inWord = true
		case r == ' ' && !inQuote:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// serve counts a native target's futex waits with the kernel's
// tracepoints (--exact-waits auto, as root): the lock's contention
// counter grows as the program's own count of its futex calls that slept,
// and its wait seconds grow with them.
func TestServeCountsNativeFutexWaits(t *testing.T) {
	testnative.RequireExactWaits(t)
	p := testnative.Start(t, "counted_waits", "1000", "3")
	url, errOut := startServe(t, "--pid", strconv.Itoa(p.PID), "--interval", "100ms", "--top", "20")
	contentions := func(s map[string]float64) (float64, bool) {
		for k, v := range s {
			if strings.HasPrefix(k, "ctprof_lock_contentions_total{lock=futex counted_word,") {
				return v, true
			}
		}
		return 0, false
	}
	waitSeries(t, url, p.PID, "counted_word's contentions", func(s map[string]float64) bool {
		v, ok := contentions(s)
		return ok && v > 0
	})
	// The program's count and the series, each read at the same moment
	// (within a sample interval), four seconds apart.
	c1 := p.Request(t, syscall.SIGUSR1, "COUNTS")
	s1 := seriesOf(scrape(t, url), p.PID)
	time.Sleep(4 * time.Second)
	c2 := p.Request(t, syscall.SIGUSR1, "COUNTS")
	s2 := seriesOf(scrape(t, url), p.PID)
	v1, _ := contentions(s1)
	v2, _ := contentions(s2)
	slept := float64(c2["calls"] - c1["calls"] - (c2["again"] - c1["again"]))
	t.Logf("program: %.0f calls that slept; ctprof_lock_contentions_total grew %.0f", slept, v2-v1)
	assert.InEpsilon(t, slept, v2-v1, 0.15, "the kernel's count vs the program's own; stderr:\n%s", errOut.String())
	var w1, w2 float64
	for k, v := range s1 {
		if strings.HasPrefix(k, "ctprof_lock_wait_seconds_total{lock=futex counted_word,") {
			w1, w2 = v, s2[k]
		}
	}
	assert.Greater(t, w2, w1, "the wait seconds grow")
}
