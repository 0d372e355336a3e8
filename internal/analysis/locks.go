package analysis

import (
	"fmt"
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// lockAgg is one lock over the run. Java locks are identified by kind,
// class and the site their waiters wait at, not by address: a GC may move
// the object between dumps, and the same monitor then shows under several
// addresses. Futexes are identified by address (native memory does not
// move).
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

	// From the latest sample with the peak number of waiters.
	owner, ownerFrame, ownerLockFrame *string
	waiterNames                       []string

	// Futex locks only.
	symbol    *string
	module    string
	futexKind string

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

// lock returns the aggregate for id, creating it and evicting the least
// contended lock when the table is full.
func (a *Aggregator) lock(id, kind, class string) *lockAgg {
	la := a.locks[id]
	if la != nil {
		return la
	}
	if len(a.locks) >= a.opts.MaxLocks {
		var victim string
		least := int(^uint(0) >> 1)
		for k, x := range a.locks {
			if x.waiterSum < least || x.waiterSum == least && k > victim {
				victim, least = k, x.waiterSum
			}
		}
		delete(a.locks, victim)
	}
	la = &lockAgg{id: id, kind: kind, class: class, waiters: newDownsampled(a.opts.MaxPoints)}
	a.locks[id] = la
	return la
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

// addJavaLocks folds one dump's lock table in: locks of the same kind,
// class and waiting site are one lock, however many addresses they have.
func (a *Aggregator) addJavaLocks(locks []*threaddump.LockInfo, dt time.Duration, tick *dumpTick) {
	type obs struct {
		la      *lockAgg
		waiters []threaddump.Waiter
		infos   []*threaddump.LockInfo
	}
	var order []*obs
	by := map[string]*obs{}
	for _, li := range locks {
		if len(li.Waiters) == 0 {
			continue
		}
		site := dominantWaitFrame(li.Waiters)
		id := lockKey(string(li.Kind), li.Lock.Class, site)
		o := by[id]
		if o == nil {
			o = &obs{la: a.lock(id, string(li.Kind), li.Lock.Class)}
			by[id] = o
			order = append(order, o)
		}
		o.waiters = append(o.waiters, li.Waiters...)
		o.infos = append(o.infos, li)
	}
	for _, o := range order {
		la := o.la
		n := len(o.waiters)
		la.samples++
		la.waiterSum += n
		la.blockedSeconds += float64(n) * dt.Seconds()
		for _, w := range o.waiters {
			la.waitFrames.inc(waitFrame(w), 1)
			tick.waitsOn[w.Thread] = la.id
			tick.lockWaiters[la.id] = append(tick.lockWaiters[la.id], w.Thread)
		}
		// The info with the most waiters speaks for the sample.
		best := o.infos[0]
		for _, li := range o.infos[1:] {
			if len(li.Waiters) > len(best.Waiters) {
				best = li
			}
		}
		for _, li := range o.infos {
			if li.Owner != nil {
				la.ownerFrames.inc(appFrameFrom(li.Owner.Frames, 0), 1)
			}
		}
		if n >= la.peak {
			la.peak = n
			la.noteAddress(best.Lock.Address)
			la.owner, la.ownerFrame, la.ownerLockFrame = nil, nil, nil
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
	now := by2ids(order, func(o *obs) (string, int) { return o.la.id, len(o.waiters) })
	for _, la := range a.locks {
		if la.kind != "futex" {
			la.current = now[la.id]
		}
	}
	a.noteLockSeries(tick.dump.Time, now)
}

// noteAddressSeen records an address without moving the peak's.
func (la *lockAgg) noteAddressSeen(addr string) {
	peak := la.address
	la.noteAddress(addr)
	la.address = peak
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

// addFutexLocks folds one live sample's futex waits in: locks (and waits
// the kernel cannot classify) into the lock table, condition waits apart.
func (a *Aggregator) addFutexLocks(s *sample.Snapshot, dt time.Duration, names func(tid int) string) map[string][]int {
	waiters := map[string][]int{}
	now := map[string]int{}
	for _, fw := range s.Futexes {
		if fw.Kind == sample.FutexCondition {
			a.os.addCondition(fw)
			continue
		}
		addr := fmt.Sprintf("0x%x", fw.Address)
		class := fw.Location.Symbol
		if class == "" {
			class = fw.Location.Module
		}
		la := a.lock(lockKey("futex", "", addr), "futex", class)
		if fw.Location.Module != "" {
			la.class, la.module = class, fw.Location.Module
			if fw.Location.Symbol != "" {
				la.symbol = strPtr(fw.Location.String())
			}
		}
		if la.futexKind == "" || fw.Kind != sample.FutexUnknown {
			la.futexKind = string(fw.Kind)
		}
		n := len(fw.TIDs)
		la.samples++
		la.waiterSum += n
		la.blockedSeconds += float64(n) * dt.Seconds()
		now[la.id] = n
		waiters[la.id] = fw.TIDs
		if n >= la.peak {
			la.peak = n
			la.noteAddress(addr)
			la.waiterNames = la.waiterNames[:0]
			for i, tid := range fw.TIDs {
				if i == 10 {
					break
				}
				la.waiterNames = append(la.waiterNames, fmt.Sprintf("%s (tid %d)", names(tid), tid))
			}
		}
	}
	for id, la := range a.locks {
		if la.kind == "futex" {
			la.current = now[id]
			if !s.Time.IsZero() {
				la.waiters.add(s.Time, float64(now[id]))
			}
		}
	}
	return waiters
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
			ID: la.id, Kind: la.kind, Class: la.class, Address: la.address,
			Owner: la.owner, OwnerFrame: la.ownerFrame, OwnerLockFrame: la.ownerLockFrame,
			Waiters:              la.peak,
			CurrentWaiters:       la.current,
			WaiterThreads:        append([]string{}, la.waiterNames...),
			BlockedThreadSeconds: round3(la.blockedSeconds),
			WaitFrames:           la.waitFrames.top(5),
			OwnerFrames:          la.ownerFrames.top(5),
			Symbol:               la.symbol,
			Module:               la.module,
			FutexKind:            la.futexKind,
		}
		if len(la.addresses) > 1 {
			ls.Addresses = append([]string{}, la.addresses...)
		}
		if denom > 0 {
			ls.AvgWaiters = round3(float64(la.waiterSum) / float64(denom))
			ls.BlockedShare = round3(float64(la.samples) / float64(denom))
		}
		if len(ls.WaitFrames) > 0 {
			ls.WaitFrame = strPtr(ls.WaitFrames[0].Frame)
		}
		out = append(out, ls)
	}
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
		if x.Class != y.Class {
			return x.Class < y.Class
		}
		return x.ID < y.ID
	})
}
