package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// goldenPID replaces the real pid in captured summaries, so the golden
// exposition does not change with every capture.
const goldenPID = 4242

// Golden exposition tests. A Summary is captured from a real process (with
// -update), stored as JSON under testdata/, and its exposition compared
// with testdata/<name>.prom. What varies from run to run is normalised or
// kept out of labels: the pid is rewritten to goldenPID at capture; futex
// and object addresses never become labels (TestNoAddressInLabels); the
// values (switch counts, durations) vary, which is why the Summary is
// frozen rather than captured anew on every run. ctprof_build_info carries
// the Go version and is checked apart (TestBuildInfo).
var goldenCases = []struct {
	name    string
	capture func(t *testing.T) *analysis.Summary
}{
	{"native-mutex-contention", captureMutexContention},
	{"jvm17-hostile-names", captureHostileNames},
}

// captureMutexContention samples the native contention program: 4 threads
// queue on one pthread mutex, 3 idle on a condition variable.
func captureMutexContention(t *testing.T) *analysis.Summary {
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	var s *analysis.Summary
	for attempt := 0; attempt < 5; attempt++ {
		agg, _ := sampleN(t, p.PID, 10, 100*time.Millisecond)
		s = agg.Summary()
		if len(s.Locks) > 0 && s.Locks[0].Class == "contended_mutex" && s.Locks[0].CurrentWaiters >= 1 {
			return s
		}
	}
	t.Fatalf("no contended_mutex waiters at the last sample in 5 attempts: %+v", s.Locks)
	return nil
}

// captureHostileNames samples a JVM whose thread names try to break
// renderers, joining /proc samples with jcmd thread dumps, as the JVM
// sampler will.
func captureHostileNames(t *testing.T) *analysis.Summary {
	p := testjvm.Start(t, testjvm.JDK17(t), "HostileNames")
	agg, s := sampleN(t, p.PID, 3, 100*time.Millisecond)
	for i := 0; i < 2; i++ {
		addDump(t, agg, s, p.Jcmd(t, "Thread.print"))
	}
	return agg.Summary()
}

// exportedNames lists every metric name the Collector describes except
// ctprof_build_info.
func exportedNames() []string {
	var names []string
	for _, d := range allDescs {
		if d == descBuildInfo {
			continue
		}
		names = append(names, descName(d))
	}
	return names
}

var descNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// descName extracts a Desc's metric name (Desc has no accessor).
func descName(d interface{ String() string }) string {
	m := descNameRE.FindStringSubmatch(d.String())
	if m == nil {
		return ""
	}
	return m[1]
}

func TestExpositionGolden(t *testing.T) {
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			sumPath := filepath.Join("testdata", gc.name+".summary.json")
			promPath := filepath.Join("testdata", gc.name+".prom")
			if *update {
				s := gc.capture(t)
				s.Target.PID = goldenPID
				b, err := json.MarshalIndent(s, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(sumPath, append(b, '\n'), 0o644))
			}
			s := loadSummary(t, sumPath)
			// Top 40: the hostile names are one-thread pools, all shown.
			c := NewCollector(CollectorOptions{Version: "golden", Top: 40})
			c.Register(TargetInfo{PID: s.Target.PID, Name: s.Target.Name, Kind: s.Target.Kind}, frozen{s})
			if *update {
				b, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, exportedNames()...)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(promPath, b, 0o644))
			}
			f, err := os.Open(promPath)
			require.NoError(t, err, "run go test ./internal/metrics -run TestExpositionGolden -update")
			defer f.Close()
			require.NoError(t, testutil.CollectAndCompare(c, f, exportedNames()...))

			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			assert.Empty(t, problems)
		})
	}
}

func loadSummary(t *testing.T, path string) *analysis.Summary { return loadSummaryB(t, path) }

func loadSummaryB(t testing.TB, path string) *analysis.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/metrics -run TestExpositionGolden -update")
	var s analysis.Summary
	require.NoError(t, json.Unmarshal(b, &s))
	require.NotNil(t, s.Target, "%s: a live summary has a target", path)
	return &s
}

// The golden files must show what they are meant to: the native contention
// as a futex lock named by its symbol, the JVM's hostile names as safe
// label values, its deadlock and its Java states.
func TestGoldenExpositionShowsTheScenarios(t *testing.T) {
	native := readGolden(t, "native-mutex-contention")
	assert.Regexp(t, `ctprof_lock_blocked_threads\{lock="futex contended_mutex",pid="4242",site="",target="mutex_contentio"\} [1-9]`, native)
	assert.Contains(t, native, `ctprof_pool_threads{pid="4242",pool="contender-N",target="mutex_contentio"} 4`)
	assert.Contains(t, native, `ctprof_pool_threads{pid="4242",pool="idle-N",target="mutex_contentio"} 3`)
	assert.NotContains(t, native, "work_ready", "a condition wait is not a lock")

	jvm := readGolden(t, "jvm17-hostile-names")
	assert.Contains(t, jvm, `ctprof_deadlocked_threads{pid="4242",target="java"} 2`)
	assert.Regexp(t, `ctprof_jvm_threads\{pid="4242",state="BLOCKED",target="java"\} [1-9]`, jvm)
	assert.Regexp(t, `ctprof_lock_blocked_threads\{lock="monitor HostileNames\$Gate",pid="4242",site="HostileNames.enterGate\([^"]*\)",target="java"\} 5`, jvm)
	// The HTML-injection name is a label value like any other, quoted by
	// the exposition format; a tab became a space.
	assert.Contains(t, jvm, `pool="</script><script>alert(N)</script>"`)
	assert.Contains(t, jvm, `pool="tab here"`)
	assert.Contains(t, jvm, `pool="quote\"inside"`)
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".prom"))
	require.NoError(t, err)
	return string(b)
}

var addressRE = regexp.MustCompile(`0x[0-9a-fA-F]{4,}`)

// No label may carry an address (per-address series are unbounded) and
// every label value stays within its bound.
func TestNoAddressInLabels(t *testing.T) {
	for _, gc := range goldenCases {
		s := loadSummary(t, filepath.Join("testdata", gc.name+".summary.json"))
		c := NewCollector(CollectorOptions{})
		c.Register(TargetInfo{PID: s.Target.PID, Name: s.Target.Name}, frozen{s})
		for name, mf := range gather(t, c) {
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					assert.NotRegexp(t, addressRE, lp.GetValue(), "%s{%s}", name, labelsOf(m))
					assert.LessOrEqual(t, len(lp.GetValue()), maxLabelBytes)
				}
			}
		}
	}
}

func TestBuildInfo(t *testing.T) {
	c := NewCollector(CollectorOptions{Version: "1.2.3"})
	mfs := gather(t, c)
	v, ok := find(mfs, "ctprof_build_info", map[string]string{"version": "1.2.3"})
	require.True(t, ok)
	assert.Equal(t, 1.0, v)
	gv := label(mfs["ctprof_build_info"].GetMetric()[0], "goversion")
	assert.True(t, strings.HasPrefix(gv, "go"), gv)
	// Without targets, build info is all there is.
	assert.Len(t, mfs, 1)
}

// The Collector reads MetricsSummary, which leaves out the report's tables,
// timelines and findings: what it exports must be exactly what the full
// Summary gives, for a native target with a contended mutex and for a JVM
// joined with its dumps (Java states, monitors, pools).
func TestMetricsSummaryExportsWhatSummaryDoes(t *testing.T) {
	native := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	nativeAgg, _ := sampleN(t, native.PID, 5, 100*time.Millisecond)
	jvm := testjvm.Start(t, testjvm.JDK17(t), "HostileNames")
	jvmAgg, s := sampleN(t, jvm.PID, 3, 100*time.Millisecond)
	for i := 0; i < 2; i++ {
		addDump(t, jvmAgg, s, jvm.Jcmd(t, "Thread.print"))
	}
	for name, agg := range map[string]*analysis.Aggregator{"native": nativeAgg, "jvm": jvmAgg} {
		t.Run(name, func(t *testing.T) {
			expose := func(s *analysis.Summary) string {
				c := NewCollector(CollectorOptions{Version: "test", Top: 40})
				c.Register(TargetInfo{PID: 1, Name: "t", Kind: name}, frozen{s})
				b, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, exportedNames()...)
				require.NoError(t, err)
				return string(b)
			}
			full, part := expose(agg.Summary()), expose(agg.MetricsSummary())
			assert.Contains(t, full, "ctprof_lock_blocked_threads{", "the case exports locks")
			assert.Contains(t, full, "ctprof_pool_threads{")
			assert.Equal(t, full, part)
		})
	}
}
