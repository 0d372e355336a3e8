// Package analysis holds the Aggregator: the one place where ctprof turns
// Snapshots into statistics and findings. Every mode feeds it (live attach,
// recording replay, dump files) and every sink (text and JSON summary,
// folded stacks, Prometheus metrics, HTML) reads its Summary or Stacks, so no
// two outputs can disagree.
//
// Memory stays flat over long runs: per-thread state exists only for live
// threads (an exited thread's counters are folded into process totals), time
// series are downsampled to a fixed number of points, and the lock, pool and
// stack tables are capped, least important entries first.
package analysis

import (
	"fmt"
	"sync"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Options bound what an Aggregator keeps; zero values take the defaults.
type Options struct {
	// MaxPoints bounds each time series (default 720).
	MaxPoints int
	// MaxLocks bounds the lock table (default 500).
	MaxLocks int
	// MaxStacks bounds the distinct stacks kept for flame graphs (default
	// 20,000); the rarest are merged into one "(other stacks)" entry.
	MaxStacks int
	// MaxPools bounds the pools tracked over time (default 500).
	MaxPools int
}

func (o Options) withDefaults() Options {
	if o.MaxPoints <= 0 {
		o.MaxPoints = defaultMaxPoints
	}
	if o.MaxLocks <= 0 {
		o.MaxLocks = 500
	}
	if o.MaxStacks <= 0 {
		o.MaxStacks = 20000
	}
	if o.MaxPools <= 0 {
		o.MaxPools = 500
	}
	return o
}

// Aggregator accumulates snapshots. It is safe for concurrent use: a live
// run adds from the sampling goroutine while an HTTP handler reads.
type Aggregator struct {
	mu   sync.Mutex
	opts Options

	snapshots   int
	first, last time.Time
	target      *snapshot.Target
	// sampled is the time the snapshots cover: the sum of their intervals.
	sampled time.Duration

	// Thread dumps.
	dumps    int
	lastDump *threaddump.Dump
	// lastLocks and lastWaitsOn are the last dump's lock table and the
	// lock each of its contended threads was counted on (threadWaits).
	lastLocks   []*threaddump.LockInfo
	lastWaitsOn map[*threaddump.Thread]string
	// lastDumpPools are PoolName of the names of lastDump.Threads, by
	// index: the pools of the last dump's table (build.go).
	lastDumpPools  []string
	firstDumpT     time.Time
	lastDumpT      time.Time
	deadlocks      map[string]*deadlockAgg
	jthreads       map[threadKey]*threadAgg
	stacks         map[string]*FoldedStack
	stacksOther    *FoldedStack
	foldKey        []byte // addStacks' reused key buffer
	lastDumpTables struct {
		dump   *threaddump.Dump
		pools  []PoolSummary
		groups []StackGroup
	}
	lastJavaThreadsAt int // snapshot number of the last dump

	// Locks of every kind (monitors, synchronizers, futexes).
	locks map[string]*lockAgg
	// lockIdx follows Java lock instances across dumps (locks.go).
	lockIdx lockIndex

	// Live /proc samples.
	os *osAgg

	pools map[string]*poolAgg

	conns connAgg

	timelines map[string]*seriesSet

	cost     costAgg
	warnings []string
	missing  map[string]bool
	errors   int
	jvmFirst *snapshot.JVMCounters
	jvmLast  *snapshot.JVMCounters

	jfr *jfrAgg // JFR waits and GC pauses (jfrwaits.go); nil without a recording
	// exact is the run's futex tracing (exactwaits.go); nil without it.
	exact *exactRun
	// fast is the run's fast reads (fastreads.go); nil without them.
	fast *fastRun
	// nativeLockThreads names the threads seen queued on, or holding, a
	// native lock (at most maxNativeLockThreads): a JVM thread in a JNI
	// lock is RUNNABLE in the same Java frame dump after dump, and is not
	// a stuck thread.
	nativeLockThreads map[string]bool
	// locksFullAt is dumps+1 while the lock table is full of the dump
	// being added (nothing can be evicted until the next one); 0 otherwise.
	locksFullAt int
	// native follows a native target's waits by resource, with each
	// blocked thread's verdict (nativeresources.go).
	native nativeWaits

	hung hungAgg // a stopped process, a JVM that does not answer (hung.go)
}

// New returns an empty Aggregator with default bounds.
func New() *Aggregator { return NewWithOptions(Options{}) }

// NewWithOptions returns an empty Aggregator with the given bounds.
func NewWithOptions(o Options) *Aggregator {
	return &Aggregator{
		opts:      o.withDefaults(),
		deadlocks: map[string]*deadlockAgg{},
		jthreads:  map[threadKey]*threadAgg{},
		stacks:    map[string]*FoldedStack{},
		locks:     map[string]*lockAgg{},
		os:        newOSAgg(),
		pools:     map[string]*poolAgg{},
		timelines: map[string]*seriesSet{},
		missing:   map[string]bool{},
	}
}

// costAgg adds up what sampling cost ctprof and the target.
type costAgg struct {
	samples       int
	sum, peak     time.Duration
	dumps         int
	earlyDumps    int
	dumpWall      time.Duration
	pause         time.Duration
	pauseKnown    bool
	dumpMethods   map[string]int
	lastSampleDur time.Duration
}

// Add feeds one snapshot.
func (a *Aggregator) Add(s *snapshot.Snapshot) {
	// Every mode computes from wall-clock times: a live snapshot's
	// monotonic clock reading is not in a recording, and a replay must
	// give the live run's numbers exactly.
	if t := s.Time.Round(0); t != s.Time {
		c := *s
		c.Time = t
		s = &c
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.Threads == nil && s.Dump == nil && s.Waits != nil && a.os.samples > 0 {
		// A live run's last JFR read after Ctrl-C (Sampler.flushJFR):
		// exact waits, not a sample of the threads.
		for _, e := range s.Errors {
			a.errors++
			a.warn(e)
		}
		a.addJFRPause(s)
		a.addJFR(s)
		return
	}
	a.snapshots++
	dt := a.step(s)
	if s.Target.PID != 0 {
		t := s.Target
		a.target = &t
	}
	a.addCost(s)
	for _, m := range s.Missing {
		a.missing[m] = true
	}
	for _, e := range s.Errors {
		a.errors++
		a.warn(e)
	}
	if s.JVM != nil {
		if a.jvmFirst == nil {
			a.jvmFirst = s.JVM
		}
		a.jvmLast = s.JVM
	}
	var tick dumpTick
	if s.Dump != nil {
		tick = a.addDump(s, dt)
	}
	if s.Threads != nil {
		a.addLive(s, dt, tick)
	}
	if s.Dump != nil {
		a.addSerialization(tick)
	}
	a.addJFR(s)
	a.addFutexTrace(s.FutexTrace, s.Target.PID)
	a.addFastReads(s.FastReads)
	a.addHung(s)
}

// step advances the clock and returns the time this snapshot stands for:
// the time since the previous snapshot (a delayed tick stands for more), or
// for the first one the run's interval (zero for dumps without times).
func (a *Aggregator) step(s *snapshot.Snapshot) time.Duration {
	t := s.Time
	if t.IsZero() && s.Dump != nil {
		t = s.Dump.Time
	}
	var dt time.Duration
	switch {
	case !t.IsZero() && !a.last.IsZero() && t.After(a.last):
		dt = t.Sub(a.last)
	case s.Interval > 0:
		dt = s.Interval
	}
	if !t.IsZero() {
		if a.first.IsZero() {
			a.first = t
		}
		a.last = t
	}
	a.sampled += dt
	return dt
}

func (a *Aggregator) addCost(s *snapshot.Snapshot) {
	c := &a.cost
	if s.Threads != nil || s.DumpCost != nil {
		c.samples++
		c.sum += s.Cost
		c.peak = max(c.peak, s.Cost)
		c.lastSampleDur = s.Cost
	}
	if dc := s.DumpCost; dc != nil {
		c.dumps++
		c.dumpWall += dc.Wall
		if dc.Pause > 0 {
			c.pause += dc.Pause
			c.pauseKnown = true
		}
		if c.dumpMethods == nil {
			c.dumpMethods = map[string]int{}
		}
		c.dumpMethods[dc.Method]++
		if dc.Early {
			c.earlyDumps++
		}
	}
	a.addJFRPause(s)
}

// addJFRPause counts the pause a JFR read caused among ctprof's pauses.
func (a *Aggregator) addJFRPause(s *snapshot.Snapshot) {
	if s.JFRPause > 0 {
		a.cost.pause += s.JFRPause
		a.cost.pauseKnown = true
	}
}

// timeline returns the named timeline's series set, creating it.
func (a *Aggregator) timeline(id string) *seriesSet {
	ts := a.timelines[id]
	if ts == nil {
		ts = newSeriesSet(a.opts.MaxPoints)
		a.timelines[id] = ts
	}
	return ts
}

// AddWarning adds a warning about the input that no snapshot carries (a
// damaged recording, lines a dump reader skipped) to Summary.Warnings.
// Warnings are deduplicated and bounded in number; these few get room of
// their own, so that damage is reported even after many dump warnings.
func (a *Aggregator) AddWarning(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.addWarning(msg, maxWarnings+20)
}

const maxWarnings = 50

func (a *Aggregator) warn(w string) { a.addWarning(w, maxWarnings) }

func (a *Aggregator) addWarning(w string, limit int) {
	for _, x := range a.warnings {
		if x == w {
			return
		}
	}
	if len(a.warnings) < limit {
		a.warnings = append(a.warnings, w)
	}
}

func prefixSource(src string, d *threaddump.Dump, msg string) string {
	if src == "" {
		return msg
	}
	return fmt.Sprintf("%s (dump at line %d): %s", src, d.StartLine, msg)
}

func strPtr(s string) *string { return &s }

func strPtrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
