package top

import (
	"fmt"
	"strings"
)

// followHeader heads the view of a followed log (Options.Source): there is
// no process to describe, only the log, its latest dump and what threads
// wait for in it.
func (m *Model) followHeader(w int) []string {
	s := m.sum
	var l1 strings.Builder
	fmt.Fprintf(&l1, "ctprof top  following %s", clean(m.opts.Source))
	if s == nil || s.Dumps == 0 {
		l1.WriteString("  waiting for the first complete dump…")
		return []string{m.st.title.Render(line(l1.String(), w)), "", ""}
	}
	if s.Dumps == 1 {
		l1.WriteString("  1 dump")
	} else {
		fmt.Fprintf(&l1, "  %d dumps", s.Dumps)
	}
	if s.LastDump != nil {
		fmt.Fprintf(&l1, ", the last at %s", s.LastDump.Format("2006-01-02 15:04:05"))
	}
	first := m.withFlag(l1.String(), w)
	var l2 strings.Builder
	fmt.Fprintf(&l2, "threads %d", s.Threads)
	for _, st := range []string{"BLOCKED", "RUNNABLE", "WAITING", "TIMED_WAITING"} {
		if n := s.States[st]; n > 0 {
			fmt.Fprintf(&l2, "  %s %d", st, n)
		}
	}
	return []string{m.st.title.Render(first), line(l2.String(), w), line(clean(s.VM), w), line(clean(waitingFor(s)), w)}
}
