package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// lockAgg is one lock instance over the run. Java locks are identified by
// address, followed across GC moves (identifyJavaLocks); locks without an
// address by kind, class and wait site. Futexes are identified by address
// (native memory does not move).
type lockAgg struct {
	id, kind, class string
	// addresses seen, most recent last (at most maxLockAddresses).
	addresses []string
	address   string // at the peak

	samples int // samples with at least one waiter
	// current is the waiter count of the latest sample of the lock's kind.
	current        int
	waiterSum      int
	peak           int
	blockedSeconds float64

	waitFrames  boundedCounts
	ownerFrames boundedCounts

	// kinds counts the waiter samples of each wait kind
	// (threaddump.WaitKind, or "futex").
	kinds map[string]int

	// From the latest sample with the peak number of waiters.
	owner, ownerFrame, ownerLockFrame *string
	releaser, releaserFrame           *string
	waiterNames                       []string

	// Identity across dumps (Java locks): the wait site the lock was
	// first seen at, its address, owner and dump number when last seen.
	site      string
	lastAddr  string
	lastOwner string
	lastSeq   int

	// Futex locks only.
	symbol    *string
	module    string
	futexKind string
	futex     *futexAgg
	exact     *exactAgg // the kernel's counts (exactwaits.go)
	// nativeSite is the native resource its waiters were last counted at.
	nativeSite string
	fast       *fastAgg // the fast reads' sightings (fastreads.go)

	waiters *downsampled

	// ser accumulates, for the pool most of the waiters belong to, how many
	// of its threads run and how many queue here (see serialization.go).
	ser map[string]*serAcc
}

const (
	maxLockAddresses = 8
	maxFrameCounts   = 32
)

// boundedCounts counts strings, keeping at most maxFrameCounts of them (a
// new one replaces the rarest, so the common ones survive).
type boundedCounts map[string]int

func (b *boundedCounts) inc(k string, n int) {
	if k == "" {
		return
	}
	if *b == nil {
		*b = boundedCounts{}
	}
	m := *b
	if _, ok := m[k]; !ok && len(m) >= maxFrameCounts {
		rare, rareN := "", int(^uint(0)>>1)
		for x, c := range m {
			if c < rareN || c == rareN && x > rare {
				rare, rareN = x, c
			}
		}
		delete(m, rare)
	}
	m[k] += n
}

// top returns up to n entries, most frequent first.
func (b boundedCounts) top(n int) []FrameCount {
	out := make([]FrameCount, 0, len(b))
	for k, v := range b {
		out = append(out, FrameCount{Frame: k, Samples: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Samples != out[j].Samples {
			return out[i].Samples > out[j].Samples
		}
		return out[i].Frame < out[j].Frame
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func lockKey(kind, class, site string) string { return kind + "|" + class + "|" + site }

// siteID identifies a resource: the lock's kind and class and the method
// where its waiters call in, without the line (one method that waits at
// two lines is one resource). A lock instance's LockSummary.Site is it.
func siteID(kind, class, site string) string {
	if i := strings.IndexByte(site, '('); i > 0 {
		site = site[:i]
	}
	return lockKey(kind, keyPart(class), site)
}

// keyPart is a class or module as the middle part of a resource's key,
// which readers split at '|': a mapped file's name, the target's to
// choose, may hold one.
func keyPart(class string) string { return strings.ReplaceAll(class, "|", "¦") }

// lock returns the aggregate for id, creating it and evicting the least
// contended lock when the table is full.
func (a *Aggregator) lock(id, kind, class string) *lockAgg {
	la := a.locks[id]
	if la != nil {
		return la
	}
	if len(a.locks) >= a.opts.MaxLocks && a.locksFullAt != a.dumps+1 {
		if !a.evictLocks(max(1, a.opts.MaxLocks/8)) {
			// Every lock left is the dump's own: none can go before the
			// next dump, and looking again for each of its locks would
			// cost the table's size each time.
			a.locksFullAt = a.dumps + 1
		}
	}
	la = &lockAgg{id: id, kind: kind, class: class, waiters: newDownsampled(a.opts.MaxPoints)}
	a.locks[id] = la
	return la
}

// evictLocks makes room in a full lock table: it drops the n locks with
// the fewest waiters counted (ties: the greatest key first), and reports
// whether it could drop any. A batch at a
// time: one look through the table per lock made a dump of 10,000 idle
// threads, each parked on an object of its own, scan the table 9,500
// times (a third of a 20 s attach's CPU, BenchmarkAttach10kThreads).
func (a *Aggregator) evictLocks(n int) (evicted bool) {
	type cand struct {
		key string
		sum int
	}
	cands := make([]cand, 0, len(a.locks))
	for k, x := range a.locks {
		// A Java lock of the dump being added has no waiters counted
		// yet; it must not make room for the next one.
		if x.kind != "futex" && a.dumps > 0 && x.lastSeq == a.dumps {
			continue
		}
		cands = append(cands, cand{k, x.waiterSum})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].sum != cands[j].sum {
			return cands[i].sum < cands[j].sum
		}
		return cands[i].key > cands[j].key
	})
	for _, c := range cands[:min(n, len(cands))] {
		delete(a.locks, c.key)
	}
	return len(cands) > 0
}

func (la *lockAgg) noteAddress(addr string) {
	la.address = addr
	for i, x := range la.addresses {
		if x == addr {
			la.addresses = append(la.addresses[:i], la.addresses[i+1:]...)
			break
		}
	}
	la.addresses = append(la.addresses, addr)
	if len(la.addresses) > maxLockAddresses {
		la.addresses = la.addresses[1:]
	}
}

// addJavaLocks folds one dump's lock table in, each lock instance apart
// (identifyJavaLocks), and each contention site (class + wait site) with
// all its instances. dt is the time the dump stands for: the time since the
// previous dump, so a lock's blocked thread-seconds do not depend on how
// the dumps are spaced; seq numbers the dump.
func (a *Aggregator) addJavaLocks(locks []*threaddump.LockInfo, dt time.Duration, tick *dumpTick, seq int) {
	order := a.identifyJavaLocks(locks, seq)
	for _, o := range order {
		la := o.la
		n := len(o.waiters)
		la.samples++
		la.waiterSum += n
		la.blockedSeconds += float64(n) * dt.Seconds()
		for _, w := range o.waiters {
			la.noteKind(string(w.Kind), 1)
			la.waitFrames.inc(waitFrame(w), 1)
			tick.waitsOn[w.Thread] = la.id
			tick.lockWaiters[la.id] = append(tick.lockWaiters[la.id], w.Thread)
		}
		best := bestInfo(o.infos)
		for _, li := range o.infos {
			if li.Owner != nil {
				la.ownerFrames.inc(appFrameFrom(li.Owner.Frames, 0), 1)
				if n > 0 {
					tick.lockOwners[la.id] = append(tick.lockOwners[la.id], li.Owner)
				}
			}
		}
		if n >= la.peak {
			la.peak = n
			la.noteAddress(best.Lock.Address)
			la.owner, la.ownerFrame, la.ownerLockFrame = nil, nil, nil
			la.releaser, la.releaserFrame = nil, nil
			if r := best.Releaser; r != nil && best.Owner == nil {
				la.releaser = strPtr(r.Name)
				if best.ReleaserFrame >= 0 && best.ReleaserFrame < len(r.Frames) {
					la.releaserFrame = strPtr(appFrameFrom(r.Frames, 0))
				}
			}
			if ow := best.Owner; ow != nil {
				la.owner = strPtr(ow.Name)
				if len(ow.Frames) > 0 {
					la.ownerFrame = strPtr(ow.Frames[0].String())
				}
				if best.OwnerFrame >= 0 && best.OwnerFrame < len(ow.Frames) {
					la.ownerLockFrame = strPtr(ow.Frames[best.OwnerFrame].String())
				}
			}
			la.waiterNames = la.waiterNames[:0]
			for i, w := range o.waiters {
				if i == 10 {
					break
				}
				la.waiterNames = append(la.waiterNames, w.Thread.Name)
			}
		} else {
			la.noteAddressSeen(best.Lock.Address)
		}
	}
	a.addSites(order, dt, tick)
	now := by2ids(order, func(o *javaObs) (string, int) { return o.la.id, len(o.waiters) })
	for _, la := range a.locks {
		if la.kind != "futex" {
			la.current = now[la.id]
		}
	}
	a.noteLockSeries(tick.dump.Time, now)
}

// addSites folds one dump's locks into their contention sites: the
// resources threads wait for, each with all its instances.
func (a *Aggregator) addSites(order []*javaObs, dt time.Duration, tick *dumpTick) {
	ix := &a.lockIdx
	if ix.sites == nil {
		ix.sites = map[string]*siteAgg{}
	}
	type acc struct {
		instances, waiters, maxOnOne int
	}
	now := map[*siteAgg]*acc{}
	for _, o := range order {
		la := o.la
		// A lock's site is the one it was first seen at, so an instance
		// counts at one site only.
		id := siteID(la.kind, la.class, la.site)
		sa := ix.sites[id]
		if sa == nil {
			if len(ix.sites) >= a.opts.MaxLocks {
				var victim string
				least := int(^uint(0) >> 1)
				for k, x := range ix.sites {
					if x.waiterSum < least || x.waiterSum == least && k > victim {
						victim, least = k, x.waiterSum
					}
				}
				delete(ix.sites, victim)
			}
			sa = &siteAgg{id: id, kind: la.kind, class: la.class, site: la.site, instances: map[string]bool{}}
			ix.sites[id] = sa
		}
		if !sa.instances[la.id] {
			sa.instanceCount++
			if len(sa.instances) < maxSiteInstances {
				sa.instances[la.id] = true
			}
		}
		c := now[sa]
		if c == nil {
			c = &acc{}
			now[sa] = c
		}
		n := len(o.waiters)
		c.instances++
		c.waiters += n
		c.maxOnOne = max(c.maxOnOne, n)
		if n > 0 && bestInfo(o.infos).Owner == nil {
			sa.unowned++
			if waitsForSignals(o.waiters) {
				sa.ownerless++
			}
		}
		sa.obs = append(sa.obs, o)
	}
	for _, sa := range ix.sites {
		sa.current = 0
	}
	for sa, c := range now {
		sa.samples++
		sa.current = c.waiters
		sa.waiterSum += c.waiters
		sa.blocked += float64(c.waiters) * dt.Seconds()
		sa.peakInstances = max(sa.peakInstances, c.instances)
		sa.maxOnOne = max(sa.maxOnOne, c.maxOnOne)
		if c.waiters >= sa.peakWaiters {
			sa.peakWaiters = c.waiters
			sa.notePeak(tick)
		}
		sa.obs = sa.obs[:0]
	}
}

// waitsForSignals reports waiters that mostly wait for a signal (a
// notify, a condition, a future, a latch) rather than queue for a lock
// that has an owner, named or not.
func waitsForSignals(ws []threaddump.Waiter) bool {
	n := 0
	for _, w := range ws {
		switch w.Kind {
		case threaddump.WaitObject, threaddump.WaitCondition, threaddump.WaitFuture:
			n++
		}
	}
	return 2*n > len(ws)
}

// notePeak records, from the dump with the most waiters at the site so
// far (the latest of equals), who waits, the pool most of them belong to,
// and what that pool's other threads and the instances' owners run: the
// sentence of a resource's finding rests on one dump, the one it names.
func (sa *siteAgg) notePeak(tick *dumpTick) {
	sa.waiterNames = sa.waiterNames[:0]
	waiting := map[*threaddump.Thread]bool{}
	pools := map[string]int{}
	var owners boundedCounts
	for _, o := range sa.obs {
		for _, w := range o.waiters {
			waiting[w.Thread] = true
			pools[PoolName(w.Thread.Name)]++
			if len(sa.waiterNames) < 10 {
				sa.waiterNames = append(sa.waiterNames, w.Thread.Name)
			}
		}
		for _, li := range o.infos {
			if li.Owner != nil {
				owners.inc(appFrameFrom(li.Owner.Frames, 0), 1)
			} else if li.Releaser != nil {
				owners.inc(appFrameFrom(li.Releaser.Frames, 0), 1)
			}
		}
	}
	sa.peakHolders = owners.top(3)
	sa.pool, sa.poolWaiting = "", 0
	for p, n := range pools {
		if n > sa.poolWaiting || n == sa.poolWaiting && p < sa.pool {
			sa.pool, sa.poolWaiting = p, n
		}
	}
	sa.poolThreads = 0
	var others boundedCounts
	if tick != nil && tick.dump != nil {
		for _, i := range tick.poolMembers(sa.pool) {
			t := &tick.dump.Threads[i]
			sa.poolThreads++
			// What the rest of the pool does: the threads that work
			// (running, or sleeping inside their work), not the idle ones.
			if !waiting[t] && len(t.Frames) > 0 && (t.State == threaddump.StateRunnable && !isIdleFrame(t.Frames[0].String()) || sleeping(t)) {
				others.inc(appFrameFrom(t.Frames, 0), 1)
			}
		}
	}
	sa.othersRun = others.top(3)
}

// noteKind counts n waiter samples of one wait kind.
func (la *lockAgg) noteKind(kind string, n int) {
	if la.kinds == nil {
		la.kinds = map[string]int{}
	}
	la.kinds[kind] += n
}

// principalKind is the wait kind most of the lock's waiter samples had
// (ties go to the kind that queues behind an owner); the resource's kind
// when there were none.
func (la *lockAgg) principalKind() string {
	best, n := "", 0
	for k, c := range la.kinds {
		if c > n || c == n && threaddump.WaitKindRank(threaddump.WaitKind(k)) < threaddump.WaitKindRank(threaddump.WaitKind(best)) {
			best, n = k, c
		}
	}
	if best == "" {
		return la.kind
	}
	return best
}

// noteAddressSeen records an address without moving the peak's.
func (la *lockAgg) noteAddressSeen(addr string) {
	peak := la.address
	la.noteAddress(addr)
	la.address = peak
}

// lockIndex is what the lock table needs to keep a lock's identity from one
// dump to the next.
type lockIndex struct {
	// byAddr maps kind|address to the ID of the lock last seen there.
	byAddr map[string]string
	// sites are the contention sites (kind, class and wait site).
	sites map[string]*siteAgg
	// prevDumpAt is when the previous dump was taken.
	prevDumpAt time.Time
}

// siteAgg is one contention site over the run: every instance of one lock
// class waited for at one frame. It tells a striped design (many
// instances, one waiter each) from one hot lock.
type siteAgg struct {
	id, kind, class, site string
	// instances are the IDs of the locks seen at the site (at most
	// maxSiteInstances are remembered; instanceCount keeps counting).
	instances     map[string]bool
	instanceCount int
	peakInstances int // most instances with waiters in one dump
	peakWaiters   int // most waiters at the site in one dump
	maxOnOne      int // most waiters on one instance in one dump
	current       int
	waiterSum     int
	samples       int
	blocked       float64
	// unowned counts the instance samples with waiters and no owner the
	// dump names, and ownerless those of them whose waiters wait for a
	// signal (each on its own latch, or for a hand-off), not behind a
	// holder of that instance.
	unowned, ownerless int
	// obs are this dump's instances (reset after each dump).
	obs []*javaObs
	// From the dump with the most waiters (notePeak).
	waiterNames              []string
	pool                     string
	poolThreads, poolWaiting int
	othersRun, peakHolders   []FrameCount
}

const maxSiteInstances = 4096

func addrKey(kind, addr string) string { return kind + "|" + addr }

// javaObs is one lock's waiters in one dump.
type javaObs struct {
	la      *lockAgg
	site    string
	waiters []threaddump.Waiter
	infos   []*threaddump.LockInfo
}

// identifyJavaLocks maps each contended lock of one dump to its aggregate.
// Within a dump two addresses are two locks, always. Across dumps a lock
// keeps its identity by address; when the GC moved it (its address is gone
// from this dump and a new address of the same class appears), by kind,
// class, wait site and owner (or, when no moved lock has its wait site, by
// kind, class and owner), but only where exactly one candidate fits both
// ways; otherwise the new address is a new lock. Locks without an
// address are identified by kind, class and wait site.
func (a *Aggregator) identifyJavaLocks(locks []*threaddump.LockInfo, seq int) []*javaObs {
	ix := &a.lockIdx
	if ix.byAddr == nil {
		ix.byAddr = map[string]string{}
	}
	var order []*javaObs
	byLock := map[*lockAgg]*javaObs{}
	add := func(la *lockAgg, site string, li *threaddump.LockInfo) {
		la.lastSeq = seq
		o := byLock[la]
		if o == nil {
			o = &javaObs{la: la, site: site}
			byLock[la] = o
			order = append(order, o)
		}
		o.waiters = append(o.waiters, li.Waiters...)
		o.infos = append(o.infos, li)
	}
	type pending struct {
		li   *threaddump.LockInfo
		site string
	}
	var unmatched []pending
	for _, li := range locks {
		if len(li.Waiters) == 0 {
			continue
		}
		kind, site := string(li.Kind), dominantWaitFrame(li.Waiters)
		if li.Lock.Address == "" {
			la := a.lock(lockKey(kind, li.Lock.Class, site), kind, li.Lock.Class)
			la.lastSeq = seq
			add(la, site, li)
			continue
		}
		if id, ok := ix.byAddr[addrKey(kind, li.Lock.Address)]; ok {
			if la := a.locks[id]; la != nil && la.class == li.Lock.Class && byLock[la] == nil {
				add(la, site, li)
				continue
			}
		}
		unmatched = append(unmatched, pending{li, site})
	}
	// Moved locks: candidates were seen in the previous dump, at an
	// address this dump no longer has, with the same class and wait site.
	// present holds the dump's addresses by kind; only needed (and built)
	// when some lock is not where it was.
	type kindAddr struct{ kind, addr string }
	var present map[kindAddr]bool
	if len(unmatched) > 0 {
		present = make(map[kindAddr]bool, len(locks))
		for _, li := range locks {
			if li.Lock.Address != "" {
				present[kindAddr{string(li.Kind), li.Lock.Address}] = true
			}
		}
	}
	// The locks that may have moved, by kind, class and wait site: one
	// pass over the table, not one per unmatched lock (a dump of 10,000
	// threads each waiting on an object of its own has as many).
	// A monitor entered from two methods (a log manager's rollover check
	// and its write) may have its waiters' commonest frame change in the
	// dump the GC moved it: the one moved lock of its kind and class is
	// then the candidate (byClass, the site left empty).
	type movedKey struct{ kind, class, site string }
	var moved map[movedKey][]*lockAgg
	if len(unmatched) > 0 {
		moved = map[movedKey][]*lockAgg{}
		for _, la := range a.locks {
			if la.lastSeq == seq-1 && la.lastAddr != "" && byLock[la] == nil && !present[kindAddr{la.kind, la.lastAddr}] {
				k := movedKey{la.kind, la.class, la.site}
				moved[k] = append(moved[k], la)
				byClass := movedKey{la.kind, la.class, ""}
				moved[byClass] = append(moved[byClass], la)
			}
		}
		for _, cs := range moved {
			// Map order would make ties differ from run to run.
			sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
		}
	}
	cands := make([][]*lockAgg, len(unmatched))
	claims := map[*lockAgg]int{}
	for i, u := range unmatched {
		kind := string(u.li.Kind)
		cs := moved[movedKey{kind, u.li.Lock.Class, u.site}]
		if len(cs) == 0 {
			cs = moved[movedKey{kind, u.li.Lock.Class, ""}]
		}
		all := cs
		if len(cs) > 1 && u.li.Owner != nil {
			// Owner continuity: the thread that held it before holds it
			// still.
			var same []*lockAgg
			for _, la := range cs {
				if la.lastOwner == u.li.Owner.Name {
					same = append(same, la)
				}
			}
			cs = same
		}
		switch {
		case len(cs) == 1:
			cands[i] = cs
			claims[cs[0]]++
		case len(cs) == 0:
			cs = all
			fallthrough
		default:
			// Ambiguous: every candidate counts as claimed twice, so no
			// rival takes one of them as its only fit.
			for _, la := range cs {
				claims[la] += 2
			}
		}
	}
	for i, u := range unmatched {
		kind, class, addr := string(u.li.Kind), u.li.Lock.Class, u.li.Lock.Address
		if len(cands[i]) == 1 && claims[cands[i][0]] == 1 {
			add(cands[i][0], u.site, u.li)
			continue
		}
		id := lockKey(kind, class, addr)
		for n := 2; a.locks[id] != nil; n++ {
			id = fmt.Sprintf("%s#%d", lockKey(kind, class, addr), n)
		}
		la := a.lock(id, kind, class)
		la.site, la.lastSeq = u.site, seq
		add(la, u.site, u.li)
	}
	a.noteJavaLocks(order, seq)
	return order
}

// noteJavaLocks remembers, for the next dump, each lock's owner, wait site
// and address (the index by address follows it), and keeps the index
// bounded.
func (a *Aggregator) noteJavaLocks(order []*javaObs, seq int) {
	ix := &a.lockIdx
	for _, o := range order {
		la := o.la
		la.lastSeq = seq
		la.lastOwner = ""
		best := bestInfo(o.infos)
		if best.Owner != nil {
			la.lastOwner = best.Owner.Name
		}
		if la.site == "" {
			la.site = o.site
		}
		if addr := best.Lock.Address; addr != "" {
			if old := la.lastAddr; old != "" && old != addr && ix.byAddr[addrKey(la.kind, old)] == la.id {
				delete(ix.byAddr, addrKey(la.kind, old))
			}
			la.lastAddr = addr
			ix.byAddr[addrKey(la.kind, addr)] = la.id
		}
	}
	// Forget addresses of evicted locks so the index stays bounded.
	if len(ix.byAddr) > 4*a.opts.MaxLocks {
		for k, id := range ix.byAddr {
			if a.locks[id] == nil {
				delete(ix.byAddr, k)
			}
		}
	}
}

// bestInfo is the info with the most waiters: it speaks for the lock in
// this dump.
func bestInfo(infos []*threaddump.LockInfo) *threaddump.LockInfo {
	best := infos[0]
	for _, li := range infos[1:] {
		if len(li.Waiters) > len(best.Waiters) {
			best = li
		}
	}
	return best
}

func by2ids[T any](xs []T, f func(T) (string, int)) map[string]int {
	m := make(map[string]int, len(xs))
	for _, x := range xs {
		k, v := f(x)
		m[k] = v
	}
	return m
}

// noteLockSeries adds a point to every lock's waiter series: the current
// count for locks seen now, zero for the others.
func (a *Aggregator) noteLockSeries(t time.Time, now map[string]int) {
	if t.IsZero() {
		return
	}
	for id, la := range a.locks {
		if la.kind == "futex" {
			continue
		}
		la.waiters.add(t, float64(now[id]))
	}
}

// dominantWaitFrame is the most common waiting frame of a lock's waiters
// (ties broken by name, so it is stable).
func dominantWaitFrame(ws []threaddump.Waiter) string {
	if len(ws) == 1 {
		return waitFrame(ws[0])
	}
	counts := map[string]int{}
	for _, w := range ws {
		counts[waitFrame(w)]++
	}
	best, n := "", 0
	for k, v := range counts {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best
}

// lockSummaries reports every lock, most contended first.
func (a *Aggregator) lockSummaries() []LockSummary {
	out := []LockSummary{}
	for _, la := range a.locks {
		denom := a.dumps
		if la.kind == "futex" {
			denom = a.os.samples
		}
		ls := LockSummary{
			ID: la.id, Kind: la.principalKind(), Resource: la.kind, WaitKinds: map[string]int{},
			Class: la.class, Address: la.address,
			Owner: la.owner, OwnerFrame: la.ownerFrame, OwnerLockFrame: la.ownerLockFrame,
			Releaser: la.releaser, ReleaserFrame: la.releaserFrame,
			Waiters:              la.peak,
			CurrentWaiters:       la.current,
			WaiterThreads:        append([]string{}, la.waiterNames...),
			BlockedThreadSeconds: round3(la.blockedSeconds),
			WaitFrames:           la.waitFrames.top(5),
			OwnerFrames:          la.ownerFrames.top(5),
			Symbol:               la.symbol,
			Module:               la.module,
			FutexKind:            la.futexKind,
			Holder:               futexHolderSummary(la),
			Exact:                a.exactSummary(la),
			FastReads:            fastSummary(la),
		}
		for k, n := range la.kinds {
			ls.WaitKinds[k] = n
		}
		ls.DumpsSeen = la.samples
		if la.kind != "futex" {
			ls.Site = siteID(la.kind, la.class, la.site)
		} else {
			ls.Site = la.nativeSite
		}
		if len(la.addresses) > 1 {
			ls.Addresses = append([]string{}, la.addresses...)
		}
		if denom > 0 {
			ls.AvgWaiters = round3(float64(la.waiterSum) / float64(denom))
			ls.BlockedShare = round3(float64(la.samples) / float64(denom))
		}
		if len(ls.WaitFrames) == 0 && ls.Exact != nil && len(ls.Exact.Sites) > 0 {
			// Waits too short for the samples: the kernel's stacks say where.
			ls.WaitFrames = ls.Exact.Sites
		}
		if len(ls.WaitFrames) > 0 {
			ls.WaitFrame = strPtr(ls.WaitFrames[0].Frame)
		}
		out = append(out, ls)
	}
	out = a.withJFR(out)
	sortLocks(out)
	return out
}

// sortLocks orders locks by peak waiters, then average, class and ID.
func sortLocks(out []LockSummary) {
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Waiters != y.Waiters {
			return x.Waiters > y.Waiters
		}
		if x.AvgWaiters != y.AvgWaiters {
			return x.AvgWaiters > y.AvgWaiters
		}
		if xj, yj := x.JFR.waitSeconds(), y.JFR.waitSeconds(); xj != yj {
			return xj > yj
		}
		if x.Class != y.Class {
			return x.Class < y.Class
		}
		return x.ID < y.ID
	})
}

// contentionSites reports every contention site, most waiters first.
func (a *Aggregator) contentionSites() []ContentionSite {
	out := []ContentionSite{}
	for _, sa := range a.lockIdx.sites {
		cs := ContentionSite{
			ID: sa.id, Kind: sa.kind, Class: sa.class, WaitFrame: sa.site,
			Instances: sa.instanceCount, PeakInstances: sa.peakInstances,
			Waiters: sa.peakWaiters, MaxInstanceWaiters: sa.maxOnOne, CurrentWaiters: sa.current,
			BlockedThreadSeconds: round3(sa.blocked), DumpsSeen: sa.samples,
			// Striped: each instance queues one waiter behind an owner of
			// its own. Waiters on instances with no owner the dump names
			// (a latch per waiter, a hand-off) may all wait for the same
			// thing: the resource's count is their queue.
			Striped:       sa.peakInstances > 1 && sa.maxOnOne <= 1 && sa.unowned == 0,
			WaiterThreads: append([]string{}, sa.waiterNames...),
			Pool:          sa.pool, PoolThreads: sa.poolThreads, PoolWaiting: sa.poolWaiting,
			OthersRun: append([]FrameCount{}, sa.othersRun...), Holders: append([]FrameCount{}, sa.peakHolders...),
			Ownerless: sa.ownerless > 0,
		}
		if a.dumps > 0 {
			cs.AvgWaiters = round3(float64(sa.waiterSum) / float64(a.dumps))
			cs.BlockedShare = round3(float64(sa.samples) / float64(a.dumps))
		}
		out = append(out, cs)
	}
	out = append(out, a.nativeContentionSites()...)
	sortContentionSites(out)
	return out
}
