package top

import (
	"fmt"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
)

// detailView renders the opened lock or thread in n rows, scrolled.
func (m *Model) detailView(w, n int) []string {
	var title string
	var body []string
	switch {
	case m.open.resourceID != "":
		title, body = m.resourceDetail()
	case m.open.lockID != "":
		title, body = m.lockDetail()
	default:
		title, body = m.threadDetail()
	}
	out := []string{m.st.title.Render(line(title, w-len("  Esc back")) + "  Esc back")}
	n--
	if n <= 0 {
		return out
	}
	maxScroll := max(0, len(body)-n)
	if m.open.scroll > maxScroll {
		m.open.scroll = maxScroll
	}
	for i := m.open.scroll; i < len(body) && i < m.open.scroll+n; i++ {
		out = append(out, line(body[i], w))
	}
	return out
}

func (m *Model) lockDetail() (string, []string) {
	var l *analysis.LockSummary
	if m.sum != nil {
		for i := range m.sum.Locks {
			if m.sum.Locks[i].ID == m.open.lockID {
				l = &m.sum.Locks[i]
				break
			}
		}
	}
	if l == nil {
		return "Lock", []string{"  the lock is no longer in the summary"}
	}
	title := fmt.Sprintf("Lock  %s %s", clean(l.Kind), clean(lockName(*l)))
	if l.Address != "" && l.Class != "" {
		title += " <" + clean(l.Address) + ">"
	}
	b := []string{
		fmt.Sprintf("  waiters now %d, peak %d, average %s; waited for in %s of samples; %s thread-seconds blocked",
			l.CurrentWaiters, l.Waiters, num(l.AvgWaiters), pct(l.BlockedShare), num(l.BlockedThreadSeconds)),
	}
	if l.Module != "" {
		b = append(b, "  module "+clean(l.Module))
	}
	if len(l.Addresses) > 1 {
		b = append(b, fmt.Sprintf("  %d addresses over the run (moved by the GC)", len(l.Addresses)))
	}
	b = append(b, "")
	// The owner (or releaser) is the one of the dump with the most
	// waiters, which in a long run need not be the latest dump.
	switch {
	case l.Holder != nil && l.Holder.TID != 0:
		h := l.Holder
		b = append(b, fmt.Sprintf("Holder: %s (tid %d, %s)  (in the sample with the most waiters; named in %d of %d)",
			clean(h.Thread), h.TID, clean(h.Lock), h.Samples, l.DumpsSeen))
		b = append(b, "  runs      "+clean(h.Runs))
		for i, f := range h.Stack {
			label := "            "
			if i == 0 {
				label = "  stack     "
			}
			b = append(b, label+clean(f))
		}
	case l.Holder != nil:
		b = append(b, fmt.Sprintf("Holder: no writer (%s)%s", clean(l.Holder.Lock), analysis.HolderReaders(l.Holder)))
	case l.Owner != nil:
		b = append(b, "Owner: "+clean(*l.Owner)+"  (in the dump with the most waiters)")
		if l.OwnerFrame != nil {
			b = append(b, "  runs      "+clean(*l.OwnerFrame))
		}
		if l.OwnerLockFrame != nil {
			b = append(b, "  locked in "+clean(*l.OwnerLockFrame))
		}
	case l.Releaser != nil:
		b = append(b, "Nobody holds it; "+clean(*l.Releaser)+" runs the same code without waiting")
		if l.ReleaserFrame != nil {
			b = append(b, "  runs      "+clean(*l.ReleaserFrame))
		}
	case l.Resource == "synchronizer":
		b = append(b, "Owner: unknown (for j.u.c. locks run with --locks)")
	default:
		b = append(b, "Owner: none the dump names")
	}
	if len(l.OwnerFrames) > 0 && l.Holder != nil {
		b = append(b, "What the holder did while holding it (samples):")
		b = append(b, frameCounts(l.OwnerFrames)...)
	} else if len(l.OwnerFrames) > 0 {
		b = append(b, "Owner's frames while holding it (samples):")
		b = append(b, frameCounts(l.OwnerFrames)...)
	}
	if l.Owner != nil {
		if frames, ok := m.stacks.thread(0, *l.Owner); ok {
			b = append(b, clean(*l.Owner)+"'s stack in the latest dump:")
			b = append(b, stackLines(frames)...)
		}
	}
	b = append(b, "")
	if len(l.WaitFrames) > 0 {
		b = append(b, "Waiters wait at (samples):")
		b = append(b, frameCounts(l.WaitFrames)...)
	}
	if len(l.WaiterThreads) > 0 {
		names := make([]string, len(l.WaiterThreads))
		for i, n := range l.WaiterThreads {
			names[i] = clean(n)
		}
		b = append(b, "Waiting threads: "+strings.Join(names, ", "))
	}
	return title, b
}

func (m *Model) threadDetail() (string, []string) {
	var t *analysis.ThreadCPU
	if m.sum != nil {
		for i := range m.sum.ThreadCPU {
			r := &m.sum.ThreadCPU[i]
			if r.TID == m.open.tid && r.Thread == m.open.thread {
				t = r
				break
			}
		}
	}
	title := "Thread  " + clean(m.open.thread)
	if m.open.tid != 0 {
		title += fmt.Sprintf("  tid %d", m.open.tid)
	}
	if t == nil {
		return title, []string{"  the thread is no longer among the busiest"}
	}
	state := t.OSState
	if t.JavaState != "" {
		state = t.JavaState + " / " + t.OSState
	}
	b := []string{
		fmt.Sprintf("  state %s  CPU %s%% (%.3f s)  last CPU %d  CPUs allowed %s", clean(state), num(t.Percent), t.CPUSeconds, t.LastCPU, clean(t.CPUsAllowed)),
		fmt.Sprintf("  switches/s vol %s invol %s  run-queue wait %s", num(t.VoluntaryPerSecond), num(t.InvoluntaryPerSecond), pct(t.RunQueueWaitShare)),
	}
	if t.Policy != "" {
		sched := fmt.Sprintf("  policy %s nice %d", clean(t.Policy), t.Nice)
		if t.RTPriority != 0 {
			sched += fmt.Sprintf(" rt priority %d", t.RTPriority)
		}
		b = append(b, sched)
	}
	b = append(b, "")
	if frames, ok := m.stacks.thread(t.TID, t.Thread); ok {
		b = append(b, "Stack in the latest dump:")
		b = append(b, stackLines(frames)...)
	} else {
		b = append(b, "No stack: no thread dump names this thread (native thread, or --no-dumps)")
	}
	return title, b
}

func frameCounts(f []analysis.FrameCount) []string {
	out := make([]string, len(f))
	for i, x := range f {
		out[i] = fmt.Sprintf("  %6d  %s", x.Samples, clean(x.Frame))
	}
	return out
}

func stackLines(frames []string) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = "    at " + clean(f)
	}
	return out
}
