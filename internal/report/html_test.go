package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testgolden"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/pkg/threaddump"
	"github.com/ctprof/ctprof/pkg/usl"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// smallSeries is a live run of a small JVM: 20 one-second /proc samples
// and 4 thread dumps, with a contended monitor and a two-thread deadlock.
func smallSeries() *analysis.Aggregator {
	a := analysis.New()
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	target := snapshot.Target{PID: 4242, Name: "java", Kind: snapshot.KindJVM, CPUs: 2}
	frame := func(class, method string, line int) threaddump.Frame {
		return threaddump.Frame{Class: class, Method: method, File: "X.java", Line: line}
	}
	lock := func(addr, class string) threaddump.Lock { return threaddump.Lock{Address: addr, Class: class} }
	for sec := 0; sec < 20; sec++ {
		var threads []procfs.Thread
		for k := 0; k < 12; k++ {
			threads = append(threads, procfs.Thread{TID: 100 + k, StartTime: uint64(100 + k), Name: fmt.Sprintf("request-%d", k), State: 'S',
				Voluntary: uint64(sec * (k + 1) * 10), Involuntary: uint64(sec * k), RunTime: time.Duration(sec*k) * 10 * time.Millisecond,
				CPUsAllowed: "0-1", Syscall: procfs.SyscallUnknown})
		}
		snap := &snapshot.Snapshot{Time: t0.Add(time.Duration(sec) * time.Second), Interval: time.Second, Target: target, Threads: threads,
			Connections: &procfs.Connections{Established: 3, ByLocalPort: map[int]int{8080: 3}},
			Host:        &procfs.Host{ContextSwitches: uint64(5000 * sec), CPUs: 2}}
		if sec%5 == 0 {
			d := &threaddump.Dump{Format: threaddump.FormatHotSpot, Time: snap.Time, VM: "OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode)"}
			for k := 0; k < 12; k++ {
				th := threaddump.Thread{Name: fmt.Sprintf("request-%d", k), ID: int64(20 + k), OSThreadID: int64(100 + k)}
				switch {
				case k == 0:
					th.State = threaddump.StateRunnable
					th.Frames = []threaddump.Frame{frame("app.Cache", "get", 44), frame("app.Server", "handle", 10), frame("java.lang.Thread", "run", 833)}
					th.Locks = []threaddump.LockEvent{{Action: threaddump.LockLocked, Lock: lock("0x1000", "app.Cache")}}
				case k < 8:
					th.State = threaddump.StateBlocked
					th.Frames = []threaddump.Frame{frame("app.Cache", "get", 42), frame("app.Server", "handle", 10), frame("java.lang.Thread", "run", 833)}
					th.Locks = []threaddump.LockEvent{{Action: threaddump.LockWaitingToLock, Lock: lock("0x1000", "app.Cache")}}
				case k == 8 || k == 9:
					mine, theirs := "0x2000", "0x3000"
					if k == 9 {
						mine, theirs = theirs, mine
					}
					th.State = threaddump.StateBlocked
					th.Frames = []threaddump.Frame{frame("app.Transfer", "move", 70+k), frame("java.lang.Thread", "run", 833)}
					th.Locks = []threaddump.LockEvent{
						{Action: threaddump.LockWaitingToLock, Lock: lock(theirs, "app.Account")},
						{Action: threaddump.LockLocked, Lock: lock(mine, "app.Account")}}
				default:
					th.State = threaddump.StateTimedWaiting
					th.Frames = []threaddump.Frame{frame("java.lang.Thread", "sleep", 0), frame("app.Poller", "loop", 5), frame("java.lang.Thread", "run", 833)}
				}
				d.Threads = append(d.Threads, th)
			}
			snap.Dump = d
			snap.DumpCost = &snapshot.DumpCost{Method: "attach", Wall: 20 * time.Millisecond, Pause: 2 * time.Millisecond}
		}
		a.Add(snap)
	}
	return a
}

func renderHTML(t *testing.T, a *analysis.Aggregator, sources []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, HTMLInput{Summary: a.Summary(), Stacks: a.Stacks(), Sources: sources}))
	return buf.Bytes()
}

// dataBlock returns the raw text of the page's JSON data block.
func dataBlock(t *testing.T, page []byte) string {
	t.Helper()
	const open = `<script type="application/json" id="ctprof-data">`
	i := bytes.Index(page, []byte(open))
	require.GreaterOrEqual(t, i, 0, "no data block")
	rest := page[i+len(open):]
	j := bytes.Index(rest, []byte("</script>"))
	require.GreaterOrEqual(t, j, 0)
	return string(rest[:j])
}

// structure lists what a report is made of, stable across runs: the ids
// of its elements in page order, and per chart its series and sizes. A
// golden of it shows in review when a section or chart appears, moves or
// goes.
func structure(t *testing.T, page []byte) string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if a.Key == "id" {
					fmt.Fprintf(&b, "%s<%s id=%s>\n", strings.Repeat("  ", depth), n.Data, a.Val)
					depth++
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth)
		}
	}
	walk(doc, 0)

	var data struct {
		Charts map[string]struct {
			Series []struct {
				Type string `json:"type"`
				Name string `json:"name"`
				Data []json.RawMessage
			} `json:"series"`
		} `json:"charts"`
		Flame *struct {
			Names []string
			Views []struct {
				ID, Label    string
				Total, Depth int
				Nodes        [][6]int
			}
		} `json:"flame"`
	}
	require.NoError(t, json.Unmarshal([]byte(dataBlock(t, page)), &data))
	ids := make([]string, 0, len(data.Charts))
	for id := range data.Charts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b.WriteString("\ncharts:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  %s:", id)
		for _, s := range data.Charts[id].Series {
			fmt.Fprintf(&b, " %s %q (%d points);", s.Type, s.Name, len(s.Data))
		}
		b.WriteString("\n")
	}
	if data.Flame != nil {
		fmt.Fprintf(&b, "\nflame: %d names\n", len(data.Flame.Names))
		for _, v := range data.Flame.Views {
			fmt.Fprintf(&b, "  %s %q: %d samples, depth %d, %d frames\n", v.ID, v.Label, v.Total, v.Depth, len(v.Nodes))
		}
	}
	return b.String()
}

func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	testgolden.Check(t, filepath.Join("testdata", "golden", name), []byte(got), *update, "go test ./internal/report -run "+t.Name()+" -update")
}

func TestHTMLStructureGolden(t *testing.T) {
	t.Run("live-jvm-series", func(t *testing.T) {
		page := renderHTML(t, smallSeries(), nil)
		goldenFile(t, "live-jvm-series.structure.txt", structure(t, page))
	})
	for _, c := range hostileCases {
		t.Run("hostile-"+c.name, func(t *testing.T) {
			page := renderHTML(t, hostileAggregator(t, c), []string{c.thread})
			goldenFile(t, "hostile-"+c.name+".structure.txt", structure(t, page))
		})
	}
}

// The report's sections carry the same facts as the summary: spot-check
// the header, the findings' words and the lock table.
func TestHTMLContent(t *testing.T) {
	a := smallSeries()
	s := a.Summary()
	page := string(renderHTML(t, a, nil))
	assert.Contains(t, page, "<title>ctprof: pid 4242 (java)</title>")
	assert.Contains(t, page, "overhead ctprof caused")
	require.NotEmpty(t, s.Findings)
	for _, f := range s.Findings {
		assert.Contains(t, page, html.EscapeString(f.Summary), "the finding is worded as in the summary")
	}
	for _, id := range []string{"chart-flame", "table-locks", "table-pools", "table-threads", "chart-deadlocks"} {
		assert.Contains(t, page, `id="`+id+`"`)
	}
	for _, tl := range s.Timelines {
		assert.Contains(t, page, `id="chart-timeline-`+tl.ID+`"`)
	}
}

// No byte of the data block can end the script element or open markup:
// every '<', '>' and '&' from the target is written as a \u escape.
func TestHTMLDataBlockHasNoMarkup(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			block := dataBlock(t, renderHTML(t, hostileAggregator(t, c), []string{c.thread}))
			assert.NotContains(t, block, "<")
			assert.NotContains(t, block, ">")
			assert.NotContains(t, block, "\u2028")
			assert.NotContains(t, block, "\u2029")
			assert.Contains(t, block, `\u003c/script\u003e`[:0]+jsonString(c.frame), "the hostile frame is in the data, escaped")
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func TestHTMLWithoutStacks(t *testing.T) {
	a := analysis.New()
	a.Add(&snapshot.Snapshot{Time: time.Unix(0, 0), Interval: time.Second, Target: snapshot.Target{PID: 7, Name: "cat", Kind: snapshot.KindNative, CPUs: 1},
		Threads: []procfs.Thread{{TID: 7, Name: "cat", State: 'S', Syscall: procfs.SyscallUnknown}}})
	page := string(renderHTML(t, a, nil))
	assert.NotContains(t, page, `id="chart-flame"`)
	assert.Contains(t, page, "No stacks")
}

// The page of ctprof fit and ctprof scale: its structure, from the
// published SPEC SDM91 data and two levels with a lock that grows.
func TestScalabilityHTMLStructureGolden(t *testing.T) {
	pts := []usl.Point{{N: 1, Throughput: 65}, {N: 18, Throughput: 996}, {N: 36, Throughput: 1652}, {N: 72, Throughput: 1853}, {N: 108, Throughput: 1829}, {N: 144, Throughput: 1775}, {N: 216, Throughput: 1702}}
	u, uerr := usl.FitUSL(pts)
	a, aerr := usl.FitAmdahl(pts)
	var buf bytes.Buffer
	require.NoError(t, ScalabilityHTML(&buf, ScalabilityInput{Title: "ctprof fit: specsdm91.csv", Unit: "N", Fit: NewFitDocument(pts, u, uerr, a, aerr)}))
	goldenFile(t, "fit-specsdm91.structure.txt", structure(t, buf.Bytes()))
	assert.Contains(t, buf.String(), "contention bounds it")

	two := []usl.Point{{N: 1, Throughput: 900}, {N: 2, Throughput: 910}}
	a2, aerr2 := usl.FitAmdahl(two)
	_, uerr2 := usl.FitUSL(two)
	buf.Reset()
	require.NoError(t, ScalabilityHTML(&buf, ScalabilityInput{Title: "ctprof scale: ./bench <contended>", Unit: "CPUs",
		Fit:      NewFitDocument(two, nil, uerr2, a2, aerr2),
		Levels:   []ScalabilityLevel{{N: 1, Throughput: 900, Speedup: 1, CPUPercent: 99}, {N: 2, Throughput: 910, Speedup: 1.01, CPUPercent: 101}},
		Locks:    []ScalabilityLock{{Name: "futex work_lock (bench+0x40c0)", Site: "", BlockedShare: []float64{0, 0.76}}},
		Findings: []analysis.Finding{{Kind: "scale-lock", Severity: "warning", Summary: "Throughput scales to 1.01x on 2 CPUs", NextStep: "shorten it"}}}))
	goldenFile(t, "scale-two-levels.structure.txt", structure(t, buf.Bytes()))
	assert.Contains(t, buf.String(), "./bench &lt;contended&gt;", "the command is escaped")
}

// A native lock's row: the holder's tid and stack, the waiters' site, what
// the kernel counted and what the fast reads caught; the flame graph of
// the blocked threads' native stacks.
func TestHTMLNativeLockRow(t *testing.T) {
	a := analysis.New()
	stack := []symbolize.StackFrame{{PC: 1, Module: "libc.so.6", Function: "__lll_lock_wait"}, {PC: 2, Module: "app", Function: "post_entry"}, {PC: 3, Module: "app", Function: "worker_loop"}}
	held := []symbolize.StackFrame{{PC: 4, Module: "libc.so.6", Function: "clock_nanosleep"}, {PC: 5, Module: "app", Function: "flush_log"}}
	for i := 0; i < 3; i++ {
		a.Add(&snapshot.Snapshot{
			Time: time.Unix(int64(i), 0), Interval: time.Second, Target: snapshot.Target{PID: 7, Name: "app", Kind: snapshot.KindNative, CPUs: 2},
			Threads: []procfs.Thread{
				{TID: 8, StartTime: 8, Name: "w-1", State: 'S', Syscall: 202, Stack: stack},
				{TID: 9, StartTime: 9, Name: "w-2", State: 'S', Syscall: 202, Stack: stack},
				{TID: 10, StartTime: 10, Name: "w-3", State: 'S', Syscall: 230, Stack: held},
			},
			Futexes: []procfs.FutexWait{{Address: 0x4040, Kind: procfs.FutexLock, Op: "FUTEX_WAIT_PRIVATE", TIDs: []int{8, 9},
				Location: symbolize.Location{Address: 0x4040, Module: "app", Offset: 0x40, Symbol: "log_lock", SymbolSize: 40},
				Holder:   &procfs.LockHolder{Lock: "mutex", TID: 10}}},
			FutexTrace: &snapshot.FutexTrace{Elapsed: time.Second, Calls: 5000, Exact: true, Traced: 5000, TracedShare: 1,
				Futexes: []snapshot.TracedFutex{{Address: 0x4040, Kind: procfs.FutexLock, Waits: 5000, Traced: 5000, Total: 50 * time.Millisecond, Max: time.Millisecond,
					Durations: []time.Duration{10 * time.Microsecond, 20 * time.Microsecond}}}},
		})
	}
	page := string(renderHTML(t, a, nil))
	assert.Contains(t, page, "post_entry ← worker_loop")
	assert.Contains(t, page, "tid 10, mutex")
	assert.Contains(t, page, "stack: clock_nanosleep ← flush_log")
	assert.Contains(t, page, "kernel counted 15000 waits")
	assert.Contains(t, page, `id="chart-flame"`)
}
