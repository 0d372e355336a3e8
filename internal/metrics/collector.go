// Package metrics exports ctprof's findings to Prometheus: a Collector that
// formats each target's analysis.Summary as metrics at scrape time, and an
// HTTP Server (/metrics, /healthz, a landing page) with TLS and basic auth
// through the exporter-toolkit web configuration.
//
// The Summary is the only input: the Aggregator computes every statistic,
// this package names and labels them. Metrics are built fresh on every
// scrape (const metrics), so the series of a target that is gone, a pool
// that emptied or a lock that left the top K disappear by themselves.
package metrics

import (
	"runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// DefaultTop is how many locks, pools and waking pools get series of their
// own per target; the rest are summed into "other".
const DefaultTop = 10

// SummarySource is what the Collector reads at each scrape; an
// *analysis.Aggregator is one (MetricsSummary is safe to call while
// samples are being added).
type SummarySource interface {
	MetricsSummary() *analysis.Summary
}

// TargetInfo identifies a target in the pid and target labels.
type TargetInfo struct {
	PID int
	// Name is the process name (comm); it becomes the target label.
	Name string
	// Kind is "jvm" or "native"; empty when not known (a --pid that never
	// existed).
	Kind string
}

// TargetInfoOf converts the Sampler's description of its target.
func TargetInfoOf(t snapshot.Target) TargetInfo {
	return TargetInfo{PID: t.PID, Name: t.Name, Kind: string(t.Kind)}
}

// TargetStatus is a target as the Collector knows it, for the landing page.
type TargetStatus struct {
	TargetInfo
	Up bool
}

// CollectorOptions configure a Collector; zero values take the defaults.
type CollectorOptions struct {
	// Top bounds the named lock, pool and wake-up series per target
	// (default DefaultTop).
	Top int
	// Version is ctprof's version for ctprof_build_info.
	Version string
}

// Collector is a prometheus.Collector over any number of targets, each with
// its own SummarySource. Targets may be added and removed while it serves.
type Collector struct {
	top     int
	version string

	mu      sync.Mutex
	targets map[int]*target
}

type target struct {
	info     TargetInfo
	src      SummarySource // nil once the target is down
	up       bool
	locks    *lockSelector
	measured *measuredSelector // measured-wait counters (measured.go); nil until a recording or the futex tracer has data
	// labels keeps each lock's labels across scrapes, for both families.
	labels lockLabels
}

// NewCollector returns a Collector with no targets.
func NewCollector(o CollectorOptions) *Collector {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return &Collector{top: o.Top, version: o.Version, targets: map[int]*target{}}
}

// Register starts exporting a target (ctprof_up 1) from src. Registering a
// pid again replaces the earlier target and its state: a new run starts
// its counters from zero, which Prometheus reads as a counter reset.
func (c *Collector) Register(t TargetInfo, src SummarySource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.targets[t.PID] = &target{info: t, src: src, up: src != nil, locks: newLockSelector(c.top), labels: lockLabels{}}
}

// SetUp marks a target up or down. A target that is down exports only
// ctprof_up 0: its other series disappear, as the process is gone. An
// unknown pid is added (down, with an empty target label), so a --pid that
// does not exist still shows as ctprof_up{pid="N"} 0.
func (c *Collector) SetUp(pid int, up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.targets[pid]
	if t == nil {
		t = &target{info: TargetInfo{PID: pid}, locks: newLockSelector(c.top), labels: lockLabels{}}
		c.targets[pid] = t
	}
	t.up = up && t.src != nil
	if !up {
		t.src = nil // the Aggregator may be freed
	}
}

// Unregister stops exporting a target: all its series disappear.
func (c *Collector) Unregister(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.targets, pid)
}

// Targets lists the known targets by pid.
func (c *Collector) Targets() []TargetStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TargetStatus, 0, len(c.targets))
	for _, t := range c.targets {
		out = append(out, TargetStatus{TargetInfo: t.info, Up: t.up})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Describe sends every descriptor the Collector may use.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect reads every target's Summary and sends its metrics. Scrapes are
// serialised: the lock selection of a target is updated by each.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descBuildInfo, prometheus.GaugeValue, 1, c.version, runtime.Version())
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.targets))
	for pid := range c.targets {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		t := c.targets[pid]
		e := emitter{ch: ch, pid: strconv.Itoa(pid), name: LabelValue(t.info.Name)}
		if !t.up || t.src == nil {
			e.gauge(descUp, 0)
			continue
		}
		e.gauge(descUp, 1)
		c.collectTarget(e, t, t.src.MetricsSummary())
	}
}

// emitter sends one target's metrics with its labels.
type emitter struct {
	ch        chan<- prometheus.Metric
	pid, name string
}

func (e emitter) send(d *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string) {
	lv := append([]string{e.pid, e.name}, extra...)
	e.ch <- prometheus.MustNewConstMetric(d, vt, v, lv...)
}

func (e emitter) gauge(d *prometheus.Desc, v float64, extra ...string) {
	e.send(d, prometheus.GaugeValue, v, extra...)
}

func (e emitter) counter(d *prometheus.Desc, v float64, extra ...string) {
	e.send(d, prometheus.CounterValue, v, extra...)
}

func (c *Collector) collectTarget(e emitter, t *target, s *analysis.Summary) {
	kind := t.info.Kind
	if s.Target != nil && s.Target.Kind != "" {
		kind = s.Target.Kind
	}
	e.gauge(descTargetInfo, 1, LabelValue(kind))
	if s.Target != nil && s.Target.CPUs > 0 {
		e.gauge(descCPUsAllowed, float64(s.Target.CPUs))
	}
	e.counter(descSamples, float64(s.Samples))
	e.counter(descSampleErrors, float64(s.Errors))
	if sc := s.SampleCost; sc != nil {
		e.gauge(descSampleDuration, sc.AvgSeconds, "avg")
		e.gauge(descSampleDuration, sc.PeakSeconds, "peak")
		e.gauge(descSampleDuration, sc.LastSeconds, "last")
		if sc.TargetPauseSeconds != nil {
			e.counter(descTargetPause, *sc.TargetPauseSeconds)
		}
	}
	if s.OSStates != nil {
		emitStates(e, descThreads, osStates, s.OSStates)
	}
	if s.Dumps > 0 {
		emitStates(e, descJVMThreads, javaStates, s.States)
		e.gauge(descDeadlockedThreads, float64(deadlockedThreads(s.Deadlocks)))
	}
	pools, otherThreads := topPools(s.Pools, c.top)
	for _, p := range pools {
		e.gauge(descPoolThreads, float64(p.threads), p.pool)
	}
	if len(s.Pools) > 0 {
		e.gauge(descPoolThreads, float64(otherThreads), otherLabel)
	}
	if tot := s.Totals; tot != nil {
		e.counter(descCPUSeconds, tot.CPUSeconds)
		e.counter(descContextSwitches, float64(tot.VoluntarySwitches), "voluntary")
		e.counter(descContextSwitches, float64(tot.InvoluntarySwitches), "involuntary")
		e.counter(descHostContextSwitches, float64(tot.HostSwitches))
		e.counter(descRunQueueWait, tot.RunQueueWaitSeconds)
	}
	if cs := s.Connections; cs != nil {
		e.gauge(descConnections, float64(cs.Established))
	}
	if tpc := s.ThreadsPerConnection; tpc != nil && s.Connections != nil && s.Connections.Established > 0 {
		e.gauge(descThreadsPerConnection, tpc.Ratio)
	}
	if p := s.Processes; p != nil {
		e.gauge(descProcesses, float64(p.Last))
	}
	if s.Samples > 0 {
		t.labels.keep(s.Locks)
		named, other := t.locks.update(groupLocks(s.Locks, t.labels))
		for _, r := range append(named, other) {
			e.gauge(descLockBlockedThreads, float64(r.waiters), r.key.lock, r.key.site)
			e.counter(descLockBlockedSeconds, r.seconds, r.key.lock, r.key.site)
		}
		emitMeasuredLocks(e, t, c.top, s)
	}
	if len(s.ContentionSites) > 0 {
		named, other := topResources(s.ContentionSites, c.top)
		for _, r := range named {
			e.gauge(descResourceWaiters, float64(r.threads), r.pool)
		}
		e.gauge(descResourceWaiters, float64(other), otherLabel)
	}
	emitWakeups(e, s.Wakeups, c.top)
	if j := s.JVM; j != nil {
		e.gauge(descJVMLiveThreads, float64(j.LiveThreads))
		e.gauge(descJVMDaemonThreads, float64(j.DaemonThreads))
		e.gauge(descJVMPeakThreads, float64(j.PeakThreads))
		e.counter(descJVMThreadsStarted, float64(j.StartedThreads))
		e.counter(descJVMSafepoints, float64(j.Safepoints))
		e.counter(descJVMSafepointSeconds, j.SafepointSeconds)
		e.counter(descJVMGCSeconds, j.GCSeconds)
		for _, ev := range monitorEvents {
			if v, ok := j.Sync[ev]; ok {
				e.counter(descJVMMonitorEvents, float64(v), ev)
			}
		}
	}
}

// emitStates exports every state of known, and counts states outside it
// under "other" (the last entry of known).
func emitStates(e emitter, d *prometheus.Desc, known []string, counts map[string]int) {
	vals := make(map[string]int, len(known))
	for st, n := range counts {
		if !contains(known, st) {
			st = otherLabel
		}
		vals[st] += n
	}
	for _, st := range known {
		e.gauge(d, float64(vals[st]), st)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// deadlockedThreads counts the distinct threads in the deadlock cycles.
func deadlockedThreads(ds []analysis.DeadlockSummary) int {
	seen := map[string]bool{}
	for _, d := range ds {
		for _, t := range d.Threads {
			seen[t] = true
		}
	}
	return len(seen)
}

// emitWakeups exports the pools that wake most (the Summary lists them most
// first); names that collide once cut to length are summed.
func emitWakeups(e emitter, ws []analysis.Wakeup, top int) {
	by := map[string]float64{}
	var order []string
	for _, w := range ws {
		p := LabelValue(w.Pool)
		if _, ok := by[p]; !ok {
			if len(order) == top {
				continue
			}
			order = append(order, p)
		}
		by[p] += w.PerSecond
	}
	for _, p := range order {
		e.gauge(descWakeups, by[p], p)
	}
}
