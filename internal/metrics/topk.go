package metrics

import (
	"sort"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// lockKey is the label pair of one lock series. Several locks of the
// Summary may share one (two classes with the same short name waited for at
// the same frame, labels cut to length): their values are summed, since a
// scrape must not carry the same series twice.
type lockKey struct{ lock, site string }

var otherLockKey = lockKey{lock: otherLabel}

// lockRow is one lock series' values at a scrape.
type lockRow struct {
	key     lockKey
	waiters int     // threads queued now (LockSummary.CurrentWaiters)
	seconds float64 // blocked thread-seconds over the run
}

// overtakeMargin is how far an unnamed lock's blocked time must exceed the
// weakest named lock's before it takes that lock's place, so two locks of
// similar weight do not swap names on every scrape.
const overtakeMargin = 1.2

// lockSelector chooses, for one target, the locks that get series of their
// own, and keeps the counter of all the others.
//
// ctprof_lock_blocked_thread_seconds_total is a counter, so its series must
// never go down while the target lives. A plain "top K now, the rest in
// other" would break that: when a lock climbs into the top K, its seconds
// leave "other", and "other" drops. So a lock, once named, keeps its name
// while the Summary lists it (a newcomer replaces it only when clearly
// hotter), and "other" does not hold the others' current sum but adds up
// their increases between scrapes. rate() over either is exact; only the
// raw values of named series plus "other" may exceed the true total by
// what a promoted lock had accumulated before it was named.
type lockSelector struct {
	top   int
	named map[lockKey]bool
	// prev is every lock's blocked seconds at the previous scrape.
	prev map[lockKey]float64
	// exported is the last value exported per named series: a named
	// series never goes below it, even if the Aggregator evicts one of the
	// locks summed into it.
	exported     map[lockKey]float64
	otherSeconds float64
}

func newLockSelector(top int) *lockSelector {
	return &lockSelector{top: top, named: map[lockKey]bool{}, prev: map[lockKey]float64{}, exported: map[lockKey]float64{}}
}

// lockLabels keeps, by LockSummary.ID, the label pair each lock got when
// first exported, while the Summary lists it. Both labels can change as
// samples accumulate: the wait kind in `lock` is the kind most of the
// lock's waiters showed, `site` their most common frame. A counter whose
// labels change is a new series, and its whole total would be counted
// again in "other" as the increase of a key seen for the first time.
type lockLabels map[string]lockKey

// of returns the labels of l, the ones it was first given if it had any.
func (ll lockLabels) of(l *analysis.LockSummary) lockKey {
	if k, ok := ll[l.ID]; ok && l.ID != "" {
		return k
	}
	k := lockKey{lock: lockLabel(l), site: siteLabel(l)}
	if l.ID != "" {
		ll[l.ID] = k
	}
	return k
}

// keep forgets the locks the Summary no longer lists (the Aggregator
// evicted them), so the map follows the Summary's size.
func (ll lockLabels) keep(locks []analysis.LockSummary) {
	present := make(map[string]bool, len(locks))
	for i := range locks {
		present[locks[i].ID] = true
	}
	for id := range ll {
		if !present[id] {
			delete(ll, id)
		}
	}
}

// groupLocks turns the Summary's locks into one row per label pair.
func groupLocks(locks []analysis.LockSummary, labels lockLabels) []lockRow {
	by := make(map[lockKey]*lockRow, len(locks))
	var order []lockKey
	for i := range locks {
		l := &locks[i]
		k := labels.of(l)
		r := by[k]
		if r == nil {
			r = &lockRow{key: k}
			by[k] = r
			order = append(order, k)
		}
		r.waiters += l.CurrentWaiters
		r.seconds += l.BlockedThreadSeconds
	}
	rows := make([]lockRow, 0, len(order))
	for _, k := range order {
		rows = append(rows, *by[k])
	}
	return rows
}

// update takes this scrape's rows and returns the named rows (in a stable
// order) and the "other" row.
func (s *lockSelector) update(rows []lockRow) (named []lockRow, other lockRow) {
	present := make(map[lockKey]bool, len(rows))
	for _, r := range rows {
		present[r.key] = true
	}
	for k := range s.named {
		if !present[k] {
			delete(s.named, k)
			delete(s.exported, k)
		}
	}
	ranked := append([]lockRow(nil), rows...)
	sort.Slice(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if a.seconds != b.seconds {
			return a.seconds > b.seconds
		}
		if a.waiters != b.waiters {
			return a.waiters > b.waiters
		}
		if a.key.lock != b.key.lock {
			return a.key.lock < b.key.lock
		}
		return a.key.site < b.key.site
	})
	// Free slots go to the hottest unnamed locks; then a clearly hotter
	// unnamed lock replaces the weakest named one.
	for _, r := range ranked {
		if len(s.named) >= s.top {
			break
		}
		if r.key != otherLockKey && !s.named[r.key] {
			s.named[r.key] = true
		}
	}
	for _, r := range ranked {
		if s.named[r.key] || r.key == otherLockKey {
			continue
		}
		weakest, found := s.weakest(ranked)
		if !found || r.seconds <= weakest.seconds*overtakeMargin || r.seconds-weakest.seconds < 0.001 {
			break // ranked is sorted: no later lock can do better
		}
		delete(s.named, weakest.key)
		delete(s.exported, weakest.key)
		s.named[r.key] = true
	}

	other.key = otherLockKey
	for _, r := range rows {
		if s.named[r.key] {
			if v := s.exported[r.key]; r.seconds < v {
				r.seconds = v
			}
			s.exported[r.key] = r.seconds
			named = append(named, r)
			continue
		}
		other.waiters += r.waiters
		if d := r.seconds - s.prev[r.key]; d > 0 {
			s.otherSeconds += d
		}
	}
	other.seconds = s.otherSeconds
	clear(s.prev)
	for _, r := range rows {
		s.prev[r.key] = r.seconds
	}
	sort.Slice(named, func(i, j int) bool {
		if named[i].key.lock != named[j].key.lock {
			return named[i].key.lock < named[j].key.lock
		}
		return named[i].key.site < named[j].key.site
	})
	return named, other
}

// weakest is the named lock with the least blocked time.
func (s *lockSelector) weakest(ranked []lockRow) (lockRow, bool) {
	for i := len(ranked) - 1; i >= 0; i-- {
		if s.named[ranked[i].key] {
			return ranked[i], true
		}
	}
	return lockRow{}, false
}

// poolRow is one pool series.
type poolRow struct {
	pool    string
	threads int
}

// topPools returns the top pools by thread count and the sum of the rest.
// Pools are gauges, so the choice may change from scrape to scrape; names
// that collide once cut to length (or a pool really named "other") are
// summed.
func topPools(pools []analysis.PoolSummary, top int) (named []poolRow, other int) {
	by := map[string]int{}
	for _, p := range pools {
		by[LabelValue(p.Name)] += p.Threads
	}
	return topCounts(by, top)
}

// topResources is topPools for the resources threads wait at: their
// current waiters by "Class at Class.method" (the resource's class and the
// method its waiters call in from).
func topResources(sites []analysis.ContentionSite, top int) (named []poolRow, other int) {
	by := map[string]int{}
	for _, cs := range sites {
		by[LabelValue(resourceLabel(cs))] += cs.CurrentWaiters
	}
	return topCounts(by, top)
}

// resourceLabel names a resource: its class's simple name and the method
// its waiters call in from ("SynchronousQueue at ConcurrentBag.borrow").
func resourceLabel(cs analysis.ContentionSite) string {
	frame := cs.WaitFrame
	if i := strings.IndexByte(frame, '('); i > 0 {
		frame = frame[:i]
	}
	if i := strings.LastIndexByte(frame, '.'); i > 0 {
		if j := strings.LastIndexByte(frame[:i], '.'); j >= 0 {
			frame = frame[j+1:]
		}
	}
	class := cs.Class
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		class = class[i+1:]
	}
	return class + " at " + frame
}

// topCounts keeps the top largest counts by label (ties by label) and sums
// the rest, and any count already labelled "other", into other.
func topCounts(by map[string]int, top int) (named []poolRow, other int) {
	other = by[otherLabel]
	delete(by, otherLabel)
	rows := make([]poolRow, 0, len(by))
	for p, n := range by {
		rows = append(rows, poolRow{p, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].threads != rows[j].threads {
			return rows[i].threads > rows[j].threads
		}
		return rows[i].pool < rows[j].pool
	})
	if len(rows) > top {
		for _, r := range rows[top:] {
			other += r.threads
		}
		rows = rows[:top]
	}
	return rows, other
}
