package report

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/browsertest"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testcorpus"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// These tests open reports in a real headless Chromium, offline. The live
// attach and dump-series reports of real JVMs are opened by the tests of
// internal/cli; here: every dump of the real-world corpus, and hostile
// names.

func artifacts() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", browsertest.ArtifactsDir)
}

// writeReport aggregates dumps and writes their report into a temp file.
func writeReport(t *testing.T, sources []string, dumps []*threaddump.Dump) string {
	t.Helper()
	a := analysis.New()
	for _, d := range dumps {
		a.Add(&snapshot.Snapshot{Time: d.Time, Dump: d})
	}
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, HTML(f, HTMLInput{Summary: a.Summary(), Stacks: a.Stacks(), Sources: sources}))
	require.NoError(t, f.Close())
	return path
}

func TestHTMLInBrowserCorpus(t *testing.T) {
	dir := testcorpus.Dir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			dumps, err := threaddump.ParseBytes(b)
			require.NoError(t, err)
			p := browsertest.Open(t, writeReport(t, []string{filepath.Base(file)}, dumps))
			pixels := browsertest.CheckReport(t, p)
			assert.Contains(t, pixels, "chart-flame", "every corpus dump has stacks to draw")
			browsertest.CheckFlameZoom(t, p)
			browsertest.CheckFlameSearch(t, p, "java.lang")
			t.Log("screenshot:", p.Screenshot(t, artifacts()))
		})
	}
}

// hostileThread is one thread of a dump whose names carry markup that
// would run script if it reached the page unescaped.
func hostileThread(i int, name, frame, lock, role string) string {
	state, lockLine := "RUNNABLE", "- locked"
	status := "runnable"
	if role == "waiter" {
		state, lockLine, status = "BLOCKED (on object monitor)", "- waiting to lock", "waiting for monitor entry"
	}
	return fmt.Sprintf(`"%s" #%d prio=5 os_prio=0 cpu=1.00ms elapsed=5.00s tid=0x00007f000000%04x nid=0x%x %s  [0x00007f0000a00000]
   java.lang.Thread.State: %s
	at %s(Svc.java:20)
	%s <0x0000000700000001> (a %s)
	at java.lang.Thread.run(Thread.java:833)

`, name, 10+i, i, 0x100+i, status, state, frame, lockLine, lock)
}

// Each case is a separate page: one hostile string must not hide another
// (an unescaped "<!--" changes how a browser reads a later "</script>").
var hostileCases = []struct{ name, thread, frame, lock string }{
	{"script-end", "</script><script>window.__pwned=1;alert(1)</script>", "evil.Svc.x</script><script>window.__pwned=3;alert(5)</script>", "evil.Lock</script><script>window.__pwned=4</script>"},
	{"markup", "<img src=x onerror=window.__pwned=2> worker", "evil.Svc.run<img src=x onerror=alert(2)>", "evil.Lock<svg onload=alert(3)>"},
	{"comment-and-separators", "\u2028'\"--><!-- worker <script>window.__pwned=5</script>", "evil.Svc.y<!--<script>", "evil.Lock-->\u2029</script>"},
}

// hostileAggregator parses a dump of three threads carrying the case's
// names (one owner, two waiters of its lock).
func hostileAggregator(t *testing.T, c struct{ name, thread, frame, lock string }) *analysis.Aggregator {
	t.Helper()
	dump := "2026-11-23 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):\n\n" +
		hostileThread(1, c.thread, c.frame, c.lock, "owner") +
		hostileThread(2, c.thread+" 2", c.frame, c.lock, "waiter") +
		hostileThread(3, c.thread+" 3", c.frame, c.lock, "waiter")
	dumps, err := threaddump.ParseBytes([]byte(dump))
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	require.Len(t, dumps[0].Threads, 3)
	require.Equal(t, c.frame, dumps[0].Threads[0].Frames[0].Function(), "the parser keeps the hostile frame as it is")
	a := analysis.New()
	a.Add(&snapshot.Snapshot{Time: dumps[0].Time, Dump: dumps[0]})
	return a
}

func TestHTMLInBrowserHostileNames(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			require.NoError(t, os.WriteFile(path, renderHTML(t, hostileAggregator(t, c), []string{c.thread + ".txt"}), 0o644))

			p := browsertest.Open(t, path)
			browsertest.CheckReport(t, p)
			assert.Empty(t, p.Dialogs(), "a hostile name opened a dialog")
			assert.False(t, browsertest.Eval[bool](t, p, `typeof window.__pwned !== "undefined"`), "a hostile name ran script")
			// Only the page's own three scripts exist, and no element came from a name.
			assert.Equal(t, 3, browsertest.Eval[int](t, p, `document.scripts.length`))
			assert.Equal(t, 0, browsertest.Eval[int](t, p, `document.querySelectorAll("body img, body svg, body iframe").length`))
			// The names are shown, as text, and the data block holds them exactly.
			text := browsertest.Eval[string](t, p, `document.body.innerText`)
			assert.Contains(t, text, c.thread, "the owner column shows the name as it is")
			assert.Contains(t, text, c.lock)
			names := browsertest.Eval[[]string](t, p, `JSON.parse(document.getElementById("ctprof-data").textContent).flame.names`)
			assert.Contains(t, names, c.frame)
			// The flame graph draws frame names as canvas text; search finds them.
			browsertest.CheckFlameSearch(t, p, c.frame)
			t.Log("screenshot:", p.Screenshot(t, artifacts()))
		})
	}
}

// The resource and lock tables of real libraries' dumps (the corpus the
// analysis tests keep under internal/analysis/testdata/corpus, frames of
// a hundred characters and more) stay inside the page's 1,280 pixels.
func TestHTMLResourceTablesFitTheWindow(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "analysis", "testdata", "corpus", "*", "dump-*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no kept corpus dumps under internal/analysis/testdata/corpus")
	var dumps []*threaddump.Dump
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		ds, err := threaddump.ParseBytes(b)
		require.NoError(t, err)
		dumps = append(dumps, ds...)
	}
	p := browsertest.Open(t, writeReport(t, []string{"corpus"}, dumps))
	browsertest.CheckReport(t, p)
	rows := browsertest.Eval[int](t, p, `document.querySelectorAll('#table-resources tbody tr').length`)
	assert.Greater(t, rows, 1, "the corpus has several resources")
	overflow := browsertest.Eval[[]string](t, p, `(() => {
		const right = document.body.getBoundingClientRect().right;
		const out = [];
		for (const id of ['table-resources', 'table-locks']) {
			const tab = document.getElementById(id);
			if (!tab) { out.push(id + ' missing'); continue; }
			const r = tab.getBoundingClientRect().right;
			if (r > right + 1) out.push(id + ' ends at ' + r + ', the page at ' + right);
			for (const cell of tab.querySelectorAll('td, th')) {
				if (cell.scrollWidth > cell.clientWidth + 1) { out.push(id + ': a cell overflows: ' + cell.textContent.slice(0, 60)); break; }
			}
		}
		return out;
	})()`)
	assert.Empty(t, overflow)
	t.Log("screenshot:", p.Screenshot(t, artifacts()))
}
