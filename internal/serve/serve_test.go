package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/metrics"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testnative"
)

// exporter records what the targets export.
type exporter struct {
	mu         sync.Mutex
	registered []metrics.TargetInfo
	up         map[int]bool
	dropped    []int
}

func (e *exporter) Register(t metrics.TargetInfo, _ metrics.SummarySource) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.registered = append(e.registered, t)
}

func (e *exporter) SetUp(pid int, up bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.up == nil {
		e.up = map[int]bool{}
	}
	e.up[pid] = up
}

func (e *exporter) Unregister(pid int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropped = append(e.dropped, pid)
}

// proc is one process of a fixture /proc tree.
type proc struct {
	pid, ppid int
	name      string
	args      []string // none for a kernel thread
	maps      string
}

const libjvm = "7f0000000000-7f0000100000 r-xp 00000000 08:01 42 /usr/lib/jvm/lib/server/libjvm.so\n"

func writeProc(t *testing.T, root string, p proc) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cmdline := ""
	if len(p.args) > 0 {
		cmdline = strings.Join(p.args, "\x00") + "\x00"
	}
	files := map[string]string{
		"status":  fmt.Sprintf("Name:\t%s\nPPid:\t%d\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t1\n", p.name, p.ppid),
		"stat":    fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 4242 10000000 300\n", p.pid, p.name, p.ppid, p.pid, p.pid),
		"comm":    p.name + "\n",
		"cmdline": cmdline,
		"maps":    p.maps,
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
}

func fakeRoot(t *testing.T, procs ...proc) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range procs {
		writeProc(t, root, p)
	}
	return root
}

// What --name and --java take for a target, and what they never do.
func TestMatches(t *testing.T) {
	procs := []proc{
		{pid: 100, ppid: 1, name: "marketdata", args: []string{"/opt/md/bin/marketdata", "--port", "9000"}},
		{pid: 101, ppid: 1, name: "java", args: []string{"java", "-cp", "app.jar", "com.example.Gateway"}, maps: libjvm},
		{pid: 102, ppid: 1, name: "java", args: []string{"java", "-Xshare:off"}, maps: "7f00-7f01 r-xp 00000000 08:01 43 /opt/openj9/lib/default/libj9vm29.so\n"},
		{pid: 103, ppid: 1, name: "nginx", args: []string{"nginx: worker process"}},
		{pid: 104, ppid: 2, name: "kmarketd"},
		{pid: 105, ppid: 1, name: "elasticsearch-n", args: []string{"/usr/share/elasticsearch-node", "-d"}, maps: libjvm},
	}
	tests := []struct {
		name    string
		pattern string
		java    bool
		want    []int
	}{
		{"a name", "^marketdata$", false, []int{100}},
		{"a command line", "Gateway", false, []int{101}},
		{"never a kernel thread", "market", false, []int{100}},
		{"a cut name's whole", "^elasticsearch-node$", false, []int{105}},
		{"every JVM, HotSpot or OpenJ9", "", true, []int{101, 102, 105}},
		{"either", "nginx", true, []int{101, 102, 103, 105}},
		{"a pid that is gone", "^none$", false, nil},
	}
	root := fakeRoot(t, procs...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{ProcRoot: root, Java: tc.java, Exporter: &exporter{}}
			if tc.pattern != "" {
				o.Name = regexp.MustCompile(tc.pattern)
			}
			ts := New(o)
			var got []int
			for _, pid := range []int{100, 101, 102, 103, 104, 105, 999} {
				if ts.matches(pid) {
					got = append(got, pid)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// A launcher script that execs java keeps its pid: whether it is a JVM is
// asked again when its name changes, and only then.
func TestJVMVerdictFollowsTheName(t *testing.T) {
	root := fakeRoot(t, proc{pid: 100, ppid: 1, name: "start.sh", args: []string{"/bin/sh", "start.sh"}})
	ts := New(Options{ProcRoot: root, Java: true, Exporter: &exporter{}})
	assert.False(t, ts.matches(100))

	require.NoError(t, os.WriteFile(filepath.Join(root, "100", "maps"), []byte(libjvm), 0o644))
	assert.False(t, ts.matches(100), "the same name: the verdict is kept")

	writeProc(t, root, proc{pid: 100, ppid: 1, name: "java", args: []string{"java", "-jar", "app.jar"}, maps: libjvm})
	assert.True(t, ts.matches(100), "exec'd java: asked again")
}

// One scan over a fixture root: ctprof and its ancestors are never
// targets, an explicit pid that does not exist is exported as down and not
// tried again, and a discovered process that cannot be sampled is said
// once while it lives.
func TestScan(t *testing.T) {
	const missing = 1 << 22 // above the kernel's pid_max
	self := os.Getpid()
	root := fakeRoot(t,
		proc{pid: self, ppid: 20, name: "ctprof", args: []string{"ctprof", "serve", "--name", "market"}},
		proc{pid: 20, ppid: 0, name: "sh", args: []string{"sh", "-c", "ctprof serve --name market"}},
		proc{pid: 100, ppid: 1, name: "marketdata", args: []string{"marketdata"}},
	)
	// Their threads cannot be listed: a failure other than an exit, which
	// would be said for any of them that scan tried.
	for _, pid := range []int{self, 20, 100} {
		require.NoError(t, os.WriteFile(filepath.Join(root, strconv.Itoa(pid), "task"), nil, 0o644))
	}

	exp := &exporter{}
	var events []Event
	ts := New(Options{ProcRoot: root, PIDs: []int{missing}, Name: regexp.MustCompile("market"), Exporter: exp, Report: func(ev Event) { events = append(events, ev) }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts.scan(ctx)
	ts.scan(ctx)

	require.Len(t, events, 2, "%+v", events)
	assert.Equal(t, StartFailed, events[0].Kind)
	assert.Equal(t, missing, events[0].PID)
	assert.True(t, events[0].Explicit)
	assert.True(t, errors.Is(events[0].Err, procfs.ErrProcessGone), "%v", events[0].Err)
	assert.Equal(t, StartFailed, events[1].Kind)
	assert.Equal(t, 100, events[1].PID)
	assert.False(t, events[1].Explicit)
	assert.Equal(t, map[int]bool{missing: false}, exp.up)
	assert.Empty(t, exp.registered)

	// Once the process is gone, what was learnt about it is forgotten.
	require.NoError(t, os.RemoveAll(filepath.Join(root, "100")))
	ts.scan(ctx)
	assert.Empty(t, ts.failed)
	assert.Len(t, events, 2)

	require.NoError(t, os.RemoveAll(root))
	ts.scan(ctx)
	require.Len(t, events, 3)
	assert.Equal(t, ListFailed, events[2].Kind)
	assert.ErrorContains(t, events[2].Err, "list processes in "+root)
}

// Run on live processes: a discovered target is sampled until it exits
// and then dropped; an explicit one is then exported as down.
func TestRunFollowsLiveTargets(t *testing.T) {
	token := fmt.Sprintf("serve-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	explicit := testnative.Start(t, "many_threads", "2")
	// many_threads takes the thread count and a lifetime (0: forever);
	// the token is an argument it ignores and --name matches.
	discovered := testnative.Start(t, "many_threads", "3", "0", token)

	exp := &exporter{}
	events := make(chan Event, 100)
	ctx, cancel := context.WithCancel(context.Background())
	ts := New(Options{
		PIDs: []int{explicit.PID}, Name: regexp.MustCompile(regexp.QuoteMeta(token)),
		Interval: 50 * time.Millisecond, Discovery: 100 * time.Millisecond, Exporter: exp,
		Report: func(ev Event) { events <- ev },
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Run(ctx)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after cancel")
		}
	}()
	next := func(what string) Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(30 * time.Second):
			t.Fatalf("no event: %s", what)
		}
		return Event{}
	}
	started := map[int]Event{}
	for len(started) < 2 {
		ev := next("started")
		require.Equal(t, Started, ev.Kind, "%+v", ev)
		started[ev.PID] = ev
	}
	assert.True(t, started[explicit.PID].Explicit)
	assert.False(t, started[discovered.PID].Explicit)
	assert.Equal(t, "many_threads", started[discovered.PID].Target.Name)

	discovered.Stop()
	ev := next("discovered exited")
	assert.Equal(t, Event{Kind: Exited, PID: discovered.PID, Target: started[discovered.PID].Target}, ev)
	explicit.Stop()
	ev = next("explicit exited")
	assert.Equal(t, Event{Kind: Exited, PID: explicit.PID, Explicit: true, Target: started[explicit.PID].Target}, ev)

	exp.mu.Lock()
	defer exp.mu.Unlock()
	assert.Len(t, exp.registered, 2)
	assert.Equal(t, []int{discovered.PID}, exp.dropped)
	assert.Equal(t, map[int]bool{explicit.PID: false}, exp.up)
}

// Every event reads as a sentence, and what comes from the target is
// escaped for the terminal.
func TestEventMessages(t *testing.T) {
	target := snapshot.Target{PID: 7, Name: "evil\x1b[2J", Kind: snapshot.KindJVM}
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Kind: Started, PID: 7, Target: target}, `ctprof: sampling pid 7 (evil\x1b[2J, jvm) every 1s`},
		{Event{Kind: Exited, PID: 7, Target: target, Explicit: true}, `ctprof: pid 7 (evil\x1b[2J) exited; exporting ctprof_up 0 for it`},
		{Event{Kind: Exited, PID: 7, Target: target}, `ctprof: pid 7 (evil\x1b[2J) exited; its series are dropped`},
		{Event{Kind: Exited, PID: 7, Target: target, Exec: true}, `ctprof: pid 7 (evil\x1b[2J) exec'd another program; its series are dropped`},
		{Event{Kind: Noted, PID: 7, Note: "a\nb"}, `ctprof: pid 7: a\nb`},
	} {
		got := tc.ev.Message(time.Second)
		assert.Equal(t, tc.want, got)
		assert.NotContains(t, got, "\x1b")
	}
}

// A server made of processes is one target: of a parent and its workers
// that all match --name, only the parent is sampled (with its tree); with
// trees off, each is a target of its own.
func TestScanSamplesATreeOnce(t *testing.T) {
	token := fmt.Sprintf("serve-tree-%d-%d", os.Getpid(), time.Now().UnixNano())
	p := testnative.Start(t, "forked_workers", "3", "shared", token)
	for _, tc := range []struct {
		mode    sample.TreeMode
		targets int
	}{{sample.TreeAuto, 1}, {sample.TreeOff, 4}} {
		exp := &exporter{}
		var events []Event
		ts := New(Options{Name: regexp.MustCompile(regexp.QuoteMeta(token)), Interval: time.Hour, Exporter: exp, Tree: tc.mode,
			Report: func(ev Event) { events = append(events, ev) }})
		ctx, cancel := context.WithCancel(context.Background())
		ts.scan(ctx)
		started := map[int]bool{}
		for _, ev := range events {
			if ev.Kind == Started {
				started[ev.PID] = true
			}
		}
		assert.Len(t, started, tc.targets, "tree mode %v: %+v", tc.mode, events)
		if tc.mode == sample.TreeAuto {
			assert.True(t, started[p.PID], "the parent is the target")
		}
		cancel()
		ts.wait()
	}
}
