package record

import "github.com/ctprof/ctprof/internal/procfs"

// encodeHostCPU writes what format version 4 adds to the host context:
// the host's busy and steal ticks, the biggest CPU consumers of the
// window before the tick, and the target's cgroup quotas, so that a replay
// names the neighbours and the quota as the run did. It follows the rest
// of the snapshot (older readers stop before it).
func encodeHostCPU(e *encoder, h *procfs.Host) {
	e.uvarint(h.BusyTicks)
	e.uvarint(h.StealTicks)
	e.duration(h.ConsumersWindow)
	e.bool(h.Consumers != nil)
	e.uvarint(uint64(len(h.Consumers)))
	for _, c := range h.Consumers {
		e.int(c.PID)
		e.str(c.Name)
		e.uvarint(c.Start)
		e.duration(c.CPU)
	}
	e.bool(h.Quotas != nil)
	e.uvarint(uint64(len(h.Quotas)))
	for _, q := range h.Quotas {
		e.str(q.Cgroup)
		e.int(q.Version)
		e.duration(q.Quota)
		e.duration(q.Period)
		e.uvarint(q.Periods)
		e.uvarint(q.Throttled)
		e.duration(q.ThrottledTime)
	}
}

// decodeHostCPU reads what encodeHostCPU wrote into h.
func decodeHostCPU(d *decoder, h *procfs.Host) {
	h.BusyTicks = d.uvarint()
	h.StealTicks = d.uvarint()
	h.ConsumersWindow = d.duration()
	hasConsumers := d.bool()
	n := d.count(4)
	if hasConsumers {
		h.Consumers = make([]procfs.ProcCPU, 0, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		var c procfs.ProcCPU
		c.PID = d.int()
		c.Name = d.str()
		c.Start = d.uvarint()
		c.CPU = d.duration()
		h.Consumers = append(h.Consumers, c)
	}
	hasQuotas := d.bool()
	n = d.count(7)
	if hasQuotas {
		h.Quotas = make([]procfs.CPUQuota, 0, n)
	}
	for i := 0; i < n && d.err == nil; i++ {
		var q procfs.CPUQuota
		q.Cgroup = d.str()
		q.Version = d.int()
		q.Quota = d.duration()
		q.Period = d.duration()
		q.Periods = d.uvarint()
		q.Throttled = d.uvarint()
		q.ThrottledTime = d.duration()
		h.Quotas = append(h.Quotas, q)
	}
}
