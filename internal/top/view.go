package top

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/ctprof/ctprof/internal/analysis"
)

// styles are the view's few attributes; all plain without colour.
type styles struct {
	title, header, selected, critical, warning, dim lipgloss.Style
}

func newStyles(p termenv.Profile) styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(p)
	plain := r.NewStyle()
	if p == termenv.Ascii {
		return styles{plain, plain, plain, plain, plain, plain}
	}
	return styles{
		title:    r.NewStyle().Bold(true),
		header:   r.NewStyle().Foreground(lipgloss.Color("6")),
		selected: r.NewStyle().Reverse(true),
		critical: r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		warning:  r.NewStyle().Foreground(lipgloss.Color("3")),
		dim:      r.NewStyle().Faint(true),
	}
}

var severityRank = map[string]int{"critical": 0, "warning": 1, "info": 2}

const keyHelp = "↑↓/jk move  Enter open  Tab pane  s sort  p pause  r report  q quit"

// View renders the screen: exactly the terminal's height in lines, none
// wider than its width.
func (m *Model) View() string {
	w, h := max(m.width, 20), max(m.height, 8)
	var out []string
	out = append(out, m.header(w)...)
	footer := m.footer(w)
	room := h - len(out) - len(footer)
	if m.open != nil {
		out = append(out, m.detailView(w, room)...)
	} else {
		out = append(out, m.body(w, room)...)
	}
	for len(out) < h-len(footer) {
		out = append(out, "")
	}
	out = append(out[:h-len(footer)], footer...)
	return strings.Join(out, "\n")
}

func (m *Model) header(w int) []string {
	if m.opts.Source != "" {
		return m.followHeader(w)
	}
	s := m.sum
	var l1 strings.Builder
	l1.WriteString("ctprof top")
	if s == nil || s.Target == nil {
		l1.WriteString("  waiting for the first sample…")
		return []string{m.st.title.Render(line(l1.String(), w)), "", ""}
	}
	t := s.Target
	fmt.Fprintf(&l1, "  pid %d %s (%s)  up %s  every %s  %d samples", t.PID, clean(t.Name), t.Kind, uptime(s.DurationSeconds), m.opts.Interval, s.Samples)
	switch {
	case s.Dumps == 1:
		l1.WriteString(", 1 dump")
	case s.Dumps > 1:
		fmt.Fprintf(&l1, ", %d dumps", s.Dumps)
	}
	first := m.withFlag(l1.String(), w)

	var l2 strings.Builder
	fmt.Fprintf(&l2, "threads %d", s.Threads)
	if c := s.Connections; c != nil {
		fmt.Fprintf(&l2, " (%d conns", c.Established)
		if tp := s.ThreadsPerConnection; tp != nil && tp.Ratio > 0 {
			fmt.Fprintf(&l2, ", %s per conn", num(tp.Ratio))
		}
		l2.WriteString(")")
	}
	if c := s.CPUUse; c != nil {
		fmt.Fprintf(&l2, "  CPU %.2f of %d CPUs (%s)", c.CoresUsed, c.CPUsAllowed, pct(c.ShareOfAllowed))
	} else if s.CPUPercent > 0 {
		fmt.Fprintf(&l2, "  CPU %.0f%%", s.CPUPercent)
	}
	fmt.Fprintf(&l2, "  run-queue wait %s", pct(s.RunQueueWaitShare))

	var l3 strings.Builder
	if cs := s.ContextSwitches; cs != nil {
		fmt.Fprintf(&l3, "switches/s vol %s invol %s host %s", num(cs.VoluntaryPerSecond), num(cs.InvoluntaryPerSecond), num(cs.HostPerSecond))
	}
	if c := s.SampleCost; c != nil && c.TargetPauseShare != nil {
		fmt.Fprintf(&l3, "  dump pause %s", pct(*c.TargetPauseShare))
		if c.TargetPauseSeconds != nil {
			fmt.Fprintf(&l3, " (%.3fs)", *c.TargetPauseSeconds)
		}
	} else if c != nil && c.Dumps > 0 {
		fmt.Fprintf(&l3, "  dumps took %.3fs", c.DumpSeconds)
	}
	return []string{m.st.title.Render(first), line(l2.String(), w), line(l3.String(), w), line(clean(waitingFor(s)), w)}
}

// waitingFor leads with what the threads wait for: the resources with the
// most waiters now (a class at the method its waiters call in from, over
// all its instances), most first.
func waitingFor(s *analysis.Summary) string {
	sites := slices.Clone(s.ContentionSites)
	slices.SortStableFunc(sites, func(x, y analysis.ContentionSite) int {
		if c := cmp.Compare(y.CurrentWaiters, x.CurrentWaiters); c != 0 {
			return c
		}
		return cmp.Compare(y.AvgWaiters, x.AvgWaiters)
	})
	var parts []string
	for _, cs := range sites {
		if len(parts) == 2 || cs.CurrentWaiters == 0 && cs.AvgWaiters == 0 {
			break
		}
		frame := cs.WaitFrame
		if i := strings.IndexByte(frame, '('); i > 0 && !cs.Native {
			frame = frame[:i]
		}
		p := ""
		if cs.Native {
			// A native resource: its site as the stacks name it (or the
			// futex word's name, without a stack) and its primitive.
			p = fmt.Sprintf("%d at %s (%s, avg %s", cs.CurrentWaiters, nativeSiteShort(frame), cs.Kind, num(cs.AvgWaiters))
		} else {
			p = fmt.Sprintf("%d at %s (%s, avg %s", cs.CurrentWaiters, lastParts(frame, 2), lastParts(cs.Class, 1), num(cs.AvgWaiters))
		}
		if cs.Instances > 1 {
			p += fmt.Sprintf(", %d instances", cs.Instances)
		}
		parts = append(parts, p+")")
	}
	if len(parts) == 0 {
		parts = futexWaitingFor(s)
	}
	if len(parts) == 0 {
		return "waiting for: no resource"
	}
	return "waiting for: " + strings.Join(parts, "  ")
}

// nativeSiteShort is a native wait site's frames without their parameters
// ("lock_wait ← row_search_mvcc" of "lock_wait(que_thr_t*) ←
// row_search_mvcc(…)"), or a futex word's name as it is.
func nativeSiteShort(site string) string {
	if strings.HasPrefix(site, "futex ") {
		return site
	}
	frames := strings.Split(site, " ← ")
	for i, f := range frames {
		if j := strings.IndexByte(f, '('); j > 0 {
			frames[i] = f[:j]
		}
	}
	return strings.Join(frames, " ← ")
}

// lastParts keeps the last n dot-separated parts of a name:
// lastParts("a.b.C.m", 2) is "C.m", lastParts("a.b.C", 1) is "C".
func lastParts(name string, n int) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			n--
			if n == 0 {
				return name[i+1:]
			}
		}
	}
	return name
}

func (m *Model) footer(w int) []string {
	status := m.status
	if m.stopped != "" {
		status = strings.TrimSpace(m.stopped + "  " + status)
	}
	return []string{line(clean(status), w), m.st.dim.Render(line(keyHelp, w))}
}

// body lays out the findings and the three panes in the rows left.
func (m *Model) body(w, room int) []string {
	var out []string
	out = append(out, m.findings(w, min(4, max(1, room-9)))...)
	room -= len(out)
	// Each pane has a title and a column header and at least one row; the
	// rows left go round the panes, the focused one first, each up to what
	// it has to show.
	data := max(3, room-2*int(paneCount))
	var rows, need [paneCount]int
	for p := range paneCount {
		rows[p], need[p] = 1, m.rowCount(p)
	}
	for left, grew := data-int(paneCount), true; left > 0 && grew; {
		grew = false
		for i := range paneCount {
			p := (m.focus + i) % paneCount
			if left > 0 && rows[p] < need[p] {
				rows[p]++
				left--
				grew = true
			}
		}
	}
	for p := range paneCount {
		out = append(out, m.pane(p, w, rows[p])...)
	}
	return out
}

func (m *Model) findings(w, n int) []string {
	if m.sum == nil || len(m.sum.Findings) == 0 {
		return []string{m.st.title.Render("Findings") + m.st.dim.Render("  none yet")}
	}
	// Worst first: by severity, in the Aggregator's order (its impact)
	// within one.
	f := slices.Clone(m.sum.Findings)
	slices.SortStableFunc(f, func(x, y analysis.Finding) int {
		return cmp.Compare(severityRank[x.Severity], severityRank[y.Severity])
	})
	out := []string{m.st.title.Render(fmt.Sprintf("Findings (%d)", len(f)))}
	for i := 0; i < len(f) && len(out) < n; i++ {
		sev := map[string]string{"critical": "CRIT", "warning": "WARN"}[f[i].Severity]
		if sev == "" {
			sev = "info"
		}
		txt := line(fmt.Sprintf(" %-4s %s", sev, clean(f[i].Summary)), w)
		switch f[i].Severity {
		case "critical":
			txt = m.st.critical.Render(txt)
		case "warning":
			txt = m.st.warning.Render(txt)
		}
		out = append(out, txt)
	}
	return out
}

var (
	lockCols = []column{
		{title: "KIND", width: 12},
		{title: "CLASS", weight: 3, min: 8},
		{title: "NOW", width: 4, right: true},
		{title: "AVG", width: 5, right: true},
		{title: "OWNER", weight: 2, min: 6},
		{title: "WAIT SITE", weight: 4, min: 8},
	}
	// lockColsJFR adds, when a Flight Recorder recording runs (--jfr), the
	// exact time threads waited on each lock and its p99 wait.
	lockColsJFR = append(slices.Clone(lockCols[:4]),
		column{title: "WAITED", width: 7, right: true},
		column{title: "P99ms", width: 6, right: true},
		lockCols[4], lockCols[5])
	poolCols = []column{
		{title: "POOL", weight: 3, min: 8},
		{title: "THR", width: 5, right: true},
		{title: "STATES", weight: 2, min: 8},
		{title: "CPU%", width: 6, right: true},
		{title: "VOL/s", width: 7, right: true},
		{title: "INVOL/s", width: 7, right: true},
	}
	threadCols = []column{
		{title: "TID", width: 7, right: true},
		{title: "THREAD", weight: 1, min: 8},
		{title: "JAVA", width: 13},
		{title: "OS", width: 8},
		{title: "CPU%", width: 6, right: true},
		{title: "VOL/s", width: 6, right: true},
		{title: "INVOL/s", width: 7, right: true},
		{title: "RQ%", width: 5, right: true},
	}
)

func (m *Model) pane(p pane, w, n int) []string {
	var cols []column
	var cells [][]string
	var title string
	switch p {
	case paneLocks:
		if m.resourcesPane() {
			cols, title, cells = resourceCols, "Resources", m.resourceRows()
			break
		}
		cols, title = lockCols, "Locks"
		jfr := m.sum != nil && m.sum.JFR != nil
		if jfr {
			cols = lockColsJFR
		}
		for _, l := range m.locks() {
			row := []string{l.Kind, lockName(l), fmt.Sprint(l.CurrentWaiters), num(l.AvgWaiters)}
			if jfr {
				waited, p99 := "", ""
				if l.JFR != nil {
					waited, p99 = num(l.JFR.WaitSeconds)+"s", num(l.JFR.P99Ms)
				}
				row = append(row, waited, p99)
			}
			cells = append(cells, append(row, deref(l.Owner, "?"), deref(l.WaitFrame, "")))
		}
	case panePools:
		cols, title = poolCols, "Pools"
		for _, pl := range m.pools() {
			cells = append(cells, []string{pl.Name, fmt.Sprint(pl.Threads), states(pl.States), num(pl.CPUPercent), num(pl.VoluntaryPerSecond), num(pl.InvoluntaryPerSecond)})
		}
	default:
		cols, title = threadCols, "Busiest threads"
		for _, t := range m.threads() {
			cells = append(cells, []string{fmt.Sprint(t.TID), t.Thread, t.JavaState, t.OSState, num(t.Percent), num(t.VoluntaryPerSecond), num(t.InvoluntaryPerSecond), pct(t.RunQueueWaitShare)})
		}
	}
	focused := p == m.focus
	mark := "  "
	if focused {
		mark = "▸ "
	}
	head := fmt.Sprintf("%s%s (%d)  sort: %s", mark, title, len(cells), sortKeys[p][m.sortBy[p]])
	widths := layout(cols, w)
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
	}
	out := []string{m.st.title.Render(line(head, w)), m.st.header.Render(row(" ", cols, widths, titles))}
	if len(cells) == 0 {
		out = append(out, m.st.dim.Render(line("  none", w)))
	}
	sel := m.sel[p]
	first := 0
	if sel >= n {
		first = sel - n + 1
	}
	for i := first; i < len(cells) && i < first+n; i++ {
		if focused && i == sel {
			out = append(out, m.st.selected.Render(row("›", cols, widths, cells[i])))
		} else {
			out = append(out, row(" ", cols, widths, cells[i]))
		}
	}
	// A pane keeps its rows when it has fewer: the panes below stay put.
	for len(out) < n+2 {
		out = append(out, "")
	}
	return out
}

// lockName is the class (for a futex, its stable name: symbol, module
// and offset, "[heap]+0x2a0"), else its symbol or address.
func lockName(l analysis.LockSummary) string {
	if l.Class != "" {
		return l.Class
	}
	if l.Symbol != nil {
		return *l.Symbol
	}
	return l.Address
}

func deref(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}

// stateAbbrev shortens Java and OS state names for the pools' column.
var stateAbbrev = map[string]string{
	"RUNNABLE": "R", "BLOCKED": "B", "WAITING": "W", "TIMED_WAITING": "T", "NEW": "N", "TERMINATED": "X", "NONE": "-",
}

// states renders a state count as "B5 R1 W2", most threads first.
func states(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		if a, ok := stateAbbrev[k]; ok {
			k = a
		} else {
			k += ":"
		}
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s%d", x.k, x.v)
	}
	return strings.Join(parts, " ")
}

// withFlag fits a header's first line into w columns with STOPPED or
// PAUSED at its right edge when the view is stopped or paused.
func (m *Model) withFlag(l1 string, w int) string {
	flag := ""
	switch {
	case m.stopped != "":
		flag = "STOPPED"
	case m.paused:
		flag = "PAUSED"
	}
	first := line(l1, w-len(flag)-1)
	if flag != "" {
		first += strings.Repeat(" ", max(1, w-lipgloss.Width(first)-len(flag))) + flag
	}
	return first
}
