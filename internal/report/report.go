// Package report writes the Aggregator's results in the forms people read
// (text summary, the HTML report) and tools read (JSON, folded stacks,
// pprof, speedscope). It formats; it never computes statistics of its own.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/termtext"
)

// JSON writes the summary as indented JSON (schema in docs/json.md).
// encoding/json escapes <, > and & so the output is safe to embed in HTML.
func JSON(w io.Writer, s *analysis.Summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("write JSON summary: %w", err)
	}
	if err := writeIndented(w, b, "  "); err != nil {
		return fmt.Errorf("write JSON summary: %w", err)
	}
	return nil
}

// PrepareJSON has encoding/json work out how to encode a Summary (each
// struct type's fields, found by reflection once per process, for the
// Summary's dozens of types: encoding/json.typeFields in `perf record -g`
// of a JSON one-shot) without writing anything. A one-shot calls it while
// the JVM prints its threads, so that JSON's first use does not add that
// time after the dump.
func PrepareJSON() {
	_ = json.NewEncoder(io.Discard).Encode(&analysis.Summary{})
}

// Folded writes Brendan Gregg's collapsed-stack format, root frame first,
// one line per distinct stack: "a;b;c 12". flamegraph.pl, speedscope and
// inferno read it.
func Folded(w io.Writer, stacks []*analysis.FoldedStack) error {
	var b strings.Builder
	for _, s := range stacks {
		b.Reset()
		for i, f := range s.Frames {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(foldedFrame(f))
		}
		fmt.Fprintf(&b, " %d\n", s.Count)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return fmt.Errorf("write folded stacks: %w", err)
		}
	}
	return nil
}

// foldedFrame keeps a frame name from breaking the line format: ';'
// separates frames and a newline separates stacks.
func foldedFrame(f string) string {
	if !strings.ContainsAny(f, ";\n\r") {
		return f
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case ';':
			return ':'
		case '\n', '\r':
			return ' '
		}
		return r
	}, f)
}

// Terminal makes text from the target safe to print (termtext.Safe): the
// report's writers and the CLI's messages escape the same way.
var Terminal = termtext.Safe
