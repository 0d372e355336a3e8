package analysis

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// JFRWaits is what Java Flight Recorder measured about one lock: every
// wait the JVM recorded on it, with its exact duration, instead of the
// dumps' estimate from waiters seen at instants.
type JFRWaits struct {
	// Events is the number of waits recorded and WaitSeconds their total
	// duration (thread-seconds).
	Events      int64   `json:"events"`
	WaitSeconds float64 `json:"wait_seconds"`
	// P50Ms, P99Ms and MaxMs are wait durations in milliseconds; the
	// percentiles come from a log histogram (within about 5 %), the
	// maximum is exact.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Kinds counts the waits by wait kind ("monitor", "wait",
	// "synchronizer", "condition", "future", "pinned").
	Kinds map[string]int64 `json:"kinds"`
	// PreviousOwners are the threads that held a monitor last before a
	// waiter entered it (jdk.JavaMonitorEnter), most waits first (at most
	// 5); Notifiers the threads whose notify() ended a wait().
	PreviousOwners []JFRThreadCount `json:"previous_owners"`
	Notifiers      []JFRThreadCount `json:"notifiers"`
	// TimedOut counts the waits that ended by their timeout.
	TimedOut int64 `json:"timed_out"`
	// Sites are the frames where threads waited (their first application
	// frame), most wait time first (at most 10).
	Sites []JFRSite `json:"sites"`
	// Histogram counts the waits by duration, one bucket per power of two
	// (a bucket holds the waits longer than the previous bucket's bound up
	// to its own), from the shortest wait to the longest.
	Histogram []JFRBucket `json:"histogram"`
}

// JFRThreadCount is a thread and the number of waits it took part in.
type JFRThreadCount struct {
	Thread string `json:"thread"`
	Events int64  `json:"events"`
}

// JFRSite is one frame where threads waited for a lock.
type JFRSite struct {
	Frame       string  `json:"frame"`
	Events      int64   `json:"events"`
	WaitSeconds float64 `json:"wait_seconds"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
}

// JFRBucket is one bucket of a wait-duration histogram.
type JFRBucket struct {
	LeMs   float64 `json:"le_ms"`
	Events int64   `json:"events"`
}

// JFRSummary describes the recording data the run read.
type JFRSummary struct {
	// Events is the number of waits recorded, WaitSeconds their total.
	Events      int64   `json:"events"`
	WaitSeconds float64 `json:"wait_seconds"`
	// First and Last bound the waits recorded; DurationSeconds is the
	// time between them.
	First           time.Time `json:"first"`
	Last            time.Time `json:"last"`
	DurationSeconds float64   `json:"duration_seconds"`
	// GCPauses counts the garbage collections recorded, GCPauseSeconds
	// the time they paused the program.
	GCPauses       int64   `json:"gc_pauses"`
	GCPauseSeconds float64 `json:"gc_pause_seconds"`
}

// WaitStack is one distinct wait stack (root first) with the time spent
// waiting in it, for flame graphs weighted by wait time and pprof's delay.
type WaitStack struct {
	Frames    []string
	Count     int64
	WaitNanos int64
	// ByLock splits WaitNanos by LockSummary.ID (at most
	// maxWaitStackLocks locks; the rest only in WaitNanos).
	ByLock map[string]int64
	// Source says who measured the waits: WaitsJFR (a Flight Recorder
	// recording) or WaitsFutexTrace (the kernel's futex tracepoints).
	Source string
}

// OtherStacks is the frame of the one entry the stack tables fold their
// rarest stacks into when they fill (Stacks, WaitStacks).
const OtherStacks = "(other stacks)"

// Who measured a WaitStack's waits.
const (
	WaitsJFR        = "jfr"
	WaitsFutexTrace = "futex-trace"
)

const (
	maxJFRSites       = 16
	maxJFRThreads     = 32
	maxWaitStackLocks = 8
)

// jfrAgg accumulates the JFR waits and GC pauses of a run.
type jfrAgg struct {
	locks       map[string]*jfrLock
	events      int64
	wait        time.Duration
	first, last time.Time
	gcs         int64
	gcPause     time.Duration
	stacks      map[string]*WaitStack
	stackKey    []byte
	// ids maps each JFR lock's key to the LockSummary.ID it was last
	// reported as (withJFR).
	ids map[string]string
	// resources are the recording's totals by resource (jfrSiteID).
	resources map[string]*jfrResourceAgg
}

// jfrLock is one lock instance (resource, class and address) as JFR saw it.
type jfrLock struct {
	resource, class, address string
	// siteID is the resource the lock's first wait belongs to, in the
	// dumps' terms (siteID of its kind, class and call-site method).
	siteID            string
	events            int64
	wait              time.Duration
	hist              logHist
	kinds             map[string]int64
	owners, notifiers boundedCounts
	waiters           boundedCounts
	timedOut          int64
	sites             map[string]*jfrSiteAgg
}

type jfrSiteAgg struct {
	events int64
	wait   time.Duration
	hist   logHist
}

// addJFR folds one snapshot's JFR waits and GC pauses in.
func (a *Aggregator) addJFR(s *snapshot.Snapshot) {
	for _, l := range s.CPULoads {
		if l.Time.IsZero() {
			continue
		}
		tl := a.timeline("jvm_cpu_load")
		tl.add("JVM user", l.Time, 100*l.JVMUser)
		tl.add("JVM system", l.Time, 100*l.JVMSystem)
		tl.add("machine total", l.Time, 100*l.MachineTotal)
	}
	if len(s.Waits) == 0 && len(s.GCPauses) == 0 {
		return
	}
	j := a.jfr
	if j == nil {
		j = &jfrAgg{locks: map[string]*jfrLock{}, stacks: map[string]*WaitStack{}}
		a.jfr = j
	}
	for i := range s.Waits {
		a.addJFRWait(j, &s.Waits[i])
	}
	for _, g := range s.GCPauses {
		j.gcs++
		j.gcPause += g.SumOfPauses
		if !g.Start.IsZero() {
			a.timeline("gc_pauses").add("pause (sum of a collection's pauses)", g.Start, float64(g.SumOfPauses)/1e6)
		}
	}
}

func (a *Aggregator) addJFRWait(j *jfrAgg, w *snapshot.WaitEvent) {
	d := max(w.Duration, 0)
	j.events++
	j.wait += d
	if !w.Start.IsZero() {
		if j.first.IsZero() || w.Start.Before(j.first) {
			j.first = w.Start
		}
		if e := w.Start.Add(d); e.After(j.last) {
			j.last = e
		}
	}
	resource := jfrResource(w)
	site := jfrSiteFrame(w.Stack)
	class, addr := w.Class, ""
	if w.Address != 0 {
		addr = fmt.Sprintf("0x%016x", w.Address)
	}
	rid := jfrSiteID(w, resource) // walks the stack: once per wait
	key := lockKey(resource, class, addr)
	if resource == "pinned" {
		key = lockKey(resource, class, site)
	}
	l := j.locks[key]
	if l == nil {
		if len(j.locks) >= a.opts.MaxLocks {
			var victim string
			var least time.Duration = math.MaxInt64
			for k, x := range j.locks {
				if x.wait < least || x.wait == least && k > victim {
					victim, least = k, x.wait
				}
			}
			delete(j.locks, victim)
		}
		l = &jfrLock{resource: resource, class: class, address: addr, siteID: rid, kinds: map[string]int64{}, sites: map[string]*jfrSiteAgg{}}
		j.locks[key] = l
	}
	// The resource's totals are kept apart from the locks' (bounded on
	// their own), so they add up to the recording's whatever the GC did to
	// the instances' addresses.
	if j.resources == nil {
		j.resources = map[string]*jfrResourceAgg{}
	}
	ra := boundedEntry(j.resources, rid, a.opts.MaxLocks, jfrOtherResources)
	ra.events++
	ra.wait += d
	l.events++
	l.wait += d
	l.hist.add(d)
	l.kinds[w.Kind]++
	if w.TimedOut {
		l.timedOut++
	}
	switch w.Event {
	case "jdk.JavaMonitorEnter":
		l.owners.inc(w.Other, 1)
	case "jdk.JavaMonitorWait":
		l.notifiers.inc(w.Other, 1)
	}
	l.waiters.inc(w.Thread, 1)
	sa := boundedEntry(l.sites, site, maxJFRSites, "(other sites)")
	sa.events++
	sa.wait += d
	sa.hist.add(d)
	a.addWaitStack(j, w.Stack, key, d)
}

// boundedEntry returns m's entry for key, made when missing; once m holds
// limit entries, a new key's values go to the entry overflow instead, so
// the table stays bounded and its totals still add up.
func boundedEntry[T any](m map[string]*T, key string, limit int, overflow string) *T {
	if e := m[key]; e != nil {
		return e
	}
	if len(m) >= limit {
		key = overflow
		if e := m[key]; e != nil {
			return e
		}
	}
	e := new(T)
	m[key] = e
	return e
}

// jfrOtherResources collects the waits of resources past the table's
// bound, so the resources' totals still add up to the recording's.
const jfrOtherResources = "(other resources)"

// jfrResourceAgg is what a recording measured at one resource.
type jfrResourceAgg struct {
	events int64
	wait   time.Duration
}

// jfrSiteID is the resource of a recorded wait, computed as the dumps
// compute a waiter's: its kind and class, and the call-site method where
// its code calls into the waiting machinery (the wait rule's call site for
// a park or a wait(), the first application frame for a monitor enter).
func jfrSiteID(w *snapshot.WaitEvent, resource string) string {
	site := ""
	switch w.Event {
	case "jdk.ThreadPark":
		site = threaddump.ApplyParkRule(w.Stack, 0, "?", w.Class).CallSite.Function()
	case "jdk.JavaMonitorWait":
		site = threaddump.ApplyMonitorWaitRule(w.Stack, 0, "?", w.Class).CallSite.Function()
	}
	if site == "" || site == "." {
		site = appFrameFrom(w.Stack, 0)
	}
	return siteID(resource, w.Class, site)
}

// jfrResource is what a waited-for object is, in the lock table's terms.
func jfrResource(w *snapshot.WaitEvent) string {
	switch w.Event {
	case "jdk.ThreadPark":
		return string(threaddump.KindSynchronizer)
	case "jdk.VirtualThreadPinned":
		return "pinned"
	}
	return string(threaddump.KindMonitor)
}

// jfrSiteFrame is the first application frame of a wait stack.
func jfrSiteFrame(st []threaddump.Frame) string {
	for i := range st {
		if !isLibraryFrame(st[i].Class) {
			return jfrFrameString(st[i])
		}
	}
	if len(st) > 0 {
		return jfrFrameString(st[0])
	}
	return "(no stack)"
}

// jfrFrameString renders a recorded frame: JFR gives the line but not the
// file, so "Class.method(line 49)" rather than a dump's "(File.java:49)".
func jfrFrameString(f threaddump.Frame) string {
	switch {
	case f.File != "" || f.Native:
		return f.String()
	case f.Line > 0:
		return f.Class + "." + f.Method + "(line " + strconv.Itoa(f.Line) + ")"
	}
	return f.Class + "." + f.Method + "()"
}

// addWaitStack weighs one wait's stack by its duration, bounded like the
// dumps' stacks: when the table is full, new stacks go to one entry.
func (a *Aggregator) addWaitStack(j *jfrAgg, st []threaddump.Frame, lockID string, d time.Duration) {
	if len(st) == 0 {
		return
	}
	k := j.stackKey[:0]
	for i := len(st) - 1; i >= 0; i-- {
		k = append(k, st[i].Class...)
		k = append(k, '.')
		k = append(k, st[i].Method...)
		k = append(k, ';')
	}
	j.stackKey = k
	ws := j.stacks[string(k)]
	if ws == nil {
		if len(j.stacks) >= a.opts.MaxStacks {
			ws = j.stacks[OtherStacks]
			if ws == nil {
				ws = &WaitStack{Frames: []string{OtherStacks}, ByLock: map[string]int64{}}
				j.stacks[OtherStacks] = ws
			}
		} else {
			fr := make([]string, len(st))
			for i := range st {
				fr[len(st)-1-i] = st[i].Function()
			}
			ws = &WaitStack{Frames: fr, ByLock: map[string]int64{}}
			j.stacks[string(k)] = ws
		}
	}
	ws.Count++
	ws.WaitNanos += int64(d)
	if _, ok := ws.ByLock[lockID]; ok || len(ws.ByLock) < maxWaitStackLocks {
		ws.ByLock[lockID] += int64(d)
	}
}

// WaitStacks returns the measured wait stacks, most wait time first: a
// JFR recording's, and the native stacks the kernel copied at futex waits
// (exact waits); nil without either. Lock IDs in ByLock are
// LockSummary.IDs.
func (a *Aggregator) WaitStacks() []*WaitStack {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.jfr == nil {
		out := a.exactWaitStacks()
		sortWaitStacks(out)
		return out
	}
	a.lockSummaries() // refreshes a.jfr.ids
	ids := a.jfr.ids
	out := make([]*WaitStack, 0, len(a.jfr.stacks))
	for _, ws := range a.jfr.stacks {
		c := &WaitStack{Frames: append([]string{}, ws.Frames...), Count: ws.Count, WaitNanos: ws.WaitNanos, ByLock: map[string]int64{}, Source: WaitsJFR}
		for k, v := range ws.ByLock {
			if id, ok := ids[k]; ok {
				c.ByLock[id] += v
			}
		}
		out = append(out, c)
	}
	out = append(out, a.exactWaitStacks()...)
	sortWaitStacks(out)
	return out
}

// sortWaitStacks orders wait stacks by wait time, then by frames.
func sortWaitStacks(out []*WaitStack) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].WaitNanos != out[j].WaitNanos {
			return out[i].WaitNanos > out[j].WaitNanos
		}
		return strings.Join(out[i].Frames, ";") < strings.Join(out[j].Frames, ";")
	})
}

// jfrJoined is a lock summary with the JFR lock it carries, if any.
type jfrJoined struct {
	LockSummary
	jfrKey string
}

// joinJFRLocks attaches each JFR lock to the dumps' lock of the same
// resource, class and address; a JFR lock without one becomes a lock of
// its own. HotSpot records a monitor's address as that of its
// ObjectMonitor, not of the object a dump prints, so a monitor that did
// not join by address joins the one dump lock of its class when exactly
// one JFR monitor and one dump monitor have that class.
func (a *Aggregator) joinJFRLocks(locks []LockSummary) []jfrJoined {
	out := make([]jfrJoined, len(locks))
	for i := range locks {
		out[i].LockSummary = locks[i]
	}
	if a.jfr == nil {
		return out
	}
	byAddr := map[string]int{}
	byClass := map[string][]int{}
	dumpSites := map[string]bool{}
	for i, l := range locks {
		if l.Resource == "futex" {
			continue
		}
		if l.Site != "" {
			dumpSites[l.Site] = true
		}
		byAddr[lockKey(l.Resource, l.Class, l.Address)] = i
		for _, ad := range l.Addresses {
			byAddr[lockKey(l.Resource, l.Class, ad)] = i
		}
		byClass[l.Resource+"|"+l.Class] = append(byClass[l.Resource+"|"+l.Class], i)
	}
	jfrByClass := map[string]int{}
	for _, jl := range a.jfr.locks {
		jfrByClass[jl.resource+"|"+jl.class]++
	}
	keys := make([]string, 0, len(a.jfr.locks))
	for k := range a.jfr.locks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		jl := a.jfr.locks[k]
		i, ok := byAddr[k]
		if !ok && jl.address != "" {
			if c := byClass[jl.resource+"|"+jl.class]; len(c) == 1 && jfrByClass[jl.resource+"|"+jl.class] == 1 {
				i, ok = c[0], true
			}
		}
		if ok && out[i].jfrKey == "" {
			out[i].JFR = jl.summary()
			out[i].jfrKey = k
			continue
		}
		if ok || dumpSites[jl.siteID] {
			// The dumps saw this lock (at another address the GC gave
			// it) or its resource: its waits count at the resource
			// (ContentionSite.JFR), not as a lock "in no thread dump".
			continue
		}
		out = append(out, jfrJoined{LockSummary: jl.lockSummary(k), jfrKey: k})
	}
	return out
}

// withJFR joins the recording's locks into the dumps' lock table.
func (a *Aggregator) withJFR(locks []LockSummary) []LockSummary {
	if a.jfr == nil {
		return locks
	}
	joined := a.joinJFRLocks(locks)
	out := make([]LockSummary, len(joined))
	ids := make(map[string]string, len(a.jfr.locks))
	for i := range joined {
		out[i] = joined[i].LockSummary
		if k := joined[i].jfrKey; k != "" {
			ids[k] = out[i].ID
		}
	}
	a.jfr.ids = ids
	return out
}

// lockSummary is a JFR lock no dump saw, as a row of the lock table.
func (l *jfrLock) lockSummary(key string) LockSummary {
	j := l.summary()
	ls := LockSummary{
		ID: key, Resource: l.resource, Class: l.class, Address: l.address,
		WaitKinds:     map[string]int{},
		WaiterThreads: []string{},
		WaitFrames:    []FrameCount{},
		OwnerFrames:   []FrameCount{},
		JFR:           j,
	}
	best, n := "", int64(0)
	for k, c := range l.kinds {
		ls.WaitKinds[k] = int(c)
		if c > n || c == n && threaddump.WaitKindRank(threaddump.WaitKind(k)) < threaddump.WaitKindRank(threaddump.WaitKind(best)) {
			best, n = k, c
		}
	}
	ls.Kind = best
	for _, t := range l.waiters.top(10) {
		ls.WaiterThreads = append(ls.WaiterThreads, t.Frame)
	}
	for _, s := range j.Sites {
		if len(ls.WaitFrames) == 5 {
			break
		}
		ls.WaitFrames = append(ls.WaitFrames, FrameCount{Frame: s.Frame, Samples: int(s.Events)})
	}
	if len(j.Sites) > 0 {
		ls.WaitFrame = strPtr(j.Sites[0].Frame)
	}
	// No Site: contention sites are the dumps' (instances with waiters
	// at one instant), which a recorded-only lock has none of.
	return ls
}

// summary reports the lock's JFR figures.
func (l *jfrLock) summary() *JFRWaits {
	j := &JFRWaits{
		Events: l.events, WaitSeconds: round6(l.wait.Seconds()),
		P50Ms: ms(l.hist.quantile(0.5)), P99Ms: ms(l.hist.quantile(0.99)), MaxMs: ms(l.hist.max),
		Kinds:          map[string]int64{},
		PreviousOwners: threadCounts(l.owners),
		Notifiers:      threadCounts(l.notifiers),
		TimedOut:       l.timedOut,
		Sites:          []JFRSite{},
		Histogram:      l.hist.buckets(),
	}
	for k, v := range l.kinds {
		j.Kinds[k] = v
	}
	for f, s := range l.sites {
		j.Sites = append(j.Sites, JFRSite{
			Frame: f, Events: s.events, WaitSeconds: round6(s.wait.Seconds()),
			P50Ms: ms(s.hist.quantile(0.5)), P99Ms: ms(s.hist.quantile(0.99)), MaxMs: ms(s.hist.max),
		})
	}
	sort.Slice(j.Sites, func(a, b int) bool {
		if j.Sites[a].WaitSeconds != j.Sites[b].WaitSeconds {
			return j.Sites[a].WaitSeconds > j.Sites[b].WaitSeconds
		}
		return j.Sites[a].Frame < j.Sites[b].Frame
	})
	if len(j.Sites) > 10 {
		j.Sites = j.Sites[:10]
	}
	return j
}

func threadCounts(b boundedCounts) []JFRThreadCount {
	out := []JFRThreadCount{}
	for _, t := range b.top(5) {
		out = append(out, JFRThreadCount{Thread: t.Frame, Events: int64(t.Samples)})
	}
	return out
}

func ms(d time.Duration) float64 { return round3(float64(d) / 1e6) }

// jfrSummary reports the recording as a whole; nil without one.
func (a *Aggregator) jfrSummary() *JFRSummary {
	j := a.jfr
	if j == nil {
		return nil
	}
	s := &JFRSummary{
		Events: j.events, WaitSeconds: round6(j.wait.Seconds()),
		First: j.first.UTC(), Last: j.last.UTC(),
		GCPauses: j.gcs, GCPauseSeconds: round6(j.gcPause.Seconds()),
	}
	if j.last.After(j.first) {
		s.DurationSeconds = round3(j.last.Sub(j.first).Seconds())
	}
	return s
}

// logHist is a histogram of durations with 8 buckets per power of two of
// nanoseconds (buckets at most 12.5 % wide), sparse: a lock's waits fill a
// few dozen buckets, so memory is bounded by 64*8 entries and is small in
// practice.
type logHist struct {
	counts map[uint16]int64
	n      int64
	max    time.Duration
}

const histSub = 3 // 2^3 buckets per octave

func histIndex(d time.Duration) uint16 {
	v := uint64(max(d, 1))
	e := bits.Len64(v) - 1
	var sub uint64
	if e >= histSub {
		sub = (v >> (e - histSub)) & (1<<histSub - 1)
	} else {
		sub = (v << (histSub - e)) & (1<<histSub - 1)
	}
	return uint16(e<<histSub) | uint16(sub)
}

// histLow is the smallest duration of bucket i; its width is
// histLow(i)'s octave / 8.
func histBounds(i uint16) (lo, hi float64) {
	e := int(i >> histSub)
	sub := float64(i & (1<<histSub - 1))
	base := math.Ldexp(1, e)
	w := base / (1 << histSub)
	return base + sub*w, base + (sub+1)*w
}

func (h *logHist) add(d time.Duration) {
	if h.counts == nil {
		h.counts = map[uint16]int64{}
	}
	h.counts[histIndex(d)]++
	h.n++
	h.max = max(h.max, d)
}

// quantile estimates the q-quantile: the middle of the bucket that holds
// it, never above the largest value seen.
func (h *logHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	idx := make([]uint16, 0, len(h.counts))
	for i := range h.counts {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var cum int64
	for _, i := range idx {
		cum += h.counts[i]
		if cum >= rank {
			lo, hi := histBounds(i)
			return min(time.Duration((lo+hi)/2), h.max)
		}
	}
	return h.max
}

// buckets coarsens the histogram to one bucket per power of two, from the
// shortest wait's to the longest's.
func (h *logHist) buckets() []JFRBucket {
	out := []JFRBucket{}
	if h.n == 0 {
		return out
	}
	lo, hi := 64, -1
	octave := map[int]int64{}
	for i, c := range h.counts {
		e := int(i >> histSub)
		octave[e] += c
		lo, hi = min(lo, e), max(hi, e)
	}
	for e := lo; e <= hi; e++ {
		out = append(out, JFRBucket{LeMs: round6(math.Ldexp(1, e+1) / 1e6), Events: octave[e]})
	}
	return out
}

// JFRLine says in one line what JFR measured about a lock: "waited N
// times, T in all, p99 X ms, mostly behind thread Y".
func JFRLine(j *JFRWaits) string {
	if j == nil {
		return ""
	}
	return "waited " + plural64(j.Events, "time") + ", " + jfrFigures(j)
}

// jfrFigures is JFRLine after the count: "T in all, p50 ..., mostly
// behind thread Y".
func jfrFigures(j *JFRWaits) string {
	s := fmt.Sprintf("%s in all, p50 %s ms, p99 %s ms, max %s ms",
		fmtSeconds(j.WaitSeconds), fmtMs(j.P50Ms), fmtMs(j.P99Ms), fmtMs(j.MaxMs))
	if who, share := behind(j); who != "" {
		s += fmt.Sprintf(", mostly behind thread %q (%.0f%% of the waits)", who, share*100)
	}
	return s
}

// behind is the thread most waits waited for: the previous owner of a
// monitor, or the notifier of a wait(); its share of the waits.
func behind(j *JFRWaits) (string, float64) {
	list := j.PreviousOwners
	if len(list) == 0 {
		list = j.Notifiers
	}
	if len(list) == 0 || j.Events == 0 {
		return "", 0
	}
	return list[0].Thread, float64(list[0].Events) / float64(j.Events)
}

func plural64(n int64, noun string) string {
	if n == 1 {
		return "once"
	}
	if noun == "time" {
		return fmt.Sprintf("%d times", n)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f ms", s*1000)
}

func fmtMs(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// waitSeconds is the recorded wait time, 0 without a recording.
func (j *JFRWaits) waitSeconds() float64 {
	if j == nil {
		return 0
	}
	return j.WaitSeconds
}

// jfrSentence adds a recording's exact figures to a lock finding's
// sentence; empty without a recording.
func jfrSentence(l LockSummary) string {
	if l.JFR == nil || l.JFR.Events == 0 {
		return ""
	}
	return " JFR: threads " + JFRLine(l.JFR) + "."
}

// jfrFinding is the finding of a lock only a recording saw. It needs
// enough waits to matter: on average at least a tenth of a thread waiting
// over the recording, and a few dozen waits.
func jfrFinding(l LockSummary, s *Summary) (Finding, bool) {
	j := l.JFR
	span := 1.0
	if s.JFR != nil {
		span = max(s.JFR.DurationSeconds, 1)
	}
	avg := j.WaitSeconds / span
	if avg < 0.1 || j.Events < 20 {
		return Finding{}, false
	}
	sev := SeverityWarning
	if avg >= 2 {
		sev = SeverityCritical
	}
	where := ""
	if l.WaitFrame != nil {
		where = " at " + *l.WaitFrame
	}
	ev := []string{fmt.Sprintf("%s %s %s (seen in the recording only, in no thread dump)", l.Resource, l.Class, l.Address),
		fmt.Sprintf("%.2f threads waiting on average over %.1f s of recording", avg, span)}
	if len(j.Kinds) > 1 {
		ks := map[string]int{}
		for k, v := range j.Kinds {
			ks[k] = int(v)
		}
		ev = append(ev, "how they wait, by waits: "+WaitKindBreakdown(ks))
	}
	for i, st := range j.Sites {
		if i == 3 {
			break
		}
		ev = append(ev, fmt.Sprintf("at %s: %s, %s in all, p99 %s ms", st.Frame, plural64(st.Events, "time"), fmtSeconds(st.WaitSeconds), fmtMs(st.P99Ms)))
	}
	if len(l.WaiterThreads) > 0 {
		ev = append(ev, "waiters: "+quoteList(l.WaiterThreads))
	}
	next := "Shorten the critical section, split the lock, or replace it with a concurrent structure; the previous owners are the threads to look at."
	summary := fmt.Sprintf("Threads waited %s on %s%s%s: %s.", plural64(j.Events, "time"), LockName(l), waitHow(l), where, jfrFigures(j))
	if l.Resource == "pinned" {
		ev[0] = "jdk.VirtualThreadPinned events (seen in the recording only)"
		summary = fmt.Sprintf("Virtual threads blocked while pinned to their carrier thread %s%s: %s.", plural64(j.Events, "time"), where, jfrFigures(j))
		next = "A virtual thread that blocks with a native frame (JNI, a foreign upcall) or a class initializer on its stack keeps its carrier, so other virtual threads cannot run on it: move the blocking call out of the native call or initializer, or run that work on a platform thread."
	}
	if waitsForSignal(l) {
		next = "The waiters wait inside work for another thread's signal: make the notifier's step shorter or batch more per step, or let callers go on without waiting for it."
	}
	return Finding{
		Kind:     FindingLockHotspot,
		Subject:  LockName(l),
		Severity: sev,
		Summary:  summary,
		Evidence: ev,
		NextStep: next,
		impact:   1e6 + avg*1000,
	}, true
}

// JFRResourceWaits is what a recording measured at one resource, over all
// its instances and whatever addresses the GC gave them.
type JFRResourceWaits struct {
	Events      int64   `json:"events"`
	WaitSeconds float64 `json:"wait_seconds"`
}

// withJFRSites puts the recording's totals on the resources the dumps saw
// and adds, as resources of their own, the ones only the recording saw:
// the resources' JFR totals add up to the recording's.
func (a *Aggregator) withJFRSites(sites []ContentionSite) []ContentionSite {
	if a.jfr == nil || len(a.jfr.resources) == 0 {
		return sites
	}
	seen := map[string]bool{}
	for i := range sites {
		if r := a.jfr.resources[sites[i].ID]; r != nil {
			sites[i].JFR = &JFRResourceWaits{Events: r.events, WaitSeconds: round6(r.wait.Seconds())}
			seen[sites[i].ID] = true
		}
	}
	// A recorded wait without a stack has no call site: it joins the one
	// resource the dumps saw of its kind and class, when there is one.
	byClass := map[string][]int{}
	for i := range sites {
		k := sites[i].Kind + "|" + sites[i].Class + "|"
		byClass[k] = append(byClass[k], i)
	}
	ids := make([]string, 0, len(a.jfr.resources))
	for id, r := range a.jfr.resources {
		if seen[id] {
			continue
		}
		if c := byClass[id]; len(c) == 1 && sites[c[0]].JFR != nil {
			sites[c[0]].JFR.Events += r.events
			sites[c[0]].JFR.WaitSeconds = round6(sites[c[0]].JFR.WaitSeconds + r.wait.Seconds())
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := a.jfr.resources[id]
		cs := ContentionSite{ID: id, WaiterThreads: []string{}, OthersRun: []FrameCount{}, Holders: []FrameCount{},
			JFR: &JFRResourceWaits{Events: r.events, WaitSeconds: round6(r.wait.Seconds())}}
		if parts := strings.SplitN(id, "|", 3); len(parts) == 3 {
			cs.Kind, cs.Class, cs.WaitFrame = parts[0], parts[1], parts[2]
		}
		sites = append(sites, cs)
	}
	return sites
}
