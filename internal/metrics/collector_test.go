package metrics

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testnative"
)

// Live targets: a native lock convoy and a thread-per-client server with
// real clients, each sampled by its own Sampler into its own Aggregator,
// exported by one Collector. The exposition must be lint-clean and say
// what is true of the processes.
func TestLiveTargetsLintCleanAndFactual(t *testing.T) {
	const clients, perClient = 3, 2
	mc := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	srv := testnative.Start(t, "tcp_server", strconv.Itoa(perClient))
	for i := 0; i < clients; i++ {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", srv.Value("PORT")))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
	}
	c := NewCollector(CollectorOptions{})
	for _, pid := range []int{mc.PID, srv.PID} {
		agg, tgt := liveTarget(t, pid, 100*time.Millisecond)
		c.Register(TargetInfoOf(tgt), agg)
	}
	mcLabels := map[string]string{"pid": strconv.Itoa(mc.PID), "target": "mutex_contentio"}
	srvLabels := map[string]string{"pid": strconv.Itoa(srv.PID), "target": "tcp_server"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	var mfs map[string]*dto.MetricFamily
	err := poll(30*time.Second, func() error {
		mfs = gather(t, c)
		if v, _ := find(mfs, "ctprof_lock_blocked_threads", with(mcLabels, "lock", "futex contended_mutex")); v < 1 {
			return fmt.Errorf("contended_mutex waiters %v", v)
		}
		if v, _ := find(mfs, "ctprof_connections", srvLabels); v != clients {
			return fmt.Errorf("connections %v", v)
		}
		// The server starts a client's threads just after accepting it.
		if v := sumOf(mfs, "ctprof_threads", srvLabels); v != 1+clients*perClient {
			return fmt.Errorf("server threads %v", v)
		}
		if v, _ := find(mfs, "ctprof_context_switches_total", with(mcLabels, "kind", "voluntary")); v <= 0 {
			return fmt.Errorf("voluntary switches %v", v)
		}
		return nil
	})
	require.NoError(t, err)

	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)

	// Threads by state add up to the process's threads: main + 3 idle + 4
	// contenders, and main + clients × perClient for the server.
	assert.Equal(t, 8.0, sumOf(mfs, "ctprof_threads", mcLabels))
	assert.Equal(t, float64(1+clients*perClient), sumOf(mfs, "ctprof_threads", srvLabels))
	assert.Equal(t, 8.0, sumOf(mfs, "ctprof_pool_threads", mcLabels))
	v, _ := find(mfs, "ctprof_pool_threads", with(mcLabels, "pool", "contender-N"))
	assert.Equal(t, 4.0, v)
	tpc, ok := find(mfs, "ctprof_threads_per_connection", srvLabels)
	require.True(t, ok)
	assert.InDelta(t, float64(1+clients*perClient)/clients, tpc, 0.01)
	for _, l := range []map[string]string{mcLabels, srvLabels} {
		up, _ := find(mfs, "ctprof_up", l)
		assert.Equal(t, 1.0, up, "%v", l)
		kind, ok := find(mfs, "ctprof_target_info", with(l, "kind", "native"))
		assert.True(t, ok && kind == 1, "%v", l)
	}
	// A native target has no thread dumps: no Java series.
	_, ok = mfs["ctprof_jvm_threads"]
	assert.False(t, ok)
}

func sumOf(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	mf := mfs[name]
	if mf == nil {
		return 0
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			if label(m, k) != v {
				continue next
			}
		}
		sum += value(m)
	}
	return sum
}

// Counters never go backwards while a target lives, also when its threads
// come and go (thread_churn) and as locks enter and leave the top K.
func TestCountersNeverGoBackwards(t *testing.T) {
	churn := testnative.Start(t, "thread_churn")
	mc := testnative.Start(t, "mutex_contention", "4", "3", "2000")
	c := NewCollector(CollectorOptions{Top: 1})
	for _, pid := range []int{churn.PID, mc.PID} {
		agg, tgt := liveTarget(t, pid, 50*time.Millisecond)
		c.Register(TargetInfoOf(tgt), agg)
	}
	last := map[string]float64{}
	grew := map[string]bool{}
	for i := 0; i < 30; i++ {
		for name, mf := range gather(t, c) {
			if mf.GetType() != dto.MetricType_COUNTER {
				continue
			}
			for _, m := range mf.GetMetric() {
				k := name + "{" + labelsOf(m) + "}"
				v := m.GetCounter().GetValue()
				if prev, ok := last[k]; ok {
					require.GreaterOrEqual(t, v, prev, "%s went backwards at scrape %d", k, i)
					if v > prev {
						grew[name] = true
					}
				}
				last[k] = v
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The test would prove nothing if the counters stood still.
	for _, name := range []string{"ctprof_cpu_seconds_total", "ctprof_context_switches_total", "ctprof_samples_total", "ctprof_lock_blocked_thread_seconds_total"} {
		assert.True(t, grew[name], "%s never grew", name)
	}
}

func TestDownAndUnregisteredTargets(t *testing.T) {
	p := testnative.Start(t, "many_threads", "3")
	agg, tgt := sampleN(t, p.PID, 2, 50*time.Millisecond)
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(tgt.Target()), agg)
	c.SetUp(999999, false) // a --pid that never existed
	mfs := gather(t, c)
	pid := strconv.Itoa(p.PID)
	up, _ := find(mfs, "ctprof_up", map[string]string{"pid": pid})
	assert.Equal(t, 1.0, up)
	up, ok := find(mfs, "ctprof_up", map[string]string{"pid": "999999", "target": ""})
	assert.True(t, ok && up == 0)
	_, ok = find(mfs, "ctprof_threads", map[string]string{"pid": pid})
	assert.True(t, ok)

	// Gone: only ctprof_up 0 remains, with the name it had.
	c.SetUp(p.PID, false)
	mfs = gather(t, c)
	up, ok = find(mfs, "ctprof_up", map[string]string{"pid": pid, "target": "many_threads"})
	assert.True(t, ok && up == 0)
	for name, mf := range mfs {
		if name == "ctprof_up" || name == "ctprof_build_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			assert.NotEqual(t, pid, label(m, "pid"), "%s{%s} of a target that is down", name, labelsOf(m))
		}
	}
	// Setting a target without a source up does not invent data.
	c.SetUp(p.PID, true)
	up, _ = find(gather(t, c), "ctprof_up", map[string]string{"pid": pid})
	assert.Equal(t, 0.0, up)

	c.Unregister(p.PID)
	c.Unregister(999999)
	assert.Len(t, gather(t, c), 1, "only ctprof_build_info")
	assert.Empty(t, c.Targets())
}

func TestTargetsForTheLandingPage(t *testing.T) {
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfo{PID: 20, Name: "b", Kind: "jvm"}, frozen{&analysis.Summary{}})
	c.SetUp(10, false)
	assert.Equal(t, []TargetStatus{
		{TargetInfo: TargetInfo{PID: 10}, Up: false},
		{TargetInfo: TargetInfo{PID: 20, Name: "b", Kind: "jvm"}, Up: true},
	}, c.Targets())
}

// A server made of processes exports its process count: a prefork
// server of 4 workers is 5 processes, each worker's thread among the
// target's threads; one process alone has no ctprof_processes.
func TestProcessesOfATree(t *testing.T) {
	p := testnative.Start(t, "forked_workers", "4")
	agg, tgt := sampleN(t, p.PID, 2, 50*time.Millisecond)
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(tgt.Target()), agg)
	mfs := gather(t, c)
	pid := strconv.Itoa(p.PID)
	v, ok := find(mfs, "ctprof_processes", map[string]string{"pid": pid})
	assert.True(t, ok, "ctprof_processes of a tree")
	assert.Equal(t, 5.0, v)
	assert.Equal(t, 5.0, sumOf(mfs, "ctprof_threads", map[string]string{"pid": pid}))

	single := testnative.Start(t, "many_threads", "2")
	agg, tgt = sampleN(t, single.PID, 2, 50*time.Millisecond)
	c = NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(tgt.Target()), agg)
	_, ok = find(gather(t, c), "ctprof_processes", nil)
	assert.False(t, ok, "one process has no ctprof_processes")
}
