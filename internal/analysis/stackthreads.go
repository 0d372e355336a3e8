package analysis

import (
	"strings"
	"unicode/utf8"

	"github.com/ctprof/ctprof/internal/termtext"
)

// The threads a stack's samples are counted by (StackLabel.Thread), so a
// profile can be filtered to one thread (pprof's "thread_name" label,
// OTLP's thread.name).

// OtherThreads is the thread name a stack counts its samples of threads
// under once it already names maxStackThreads threads. Every consumer
// (pprof, the OTLP delta) knows it by this constant.
const OtherThreads = "(other threads)"

// maxStackThreads bounds the distinct thread names one stack's labels
// hold. A stack that many threads share is an idle pool's (thousands of
// parked readers on a 10,000-thread server, a new name for every thread a
// churning pool starts on a long run): without a bound, the stack table
// and every pprof and OTLP profile would grow with the threads ever seen
// rather than with the stacks. 64 names every thread of most pools that
// share a stack (executors sized to the cores, connection pools, the
// fork-join pool) and keeps a stack at 65 names; the stack table's
// MaxStacks (20,000) times 65 is the worst case, most stacks have a few.
const maxStackThreads = 64

// maxThreadNameBytes bounds a thread's name in a label: a name is the
// target's (HotSpot prints up to a megabyte of it), and 64 copies of a
// long one per stack would cost what the whole table does. Prometheus
// labels are bounded alike (metrics.LabelValue).
const maxThreadNameBytes = 128

// threadName is the name the stack counts a sample of the thread named
// name under: the name made safe (threadLabel) while the stack names fewer
// than maxStackThreads threads or already names this one, OtherThreads
// after. "" (a thread without a name) stays "". The name returned is the
// stack's own copy, so a label never keeps a dump's text alive.
func (s *FoldedStack) threadName(name string) string {
	if name == "" {
		return ""
	}
	if len(name) <= maxThreadNameBytes {
		if n, ok := s.threads[name]; ok {
			return n // the common case: a name seen before, already safe
		}
	}
	name = threadLabel(name)
	if n, ok := s.threads[name]; ok {
		return n
	}
	if name == OtherThreads || len(s.threads) >= maxStackThreads {
		return OtherThreads
	}
	if s.threads == nil {
		s.threads = map[string]string{}
	}
	n := strings.Clone(name)
	s.threads[n] = n
	return n
}

// threadLabel makes a thread's name fit for a label: control characters
// escaped and invalid UTF-8 as U+FFFD (termtext.Safe: a name reaches
// terminals and profiling UIs), at most maxThreadNameBytes bytes, cut at a
// rune and ending in "…" when cut.
func threadLabel(name string) string {
	if len(name) <= maxThreadNameBytes && printableASCII(name) {
		return name
	}
	s := termtext.Safe(name)
	if len(s) <= maxThreadNameBytes {
		return s
	}
	const ellipsis = "…"
	cut := maxThreadNameBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// printableASCII reports whether s is printable ASCII only, which
// termtext.Safe would leave as it is.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
