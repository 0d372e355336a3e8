package top

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// A native target's lock pane lists its resources (a wait site and a kind
// of primitive over every futex word waited on), not the words: a
// condition per transaction is one row, and Enter opens the resource with
// its instances, holders and a waiter's stack.

// resourceCols are the columns of the resources pane.
var resourceCols = []column{
	{title: "KIND", width: 10},
	{title: "WAIT SITE", weight: 3, min: 16},
	{title: "NOW", width: 5, right: true},
	{title: "AVG", width: 5, right: true},
	{title: "INST", width: 5, right: true},
	{title: "HOLDERS DO", weight: 1, min: 10},
}

// resourcesPane reports whether the lock pane lists resources: a native
// target whose summary has native resources.
func (m *Model) resourcesPane() bool {
	if m.sum == nil || m.sum.Target == nil || m.sum.Target.Kind != "native" {
		return false
	}
	for _, cs := range m.sum.ContentionSites {
		if cs.Native {
			return true
		}
	}
	return false
}

// resources are the native resources in the chosen order.
func (m *Model) resources() []analysis.ContentionSite {
	var out []analysis.ContentionSite
	for _, cs := range m.sum.ContentionSites {
		if cs.Native {
			out = append(out, cs)
		}
	}
	key := sortKeys[paneLocks][m.sortBy[paneLocks]]
	slices.SortStableFunc(out, func(x, y analysis.ContentionSite) int {
		switch key {
		case "avg":
			return cmp.Compare(y.AvgWaiters, x.AvgWaiters)
		case "peak":
			return cmp.Compare(y.Waiters, x.Waiters)
		case "blocked":
			return cmp.Compare(y.BlockedThreadSeconds, x.BlockedThreadSeconds)
		case "waited": // the kernel's count, with exact waits
			return cmp.Compare(exactWaited(y), exactWaited(x))
		}
		return cmp.Compare(y.CurrentWaiters, x.CurrentWaiters)
	})
	return out
}

func exactWaited(cs analysis.ContentionSite) float64 {
	if cs.Exact == nil {
		return -1
	}
	return cs.Exact.WaitSeconds
}

// resourceRows are the pane's cells.
func (m *Model) resourceRows() [][]string {
	var cells [][]string
	for _, cs := range m.resources() {
		holders := ""
		if len(cs.Holders) > 0 {
			holders = cs.Holders[0].Frame
		}
		cells = append(cells, []string{cs.Kind, cs.WaitFrame, fmt.Sprint(cs.CurrentWaiters), num(cs.AvgWaiters), fmt.Sprint(cs.Instances), holders})
	}
	return cells
}

// resourceDetail is the opened resource: its numbers, instances, holders,
// waiters and a waiter's stack.
func (m *Model) resourceDetail() (string, []string) {
	var cs *analysis.ContentionSite
	if m.sum != nil {
		for i := range m.sum.ContentionSites {
			if m.sum.ContentionSites[i].ID == m.open.resourceID {
				cs = &m.sum.ContentionSites[i]
				break
			}
		}
	}
	if cs == nil {
		return "Resource", []string{"  the resource is no longer in the summary"}
	}
	title := fmt.Sprintf("Resource  %s at %s", clean(cs.Kind), clean(cs.WaitFrame))
	b := []string{
		fmt.Sprintf("  waiters now %d, peak %d, average %s; waited at in %s of samples; %s thread-seconds waiting",
			cs.CurrentWaiters, cs.Waiters, num(cs.AvgWaiters), pct(cs.BlockedShare), num(cs.BlockedThreadSeconds)),
		fmt.Sprintf("  module %s; %d futex words over the run, up to %d at once, at most %d waiters on one", clean(cs.Class), cs.Instances, cs.PeakInstances, cs.MaxInstanceWaiters),
	}
	if x := cs.Exact; x != nil {
		b = append(b, fmt.Sprintf("  the kernel counted %d waits (%s a second), %s s of waiting", x.Waits, num(x.PerSecond), num(x.WaitSeconds)))
	}
	if cs.Ownerless {
		b = append(b, "  each waiter waits for a signal from another thread (a condition, semaphore or futex of its own)")
	}
	b = append(b, "")
	var inst []string
	for _, l := range m.sum.Locks {
		if l.Site != cs.ID {
			continue
		}
		row := fmt.Sprintf("  %-36s now %d, peak %d, avg %s", clean(lockName(l)), l.CurrentWaiters, l.Waiters, num(l.AvgWaiters))
		if h := l.Holder; h != nil && h.TID != 0 {
			row += fmt.Sprintf("; held by %s (tid %d), %s", clean(h.Thread), h.TID, clean(h.Runs))
		}
		inst = append(inst, row)
	}
	if len(inst) > 0 {
		b = append(b, "Instances in the lock table:")
		b = append(b, inst...)
	}
	if len(cs.Holders) > 0 {
		b = append(b, "What the holders did (samples):")
		b = append(b, frameCounts(cs.Holders)...)
	}
	if len(cs.WaiterThreads) > 0 {
		names := make([]string, len(cs.WaiterThreads))
		for i, n := range cs.WaiterThreads {
			names[i] = clean(n)
		}
		b = append(b, "Waiting threads: "+strings.Join(names, ", "))
	}
	if len(cs.WaiterStack) > 0 {
		b = append(b, "A waiter's stack at the sample with the most waiters:")
		b = append(b, stackLines(cs.WaiterStack)...)
	}
	return title, b
}
