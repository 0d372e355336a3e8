package analysis

import (
	"math"
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// hostCPU follows what the rest of the host took over the run: the
// biggest CPU consumers the sampler named in each of its windows, and the
// throttling counters of the quotas of the target's cgroups. A recording
// carries neither: a replay then has only the process's own figures.
type hostCPU struct {
	consumers map[consumerKey]*consumerAcc
	// covered is the time the consumers' windows add up to.
	covered time.Duration
	// quotaFirst and quotaLast are each quota's counters when first and
	// last seen, by cgroup.
	quotaFirst, quotaLast map[quotaKey]procfs.CPUQuota
}

type consumerKey struct {
	pid   int
	start uint64
}

type consumerAcc struct {
	name string
	cpu  time.Duration
}

type quotaKey struct {
	cgroup  string
	version int
}

// maxConsumersTracked bounds the consumers followed over a run (each
// window names at most procfs.MaxConsumers); past it the smallest gives
// way, so memory stays flat over days.
const maxConsumersTracked = 64

// maxQuotasTracked bounds the cgroups followed (a process that moves
// between cgroups brings new ones).
const maxQuotasTracked = 32

// add takes one snapshot's host context.
func (h *hostCPU) add(host *snapshot.Host) {
	if host.ConsumersWindow > 0 {
		if h.consumers == nil {
			h.consumers = map[consumerKey]*consumerAcc{}
		}
		h.covered += host.ConsumersWindow
		for _, c := range host.Consumers {
			k := consumerKey{c.PID, c.Start}
			acc := h.consumers[k]
			if acc == nil {
				if len(h.consumers) >= maxConsumersTracked && !h.evictBelow(c.CPU) {
					continue
				}
				acc = &consumerAcc{}
				h.consumers[k] = acc
			}
			acc.name = c.Name
			acc.cpu += c.CPU
		}
	}
	for _, q := range host.Quotas {
		k := quotaKey{q.Cgroup, q.Version}
		if _, ok := h.quotaFirst[k]; !ok {
			if len(h.quotaFirst) >= maxQuotasTracked {
				continue
			}
			if h.quotaFirst == nil {
				h.quotaFirst, h.quotaLast = map[quotaKey]procfs.CPUQuota{}, map[quotaKey]procfs.CPUQuota{}
			}
			h.quotaFirst[k] = q
		}
		h.quotaLast[k] = q
	}
}

// evictBelow drops the consumer with the least CPU time if it has less
// than cpu, making room; false when every one has more.
func (h *hostCPU) evictBelow(cpu time.Duration) bool {
	var least consumerKey
	found := false
	for k, acc := range h.consumers {
		if acc.cpu < cpu && (!found || acc.cpu < h.consumers[least].cpu) {
			least, found = k, true
		}
	}
	if found {
		delete(h.consumers, least)
	}
	return found
}

// top returns the n biggest consumers over the run, in CPUs of the time
// their windows covered.
func (h *hostCPU) top(n int) []ProcessCPU {
	out := []ProcessCPU{}
	if h.covered <= 0 {
		return out
	}
	type row struct {
		k   consumerKey
		acc *consumerAcc
	}
	var rows []row
	for k, acc := range h.consumers {
		rows = append(rows, row{k, acc})
	}
	for _, r := range topN(rows, n, func(x, y row) bool {
		if x.acc.cpu != y.acc.cpu {
			return x.acc.cpu > y.acc.cpu
		}
		return x.k.pid < y.k.pid
	}) {
		out = append(out, ProcessCPU{PID: r.k.pid, Name: r.acc.name,
			CPUs: round3(r.acc.cpu.Seconds() / h.covered.Seconds()), CPUSeconds: round3(r.acc.cpu.Seconds())})
	}
	return out
}

// quota returns the quota that held the process back longest over the
// run (the innermost on a tie), or, when none did, the tightest.
func (h *hostCPU) quota() *CPUQuota {
	var best *CPUQuota
	keys := make([]quotaKey, 0, len(h.quotaLast))
	for k := range h.quotaLast {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i].cgroup) != len(keys[j].cgroup) {
			return len(keys[i].cgroup) > len(keys[j].cgroup) // innermost first
		}
		return keys[i].cgroup < keys[j].cgroup
	})
	for _, k := range keys {
		first, last := h.quotaFirst[k], h.quotaLast[k]
		q := &CPUQuota{Cgroup: k.cgroup, Version: k.version,
			QuotaMicros: last.Quota.Microseconds(), PeriodMicros: last.Period.Microseconds()}
		if last.Period > 0 {
			q.CPUs = round3(last.Quota.Seconds() / last.Period.Seconds())
		}
		if last.Periods >= first.Periods && last.Throttled >= first.Throttled && last.ThrottledTime >= first.ThrottledTime {
			q.Periods = last.Periods - first.Periods
			q.ThrottledPeriods = last.Throttled - first.Throttled
			q.ThrottledSeconds = round3((last.ThrottledTime - first.ThrottledTime).Seconds())
		}
		if q.Periods > 0 {
			q.ThrottledShare = round3(float64(q.ThrottledPeriods) / float64(q.Periods))
		}
		switch {
		case best == nil,
			q.ThrottledSeconds > best.ThrottledSeconds,
			q.ThrottledSeconds == best.ThrottledSeconds && q.ThrottledSeconds == 0 && q.CPUs < best.CPUs:
			best = q
		}
	}
	return best
}

// hostScheduling fills what Scheduling says of the rest of the host: the
// CPU time the others used (from /proc/stat, less the process's own), the
// biggest consumers, the quota, and from them all the cause.
func (a *Aggregator) hostScheduling(sc *Scheduling, total counters) {
	o := a.os
	sc.Consumers = []ProcessCPU{}
	if o.samples > 0 {
		sc.RunnableSampledAvg = round3(float64(o.runnableSum) / float64(o.samples))
	}
	if f, l := o.hostFirst, o.hostLast; f != nil && f.BusyTicks > 0 && l.BusyTicks >= f.BusyTicks && l.StealTicks >= f.StealTicks {
		if w := o.hostLastT.Sub(o.hostFirstT).Seconds(); w > 0 {
			// The process's CPU time covers the same ticks; the kernel's
			// two clocks round differently, so a host with nothing else
			// to do can come out a hair below zero.
			others := round3(math.Max(0, (procfs.Ticks(l.BusyTicks-f.BusyTicks)-total.cpu).Seconds()/w))
			steal := round3(procfs.Ticks(l.StealTicks-f.StealTicks).Seconds() / w)
			sc.OtherCPUsAvg, sc.StealCPUsAvg = &others, &steal
		}
	}
	sc.Consumers = o.hostCPU.top(procfs.MaxConsumers)
	sc.ConsumersSeconds = round3(o.hostCPU.covered.Seconds())
	sc.Quota = o.hostCPU.quota()
	sc.Cause = saturationCause(sc)
}

// Cause thresholds: a quota is the cause when it held the process back in
// at least quotaMinThrottled of the periods it had work in; the rest of
// the host is not, whatever the process's figures, when it used less than
// othersMinCPUs (the waiting threads must then be bound to fewer CPUs than
// the process, or held back by something ctprof does not see).
const (
	quotaMinThrottled = 0.1
	othersMinCPUs     = 0.1
)

// saturationCause tells who the waiting is owed to, from Scheduling's own
// fields, so the JSON's cause and the finding agree.
//
// The threads that wait split in two: those beyond the CPUs the process
// may use queue behind its own threads, whoever else runs; those within
// them wait for CPUs something else holds. (Waiting = runnable − running
// = (runnable − CPUs) + (CPUs − running).) The larger part names the
// cause, unless a quota throttled the process, which caps it below its
// CPUs whatever else runs.
func saturationCause(sc *Scheduling) string {
	over := sc.CPUs > 0 && runnable(sc) > float64(sc.CPUs)
	if sc.WaitingForCPUAvg < saturationMinWaiting || sc.RunQueueWaitShare < saturationMinShare && !over {
		return CauseNone
	}
	if q := sc.Quota; q != nil && q.ThrottledShare >= quotaMinThrottled && q.ThrottledSeconds > 0 {
		return CauseCgroupQuota
	}
	if sc.CPUs <= 0 {
		return CauseUnknown
	}
	own, others := waitSplit(sc)
	if own >= others {
		return CauseOwnThreads
	}
	if sc.OtherCPUsAvg != nil && *sc.OtherCPUsAvg+*sc.StealCPUsAvg < othersMinCPUs {
		return CauseUnknown
	}
	return CauseOtherProcesses
}

// waitSplit returns the threads waiting on average behind the process's
// own runnable threads (beyond its CPUs) and those waiting for CPUs it may
// use that other work held.
func waitSplit(sc *Scheduling) (own, others float64) {
	own = math.Max(0, math.Min(sc.WaitingForCPUAvg, runnable(sc)-float64(sc.CPUs)))
	return own, sc.WaitingForCPUAvg - own
}

// runnable is the larger estimate of the threads runnable on average:
// schedstat's, or the threads in state R at the samples (see
// Scheduling.RunnableSampledAvg).
func runnable(sc *Scheduling) float64 {
	return math.Max(sc.RunnableAvg, sc.RunnableSampledAvg)
}
