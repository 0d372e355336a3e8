// Package browsertest opens ctprof's HTML reports in a real headless
// Chromium for tests: offline, with every console message, exception,
// dialog and network request recorded, so a test can say "nothing left the
// page, nothing failed, nothing ran that should not".
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds the browser: $CTPROF_CHROMIUM, else Debian's chromium
// (the binary, not the wrapper script), else one on PATH. The test fails,
// never skips, without one: `make test` installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CTPROF_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found: `make test` installs Debian's chromium (scripts/deps.sh), or set CTPROF_CHROMIUM to a Chrome/Chromium binary")
	return ""
}

// Page is one report opened in a fresh headless browser.
type Page struct {
	ctx context.Context
	URL string

	mu         sync.Mutex
	console    []string
	exceptions []string
	requests   []string
	dialogs    []string
	logs       []string
}

// Open starts a headless Chromium with a fresh profile and no network, and
// loads the file at path from file://. It waits until the report's script
// has run (window.ctprofReport.ready). The browser is closed at the end of
// the test.
func Open(t testing.TB, path string) *Page {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("no-default-browser-check", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	// A loaded 2-core machine starts Chromium slowly; a hung browser must
	// still end the test.
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })

	p := &Page{ctx: ctx, URL: (&url.URL{Scheme: "file", Path: abs}).String()}
	if err := chromedp.Listen(ctx, p.record); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"enable runtime events", func() error { _, err := chromedp.Call(ctx, runtime.Enable, struct{}{}); return err }},
		{"enable log events", func() error { _, err := chromedp.Call(ctx, log.Enable, struct{}{}); return err }},
		{"enable network events", func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err }},
		{"take the network offline", func() error {
			_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
				MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
			})
			return err
		}},
		{"load " + p.URL, func() error { return chromedp.Do(ctx, chromedp.Navigate(p.URL)) }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("Chromium: %s: %v", step.what, err)
		}
	}
	// The report's script sets ready last; an exception before it leaves
	// it unset, and the recorded exception says why.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(window.ctprofReport && window.ctprofReport.ready)`))
		if err == nil && ready {
			break
		}
		if ex := p.Exceptions(); len(ex) > 0 && time.Until(deadline) < 50*time.Second {
			t.Fatalf("the report's script failed: %q", ex)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report's script did not finish in 60 s (err %v); exceptions: %q; console: %q", err, p.Exceptions(), p.Console())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

func (p *Page) record(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		p.console = append(p.console, string(ev.Type)+": "+strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		p.exceptions = append(p.exceptions, fmt.Sprintf("%s (line %d)", msg, d.LineNumber))
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, ev.Request.URL)
	case *page.EventJavascriptDialogOpening:
		p.dialogs = append(p.dialogs, string(ev.Type)+": "+ev.Message)
		// A dialog blocks the page until answered: dismiss it (not from
		// this event loop, which must not run commands) so the test fails
		// on the recorded dialog instead of hanging.
		go func() {
			_, _ = chromedp.Call(p.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *log.EventEntryAdded:
		p.logs = append(p.logs, string(ev.Entry.Level)+": "+ev.Entry.Text)
	}
}

func (p *Page) snapshot(l *[]string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), (*l)...)
}

// Console returns every console call ("error: ...", "log: ...").
func (p *Page) Console() []string { return p.snapshot(&p.console) }

// Exceptions returns every uncaught JavaScript exception.
func (p *Page) Exceptions() []string { return p.snapshot(&p.exceptions) }

// Requests returns the URL of every request the page made, the page's own
// file:// load included.
func (p *Page) Requests() []string { return p.snapshot(&p.requests) }

// ForeignRequests returns the requests other than the page itself and
// inline data: URLs: for a self-contained report, none.
func (p *Page) ForeignRequests() []string {
	var out []string
	for _, r := range p.Requests() {
		if r != p.URL && !strings.HasPrefix(r, "data:") {
			out = append(out, r)
		}
	}
	return out
}

// Dialogs returns every alert, confirm or prompt the page opened.
func (p *Page) Dialogs() []string { return p.snapshot(&p.dialogs) }

// Logs returns the browser's log entries (CSP violations, failed loads).
func (p *Page) Logs() []string { return p.snapshot(&p.logs) }

// Eval evaluates a JavaScript expression and decodes its JSON value.
func Eval[T any](t testing.TB, p *Page, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Click clicks at viewport coordinates.
func (p *Page) Click(t testing.TB, x, y float64) {
	t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.MouseClickXY(x, y)); err != nil {
		t.Fatalf("click at %.0f,%.0f: %v", x, y, err)
	}
}

// Type clears the input with the given id and types text into it, key by
// key, as a user would.
func (p *Page) Type(t testing.TB, id, text string) {
	t.Helper()
	clear := `(function () { var el = document.getElementById(` + strconv.Quote(id) + `); el.value = ""; el.focus(); return true })()`
	if _, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](clear)); err != nil {
		t.Fatalf("clear #%s: %v", id, err)
	}
	if err := chromedp.Do(p.ctx, chromedp.SendKeys(chromedp.ID(id), text)); err != nil {
		t.Fatalf("type into #%s: %v", id, err)
	}
}

// Screenshot saves a PNG of the whole page under dir (created), named
// after the test, and returns its path: a test artifact to look at.
func (p *Page) Screenshot(t testing.TB, dir string) string {
	t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".png"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
