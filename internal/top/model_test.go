package top

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-runewidth"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/testgolden"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

var update = flag.Bool("update", false, "rewrite the golden screens under testdata/screens")

const refresh = "go test ./internal/top/ -run TestScreens -update"

// The fixtures are recordings of real JVMs, made with
//
//	ctprof attach PID --count 4 --record internal/top/testdata/NAME.ctprof
//
// against testdata/java/SyncSingleton.java (8 request threads on one
// synchronized singleton) and testdata/java/HostileNames.java, and with
// --jfr --count 7 --interval 1s against testdata/java/JfrLocks.java
// (jfrlocks.ctprof); replayed,
// they give the Summary a live run had, exactly.
func replay(t *testing.T, name string) Refresh {
	t.Helper()
	r, err := record.Open(filepath.Join("testdata", name+".ctprof"))
	require.NoError(t, err)
	defer r.Close()
	agg := analysis.New()
	var last *threaddump.Dump
	for {
		snap, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		agg.Add(snap)
		if snap.Dump != nil {
			last = snap.Dump
		}
	}
	require.NotNil(t, last, "%s has no thread dump", name)
	return Refresh{Summary: agg.Summary(), Stacks: StacksOf(last)}
}

// keyMsg turns a key name as bubbletea prints it into its message.
func keyMsg(k string) tea.KeyMsg {
	named := map[string]tea.KeyType{"enter": tea.KeyEnter, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab, "esc": tea.KeyEsc,
		"up": tea.KeyUp, "down": tea.KeyDown, "ctrl+c": tea.KeyCtrlC}
	if t, ok := named[k]; ok {
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func newSized(o Options, w, h int) *Model {
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

// checkScreen asserts the frame fills the terminal exactly and writes
// nothing but text (no escape sequence from the target or from styles).
func checkScreen(t *testing.T, screen string, w, h int) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	assert.Len(t, lines, h, "a frame is exactly the terminal's height")
	for i, l := range lines {
		assert.LessOrEqual(t, runewidth.StringWidth(l), w, "line %d is wider than %d: %q", i, w, l)
		for _, r := range l {
			assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0), "line %d holds control character %U: %q", i, r, l)
		}
	}
}

func TestScreens(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		w, h    int
		keys    []string
		want    []string
	}{
		{"first-80x24", "syncsingleton", 80, 24, nil, []string{"SyncSingleton", "request-N", "monitor"}},
		{"lock-owner-80x24", "syncsingleton", 80, 24, []string{"enter"}, []string{"Owner: request-", "Owner's frames while holding it", "SyncSingleton.handle("}},
		{"lock-closed-80x24", "syncsingleton", 80, 24, []string{"enter", "esc"}, []string{"▸ Locks"}},
		{"pools-by-threads-120x40", "syncsingleton", 120, 40, []string{"tab", "s"}, []string{"▸ Pools", "sort: threads", "pools sorted by threads"}},
		{"thread-detail-120x40", "syncsingleton", 120, 40, []string{"shift+tab", "enter"}, []string{"Thread  request-", "Stack in the latest dump:", "at SyncSingleton."}},
		{"threads-by-invol-120x40", "syncsingleton", 120, 40, []string{"tab", "tab", "s", "s", "down"}, []string{"▸ Busiest threads", "sort: invol/s"}},
		{"jfr-locks-120x40", "jfrlocks", 120, 40, []string{"s", "s", "s", "s"}, []string{"WAITED", "P99ms", "JfrLocks$Monitor", "sort: waited"}},
		{"hostile-120x40", "hostilenames", 120, 40, nil, []string{`right: Ünï "线程"\t- locked`, "</script><script>alert(N)</script>"}},
		{"hostile-lock-120x40", "hostilenames", 120, 40, []string{"enter"}, []string{"Owner: </script><script>alert(1)</script>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSized(Options{Interval: 1e9, Profile: termenv.Ascii}, tt.w, tt.h)
			m.Update(replay(t, tt.fixture))
			press(m, tt.keys...)
			screen := m.View()
			checkScreen(t, screen, tt.w, tt.h)
			for _, s := range tt.want {
				assert.Contains(t, screen, s)
			}
			testgolden.Check(t, filepath.Join("testdata", "screens", tt.name+".txt"), []byte(screen+"\n"), *update, refresh)
		})
	}
}

// Every size from the smallest supported up keeps the frame within the
// terminal, in every pane and view.
func TestScreensFitEverySize(t *testing.T) {
	r := replay(t, "syncsingleton")
	for _, size := range [][2]int{{80, 24}, {81, 25}, {100, 30}, {132, 43}, {200, 60}} {
		for _, keys := range [][]string{nil, {"enter"}, {"tab"}, {"tab", "tab", "enter"}} {
			m := newSized(Options{Interval: 1e9, Profile: termenv.Ascii}, size[0], size[1])
			m.Update(r)
			press(m, keys...)
			checkScreen(t, m.View(), size[0], size[1])
		}
	}
}

// A name with terminal escapes reaches the screen escaped: a thread named
// to set the window title or clear the screen cannot do either.
func TestTargetStringsAreEscaped(t *testing.T) {
	r := replay(t, "syncsingleton")
	evil := "evil\x1b]0;owned\x07\x1b[2J\u202e"
	require.NotEmpty(t, r.Summary.Locks)
	r.Summary.Locks[0].Owner = &evil
	r.Summary.Locks[0].Class = evil
	r.Summary.ThreadCPU[0].Thread = evil
	r.Summary.Pools[0].Name = evil
	r.Summary.Findings[0].Summary = evil
	for _, keys := range [][]string{nil, {"enter"}, {"shift+tab", "enter"}} {
		m := newSized(Options{Interval: 1e9, Profile: termenv.Ascii}, 200, 50)
		m.Update(r)
		press(m, keys...)
		screen := m.View()
		checkScreen(t, screen, 200, 50)
		assert.NotContains(t, screen, "\x1b")
		assert.NotContains(t, screen, "\u202e")
		assert.Contains(t, screen, `evil\x1b]0;owned\a\x1b[2J\u202e`, "keys %v", keys)
	}
}

func TestColourOnlyWithAColourProfile(t *testing.T) {
	r := replay(t, "syncsingleton")
	plain := newSized(Options{Profile: termenv.Ascii}, 80, 24)
	plain.Update(r)
	assert.NotContains(t, plain.View(), "\x1b[")
	colour := newSized(Options{Profile: termenv.ANSI256}, 80, 24)
	colour.Update(r)
	assert.Contains(t, colour.View(), "\x1b[", "a colour terminal gets styles")
}

// Paused, the screen stays on the last refresh while samples go on; p
// again shows the newest.
func TestPauseKeepsTheScreen(t *testing.T) {
	older, newer := replay(t, "syncsingleton"), replay(t, "syncsingleton")
	newer.Summary.DurationSeconds += 3600
	m := newSized(Options{Interval: 1e9, Profile: termenv.Ascii}, 80, 24)
	m.Update(older)
	press(m, "p")
	m.Update(newer)
	screen := m.View()
	assert.Contains(t, screen, "PAUSED")
	assert.NotContains(t, screen, "up 1h")
	press(m, "p")
	screen = m.View()
	assert.NotContains(t, screen, "PAUSED")
	assert.Contains(t, screen, "up 1h00m")
}

func TestReportKey(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"written", nil, "wrote the HTML report to run.html"},
		{"failed", errors.New("disk full"), "report not written: disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			m := newSized(Options{Profile: termenv.Ascii, WriteReport: func() (string, error) { calls++; return "run.html", tt.err }}, 80, 24)
			m.Update(replay(t, "syncsingleton"))
			cmd := press(m, "r")
			require.NotNil(t, cmd)
			assert.Contains(t, m.View(), "writing the HTML report")
			m.Update(cmd())
			assert.Equal(t, 1, calls)
			assert.Contains(t, m.View(), tt.want)
		})
	}
}

func TestQuitKeys(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		m := newSized(Options{Profile: termenv.Ascii}, 80, 24)
		m.Update(replay(t, "syncsingleton"))
		cmd := press(m, k)
		require.NotNil(t, cmd, k)
		assert.IsType(t, tea.QuitMsg{}, cmd(), k)
	}
}

func TestBeforeTheFirstSampleAndAfterTheLast(t *testing.T) {
	m := newSized(Options{Profile: termenv.Ascii}, 80, 24)
	screen := m.View()
	checkScreen(t, screen, 80, 24)
	assert.Contains(t, screen, "waiting for the first sample")
	press(m, "enter", "down", "s", "tab", "enter")
	checkScreen(t, m.View(), 80, 24)

	m.Update(replay(t, "syncsingleton"))
	m.Update(Stopped{Reason: "pid 42 exited after 4 samples; q quits"})
	screen = m.View()
	assert.Contains(t, screen, "STOPPED")
	assert.Contains(t, screen, "pid 42 exited after 4 samples")
}
