package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// A real Prometheus server scrapes ctprof serving real processes (a native
// lock convoy, a thread-per-client server with clients, a JVM with a
// synchronized singleton) and PromQL through its HTTP API returns what is
// true of them; every expression of the Grafana dashboard evaluates.
func TestPrometheusScrapesCtprof(t *testing.T) {
	promBin := lookTool(t, "prometheus")
	const clients = 3
	mc := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	srv := testnative.Start(t, "tcp_server", "2")
	for i := 0; i < clients; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", srv.Value("PORT")))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	jvm := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton")

	exporter := startServer(t, ServerOptions{})
	for _, pid := range []int{mc.PID, srv.PID, jvm.PID} {
		// The mutex's waits are counted by the kernel, as serve does as
		// root: the dashboard's measured-wait panels have data.
		agg, tgt := liveTargetWith(t, sample.Options{PID: pid, Interval: 250 * time.Millisecond, ExactWaits: sample.ExactAuto})
		exporter.Register(TargetInfoOf(tgt), agg)
	}
	prom := startPrometheus(t, promBin, exporter.Addr())

	// Prometheus itself says the scrapes succeed.
	require.NoError(t, poll(60*time.Second, func() error {
		res, err := prom.Targets(context.Background())
		if err != nil {
			return err
		}
		for _, tg := range res.Active {
			if tg.Health == v1.HealthGood {
				return nil
			}
			if tg.LastError != "" {
				return fmt.Errorf("scrape of %s: %s", tg.ScrapeURL, tg.LastError)
			}
		}
		return errNotYet
	}))

	facts := []struct{ what, query string }{
		{"threads queue on the native mutex", fmt.Sprintf(`ctprof_lock_blocked_threads{pid="%d",lock="futex contended_mutex"} > 0`, mc.PID)},
		{"the server has its clients", fmt.Sprintf(`ctprof_connections{pid="%d"} == %d`, srv.PID, clients)},
		{"the contenders switch", fmt.Sprintf(`rate(ctprof_context_switches_total{pid="%d",kind="voluntary"}[10s]) > 0`, mc.PID)},
		{"blocked time accumulates", fmt.Sprintf(`rate(ctprof_lock_blocked_thread_seconds_total{pid="%d",lock="futex contended_mutex"}[10s]) > 0`, mc.PID)},
		{"the kernel counts the mutex's waits", fmt.Sprintf(`rate(ctprof_lock_contentions_total{pid="%d",lock="futex contended_mutex"}[10s]) > 0`, mc.PID)},
		{"the JVM is a JVM", fmt.Sprintf(`ctprof_target_info{pid="%d",kind="jvm"} == 1`, jvm.PID)},
		// 8 request threads by default, named request-1 .. request-8.
		{"the JVM's request pool", fmt.Sprintf(`ctprof_pool_threads{pid="%d",pool="request-N"} == 8`, jvm.PID)},
		{"the JVM's threads switch", fmt.Sprintf(`rate(ctprof_context_switches_total{pid="%d"}[10s]) > 0`, jvm.PID)},
		{"all three are up", `count(ctprof_up == 1) == 3`},
	}
	for _, f := range facts {
		err := poll(60*time.Second, func() error {
			v, err := query(prom, f.query)
			if err != nil {
				return err
			}
			if len(v) == 0 {
				return fmt.Errorf("%s: %s returned nothing", f.what, f.query)
			}
			return nil
		})
		assert.NoError(t, err, f.what)
	}

	// Every dashboard expression evaluates, and returns data unless it is
	// about what these targets cannot have yet (hsperfdata counters and
	// thread-dump pauses need the JVM sampler).
	mayBeEmpty := regexp.MustCompile(`ctprof_jvm_|ctprof_target_pause_|ctprof_deadlocked_|ctprof_wakeups_`)
	exprs := dashboardExprs(t)
	require.NotEmpty(t, exprs)
	for _, e := range exprs {
		q := substituteGrafanaVariables(e)
		var v model.Vector
		err := poll(30*time.Second, func() error {
			var err error
			v, err = query(prom, q)
			if err != nil || len(v) > 0 || mayBeEmpty.MatchString(q) {
				return err
			}
			return fmt.Errorf("no data yet")
		})
		assert.NoError(t, err, "dashboard expression %s (as %s)", e, q)
		if len(v) == 0 {
			t.Logf("no data (allowed for these targets): %s", q)
		}
	}
	// The queries docs/prometheus.md offers are valid PromQL over these
	// metrics.
	docExprs := docBlocks(t, "promql")
	require.NotEmpty(t, docExprs)
	for _, block := range docExprs {
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			_, err := query(prom, line)
			assert.NoError(t, err, "docs/prometheus.md query %s", line)
		}
	}
}

// docBlocks returns the fenced code blocks of docs/prometheus.md in lang.
func docBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "prometheus.md"))
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// The scrape configuration docs/prometheus.md offers passes
// `promtool check config`. Debian's Prometheus is built without Kubernetes
// service discovery, so the Kubernetes job is checked with its discovery
// replaced by a static target: its relabelling is what can go wrong.
func TestDocsScrapeConfigIsValid(t *testing.T) {
	promtool := lookTool(t, "promtool")
	var cfg, k8s string
	for _, b := range docBlocks(t, "yaml") {
		switch {
		case strings.HasPrefix(b, "# prometheus.yml\n"):
			cfg = b
		case strings.HasPrefix(b, "  - job_name: ctprof-kubernetes\n"):
			k8s = b
		}
	}
	require.NotEmpty(t, cfg, "docs/prometheus.md has a prometheus.yml block")
	require.Contains(t, k8s, "kubernetes_sd_configs:\n      - role: pod\n")
	k8s = strings.Replace(k8s, "kubernetes_sd_configs:\n      - role: pod\n", "static_configs:\n      - targets: [\"10.0.0.1:9901\"]\n", 1)
	for name, text := range map[string]string{"static": cfg, "kubernetes": cfg + k8s} {
		path := filepath.Join(t.TempDir(), "prometheus.yml")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		out, err := exec.Command(promtool, "check", "config", path).CombinedOutput()
		assert.NoError(t, err, "%s: %s", name, out)
		assert.Contains(t, string(out), "SUCCESS", name)
	}
}

// query runs an instant PromQL query and returns its vector.
func query(prom v1.API, q string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	val, _, _, err := prom.Query(ctx, q, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	v, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a vector", q, val.Type())
	}
	return v, nil
}

// startPrometheus runs the prometheus binary on a free loopback port with a
// temporary config scraping target every second and temporary storage;
// the process is killed by its pid when the test ends.
func startPrometheus(t *testing.T, bin, target string) v1.API {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ctprof
    static_configs:
      - targets: [%q]
`, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := freePort(t)
		logPath := filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt))
		logFile, err := os.Create(logPath)
		require.NoError(t, err)
		cmd := exec.Command(bin,
			"--config.file="+cfgPath,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			"--web.listen-address="+addr,
			"--log.level=warn",
		)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// The kernel kills it if the test binary dies without cleanups.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(t, cmd.Start())
		logFile.Close()
		exited := make(chan struct{})
		var once sync.Once
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			once.Do(func() {
				_ = cmd.Process.Kill() // our child, not yet reaped: the pid is still ours
				<-exited
			})
		}
		t.Cleanup(stop)
		err = poll(60*time.Second, func() error {
			select {
			case <-exited:
				return fmt.Errorf("prometheus exited")
			default:
			}
			resp, err := http.Get("http://" + addr + "/-/ready")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("ready: %s", resp.Status)
			}
			return nil
		})
		if err == nil {
			client, err := api.NewClient(api.Config{Address: "http://" + addr})
			require.NoError(t, err)
			return v1.NewAPI(client)
		}
		log, _ := os.ReadFile(logPath)
		lastErr = fmt.Errorf("prometheus on %s: %v\n%s", addr, err, log)
		stop()
	}
	t.Fatalf("could not start prometheus: %v", lastErr)
	return nil
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// dashboardExprs returns every PromQL expression of the Grafana dashboard:
// panel targets (rows included) and the query variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "grafana", "ctprof-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		Panels     []dashPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	var out []string
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q))
		out = append(out, q.Query)
	}
	return out
}

type dashPanel struct {
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"`
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// substituteGrafanaVariables turns a dashboard expression into plain
// PromQL as Grafana would send it with "All" selected: multi-value
// variables become ".*", $__rate_interval a concrete range, and a
// label_values() variable query the series query Grafana runs for it.
func substituteGrafanaVariables(e string) string {
	r := strings.NewReplacer(
		"${instance}", ".*", "$instance", ".*",
		"${target}", ".*", "$target", ".*",
		"${__rate_interval}", "15s", "$__rate_interval", "15s",
	)
	e = r.Replace(e)
	if m := labelValuesRE.FindStringSubmatch(e); m != nil {
		e = "group by (" + m[2] + ") (" + m[1] + ")"
	}
	return e
}

// The dashboard refers only to metrics ctprof exports (or Prometheus's
// standard process metrics) and has a datasource variable.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	known := map[string]bool{"process_cpu_seconds_total": true}
	for _, d := range allDescs {
		known[descName(d)] = true
	}
	nameRE := regexp.MustCompile(`\b(ctprof_[a-z_]+|process_[a-z_]+)\b`)
	exprs := dashboardExprs(t)
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range nameRE.FindAllString(e, -1) {
			assert.True(t, known[m], "%s in %s is not exported", m, e)
			used[m] = true
		}
	}
	for _, must := range []string{"ctprof_threads", "ctprof_lock_blocked_threads", "ctprof_lock_blocked_thread_seconds_total",
		"ctprof_context_switches_total", "ctprof_threads_per_connection", "ctprof_cpu_seconds_total",
		"ctprof_runqueue_wait_seconds_total", "ctprof_target_pause_seconds_total", "ctprof_lock_wait_seconds_total", "ctprof_lock_contentions_total"} {
		assert.True(t, used[must], "the dashboard shows %s", must)
	}
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "grafana", "ctprof-dashboard.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"type": "datasource"`)
	assert.NotContains(t, string(b), `"uid": "prometheus"`, "panels use the datasource variable, not a fixed uid")
}
