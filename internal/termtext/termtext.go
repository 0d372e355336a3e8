// Package termtext makes text read from a target safe to print on a
// terminal. It is a leaf: the report writers, the CLI and the live view
// (internal/top) all escape through it, and none needs another's package
// for it.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe says whether r must not reach a reader as it is: a control
// character (escape sequences could rewrite the user's screen), a line or
// paragraph separator (a new line where none is shown), or a bidirectional
// control (U+202E and its kin reorder what is shown after them, so a
// thread name could display as another). Every sink of text from the
// target (terminal, Prometheus label) decides by this one rule.
func Unsafe(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// Safe makes text from the target safe to print: unsafe runes (Unsafe)
// are shown escaped, invalid UTF-8 as U+FFFD.
func Safe(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || Unsafe(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteRune('\uFFFD')
		case Unsafe(r):
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
