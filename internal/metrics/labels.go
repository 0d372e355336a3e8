package metrics

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/termtext"
)

// maxLabelBytes bounds a label value taken from the target. Thread names,
// class names and frames are hostile input: a 64 KiB "thread name" must not
// become a 64 KiB series in every scrape and in Prometheus's index.
const maxLabelBytes = 128

// otherLabel names the series that sums everything outside the top K.
const otherLabel = "other"

// LabelValue makes s usable as a Prometheus label value: invalid UTF-8
// becomes U+FFFD (client_golang refuses invalid UTF-8), the runes
// termtext.Unsafe names (control characters, line separators and
// bidirectional controls) become spaces (the exposition format escapes only
// \n, \" and \\; a raw escape sequence or a right-to-left override would
// reach terminals and dashboards), and the result is
// cut at a rune boundary to at most maxLabelBytes bytes, ending in "…" when
// cut. Quoting for the exposition format is client_golang's job.
func LabelValue(s string) string {
	clean := len(s) <= maxLabelBytes && utf8.ValidString(s)
	if clean {
		for _, r := range s {
			if termtext.Unsafe(r) {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	const ellipsis = "…"
	var b strings.Builder
	b.Grow(min(len(s), maxLabelBytes))
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			r = '\uFFFD'
		}
		if termtext.Unsafe(r) {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > maxLabelBytes {
			// Too long: drop runes until the ellipsis fits.
			out := b.String()
			for len(out)+len(ellipsis) > maxLabelBytes {
				_, size := utf8.DecodeLastRuneInString(out)
				out = out[:len(out)-size]
			}
			return out + ellipsis
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lockLabel names a lock for the lock label: its kind and the short class
// name of a Java lock ("monitor SyncSingleton"), or the symbol of a futex
// ("futex contended_mutex"), never an address.
func lockLabel(l *analysis.LockSummary) string {
	kind := l.Kind
	if kind == "" {
		kind = "lock"
	}
	name := l.Class
	if l.Kind != "futex" {
		name = shortClass(name)
	} else {
		name = futexLabel(name)
	}
	if name == "" {
		name = "(unknown)"
	}
	return LabelValue(kind + " " + name)
}

// siteLabel is where threads wait for the lock: the waiters' most common
// frame; empty when unknown (futexes: a /proc sample has no stack).
func siteLabel(l *analysis.LockSummary) string {
	if l.WaitFrame == nil {
		return ""
	}
	return LabelValue(*l.WaitFrame)
}

// stackTID is the thread id in a futex's name on a thread's stack.
var stackTID = regexp.MustCompile(`^\[stack:[0-9]+\]`)

// futexLabel is a futex's stable name (analysis' class for it) as a
// label: a futex on a thread's stack ("[stack:4242]+0x1f40") loses the
// thread's id, which a new thread, or the next run, changes: a label
// must name the same lock from scrape to scrape and restart to restart.
func futexLabel(name string) string {
	return stackTID.ReplaceAllLiteralString(name, "[stack]")
}

// shortClass drops the package of a Java class name: "java.lang.Object" →
// "Object". Inner classes keep their outer class ("Outer$Inner").
func shortClass(c string) string {
	if i := strings.LastIndexByte(c, '.'); i >= 0 && i < len(c)-1 {
		return c[i+1:]
	}
	return c
}
