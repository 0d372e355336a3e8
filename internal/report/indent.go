package report

import (
	"bufio"
	"io"
)

// writeIndented writes compact, valid JSON to w as encoding/json's
// Encoder with SetIndent("", indent) would, newline included, a chunk at a
// time: the Encoder indents into a second buffer of the whole output (50
// MB for the summary of a 10,000-thread JVM) before writing any of it.
func writeIndented(w io.Writer, compact []byte, indent string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	depth := 0
	needIndent := false // after '{' or '[': a newline comes before the next value
	newline := func() {
		bw.WriteByte('\n')
		for i := 0; i < depth; i++ {
			bw.WriteString(indent)
		}
	}
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			newline()
		}
		switch c {
		case '"':
			// A string, verbatim to its closing quote.
			j := i + 1
			for j < len(compact) && compact[j] != '"' {
				if compact[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(compact) {
				j = len(compact) - 1
			}
			bw.Write(compact[i : j+1])
			i = j
		case '{', '[':
			bw.WriteByte(c)
			needIndent = true
			depth++
		case ',':
			bw.WriteByte(c)
			newline()
		case ':':
			bw.WriteString(": ")
		case '}', ']':
			depth--
			if needIndent {
				needIndent = false // an empty object or array stays "{}"
			} else {
				newline()
			}
			bw.WriteByte(c)
		case ' ', '\t', '\n', '\r':
			// Not in compact JSON; encoding/json drops it too.
		default:
			bw.WriteByte(c)
		}
	}
	bw.WriteByte('\n')
	return bw.Flush()
}
