// Package top is ctprof's live terminal view: a bubbletea model that shows
// the Aggregator's Summary of a running process (header, findings, locks,
// pools, busiest threads) and lets the user move, open, sort, pause and
// write the HTML report. It reads only what the Aggregator computed and
// the latest dump's stacks; it keeps no statistics of its own.
package top

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/ctprof/ctprof/internal/analysis"
)

// Options configure the view.
type Options struct {
	// Interval is the sampling interval, shown in the header.
	Interval time.Duration
	// Profile is the terminal's colour profile; termenv.Ascii (NO_COLOR, a
	// terminal without colours) renders plain text.
	Profile termenv.Profile
	// WriteReport writes the HTML report of the run so far and returns
	// where; nil disables the r key.
	WriteReport func() (string, error)
	// Source names a followed log (top --follow); the header then shows
	// its dumps instead of a process.
	Source string
}

// Refresh is one sample's worth of view: the Aggregator's Summary after
// the sample, and the stacks of the sample's dump (nil: no dump this tick,
// keep the previous stacks).
type Refresh struct {
	Summary *analysis.Summary
	Stacks  *Stacks
}

// Stopped says sampling ended (the target exited, or an error); the view
// stays on its last screen until q.
type Stopped struct{ Reason string }

// reportWritten is the outcome of the r key.
type reportWritten struct {
	path string
	err  error
}

type pane int

const (
	paneLocks pane = iota
	panePools
	paneThreads
	paneCount
)

func (p pane) String() string { return [...]string{"locks", "pools", "threads"}[p] }

// Sort keys per pane, cycled by s.
var sortKeys = [paneCount][]string{
	paneLocks:   {"now", "avg", "peak", "blocked", "waited"},
	panePools:   {"cpu", "threads", "vol/s", "invol/s", "name"},
	paneThreads: {"cpu", "vol/s", "invol/s", "rq-wait"},
}

// detail is an opened lock (by ID) or thread (by tid and name).
type detail struct {
	lockID     string
	resourceID string
	tid        int
	thread     string
	scroll     int
}

// Model is the bubbletea model of ctprof top.
type Model struct {
	opts   Options
	st     styles
	width  int
	height int

	sum     *analysis.Summary
	stacks  *Stacks
	pending *Refresh // what arrived while paused
	paused  bool
	stopped string
	status  string

	focus  pane
	sel    [paneCount]int
	sortBy [paneCount]int
	open   *detail
}

// New returns the model before the first sample, sized 80x24 until the
// terminal says otherwise.
func New(o Options) *Model {
	return &Model{opts: o, st: newStyles(o.Profile), width: 80, height: 24}
}

// Init starts nothing: samples arrive as Refresh messages.
func (m *Model) Init() tea.Cmd { return nil }

// Update handles keys, window sizes, refreshes and the report's outcome.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case Refresh:
		if m.paused {
			r := msg
			if r.Stacks == nil && m.pending != nil {
				r.Stacks = m.pending.Stacks
			}
			m.pending = &r
			return m, nil
		}
		m.apply(msg)
	case Stopped:
		m.stopped = msg.Reason
	case reportWritten:
		if msg.err != nil {
			m.status = "report not written: " + msg.err.Error()
		} else {
			m.status = "wrote the HTML report to " + msg.path
		}
	case tea.KeyMsg:
		return m, m.key(msg.String())
	}
	return m, nil
}

func (m *Model) apply(r Refresh) {
	m.sum = r.Summary
	if r.Stacks != nil {
		m.stacks = r.Stacks
	}
	for p := range paneCount {
		m.sel[p] = clampSel(m.sel[p], m.rowCount(p))
	}
}

func clampSel(i, n int) int { return max(0, min(i, n-1)) }

func (m *Model) key(k string) tea.Cmd {
	switch k {
	case "q", "ctrl+c":
		return tea.Quit
	case "p":
		m.paused = !m.paused
		if !m.paused && m.pending != nil {
			m.apply(*m.pending)
			m.pending = nil
		}
		return nil
	case "r":
		if m.opts.WriteReport == nil {
			m.status = "no report writer"
			return nil
		}
		m.status = "writing the HTML report…"
		write := m.opts.WriteReport
		return func() tea.Msg {
			path, err := write()
			return reportWritten{path, err}
		}
	}
	if m.open != nil {
		switch k {
		case "esc", "backspace", "enter", "left", "h":
			m.open = nil
		case "up", "k":
			m.open.scroll = max(0, m.open.scroll-1)
		case "down", "j":
			m.open.scroll++
		case "pgup":
			m.open.scroll = max(0, m.open.scroll-m.height/2)
		case "pgdown", " ":
			m.open.scroll += m.height / 2
		case "home", "g":
			m.open.scroll = 0
		}
		return nil
	}
	n := m.rowCount(m.focus)
	switch k {
	case "up", "k":
		m.sel[m.focus] = clampSel(m.sel[m.focus]-1, n)
	case "down", "j":
		m.sel[m.focus] = clampSel(m.sel[m.focus]+1, n)
	case "pgup":
		m.sel[m.focus] = clampSel(m.sel[m.focus]-10, n)
	case "pgdown":
		m.sel[m.focus] = clampSel(m.sel[m.focus]+10, n)
	case "home", "g":
		m.sel[m.focus] = 0
	case "end", "G":
		m.sel[m.focus] = clampSel(n-1, n)
	case "tab":
		m.focus = (m.focus + 1) % paneCount
	case "shift+tab":
		m.focus = (m.focus + paneCount - 1) % paneCount
	case "s":
		m.sortBy[m.focus] = (m.sortBy[m.focus] + 1) % len(sortKeys[m.focus])
		m.sel[m.focus] = 0
		m.status = fmt.Sprintf("%s sorted by %s", m.focus, sortKeys[m.focus][m.sortBy[m.focus]])
	case "enter":
		m.openSelected()
	}
	return nil
}

func (m *Model) openSelected() {
	switch m.focus {
	case paneLocks:
		if m.resourcesPane() {
			if r := m.resources(); len(r) > 0 {
				m.open = &detail{resourceID: r[m.sel[paneLocks]].ID}
			}
		} else if l := m.locks(); len(l) > 0 {
			m.open = &detail{lockID: l[m.sel[paneLocks]].ID}
		}
	case paneThreads:
		if t := m.threads(); len(t) > 0 {
			r := t[m.sel[paneThreads]]
			m.open = &detail{tid: r.TID, thread: r.Thread}
		}
	default:
		m.status = "Enter opens a lock or a thread (Tab moves to their panes)"
	}
}

func (m *Model) rowCount(p pane) int {
	switch p {
	case paneLocks:
		if m.resourcesPane() {
			return len(m.resources())
		}
		return len(m.locks())
	case panePools:
		return len(m.pools())
	default:
		return len(m.threads())
	}
}

// locks are the Summary's locks in the chosen order (the Aggregator's
// order among equals).
func (m *Model) locks() []analysis.LockSummary {
	if m.sum == nil {
		return nil
	}
	l := slices.Clone(m.sum.Locks)
	key := sortKeys[paneLocks][m.sortBy[paneLocks]]
	slices.SortStableFunc(l, func(x, y analysis.LockSummary) int {
		switch key {
		case "avg":
			return cmp.Compare(y.AvgWaiters, x.AvgWaiters)
		case "peak":
			return cmp.Compare(y.Waiters, x.Waiters)
		case "blocked":
			return cmp.Compare(y.BlockedThreadSeconds, x.BlockedThreadSeconds)
		case "waited": // exact, with --jfr; locks without a recording last
			return cmp.Compare(jfrWaited(y), jfrWaited(x))
		}
		return cmp.Compare(y.CurrentWaiters, x.CurrentWaiters)
	})
	return l
}

// jfrWaited is the time threads waited on l by the JVM's own recording;
// -1 without one.
func jfrWaited(l analysis.LockSummary) float64 {
	if l.JFR == nil {
		return -1
	}
	return l.JFR.WaitSeconds
}

func (m *Model) pools() []analysis.PoolSummary {
	if m.sum == nil {
		return nil
	}
	p := slices.Clone(m.sum.Pools)
	key := sortKeys[panePools][m.sortBy[panePools]]
	slices.SortStableFunc(p, func(x, y analysis.PoolSummary) int {
		var c int
		switch key {
		case "threads":
			c = cmp.Compare(y.Threads, x.Threads)
		case "vol/s":
			c = cmp.Compare(y.VoluntaryPerSecond, x.VoluntaryPerSecond)
		case "invol/s":
			c = cmp.Compare(y.InvoluntaryPerSecond, x.InvoluntaryPerSecond)
		case "name":
			return cmp.Compare(x.Name, y.Name)
		default:
			c = cmp.Compare(y.CPUPercent, x.CPUPercent)
		}
		if c == 0 {
			c = cmp.Compare(y.Threads, x.Threads)
		}
		return c
	})
	return p
}

func (m *Model) threads() []analysis.ThreadCPU {
	if m.sum == nil {
		return nil
	}
	t := slices.Clone(m.sum.ThreadCPU)
	key := sortKeys[paneThreads][m.sortBy[paneThreads]]
	slices.SortStableFunc(t, func(x, y analysis.ThreadCPU) int {
		switch key {
		case "vol/s":
			return cmp.Compare(y.VoluntaryPerSecond, x.VoluntaryPerSecond)
		case "invol/s":
			return cmp.Compare(y.InvoluntaryPerSecond, x.InvoluntaryPerSecond)
		case "rq-wait":
			return cmp.Compare(y.RunQueueWaitShare, x.RunQueueWaitShare)
		}
		return cmp.Compare(y.Percent, x.Percent)
	})
	return t
}
