package top

import (
	"fmt"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/ctprof/ctprof/internal/termtext"
)

// clean makes a string from the target safe for the terminal: control
// characters (ESC among them), line breaks and bidi overrides are shown
// escaped, never sent. Every thread, class, pool and frame name passes here.
func clean(s string) string { return termtext.Safe(s) }

// fit escapes s and cuts or pads it to exactly w terminal cells; a cut
// string ends with "…". Widths count cells, so wide (CJK, emoji) names
// keep the columns aligned.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = clean(s)
	if runewidth.StringWidth(s) > w {
		s = runewidth.Truncate(s, w, "…")
	}
	return runewidth.FillRight(s, w)
}

// fitRight is fit aligned to the right, for numbers.
func fitRight(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = clean(s)
	if runewidth.StringWidth(s) > w {
		s = runewidth.Truncate(s, w, "…")
	}
	return runewidth.FillLeft(s, w)
}

// line cuts an already escaped line to w cells (no padding).
func line(s string, w int) string {
	if runewidth.StringWidth(s) > w {
		return runewidth.Truncate(s, w, "…")
	}
	return s
}

// column is one column of a table: a fixed width, or a share of what the
// fixed columns leave (weight > 0).
type column struct {
	title  string
	width  int
	weight int
	min    int
	right  bool
}

// layout gives every column its width for a table total cells wide (one
// space between columns, one cell for the selection marker).
func layout(cols []column, total int) []int {
	widths := make([]int, len(cols))
	rest := total - 1 - (len(cols) - 1)
	weights := 0
	for i, c := range cols {
		if c.weight == 0 {
			widths[i] = c.width
			rest -= c.width
		} else {
			weights += c.weight
		}
	}
	if weights == 0 {
		return widths
	}
	left := rest
	last := -1
	for i, c := range cols {
		if c.weight == 0 {
			continue
		}
		w := 0
		if rest > 0 {
			w = rest * c.weight / weights
		}
		if w < c.min {
			w = c.min
		}
		widths[i] = w
		left -= w
		last = i
	}
	if left > 0 && last >= 0 {
		widths[last] += left
	}
	return widths
}

// row renders cells with the widths of layout, marker first.
func row(marker string, cols []column, widths []int, cells []string) string {
	var b strings.Builder
	b.WriteString(marker)
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := ""
		if i < len(cells) {
			v = cells[i]
		}
		if c.right {
			b.WriteString(fitRight(v, widths[i]))
		} else {
			b.WriteString(fit(v, widths[i]))
		}
	}
	return b.String()
}

// num prints a rate or count compactly: 1234 → "1234", 12345 → "12.3k".
func num(v float64) string {
	switch {
	case v >= 10e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 10e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// pct prints a share (0..1) as a percentage.
func pct(share float64) string {
	if share >= 0.995 || share == 0 {
		return fmt.Sprintf("%.0f%%", 100*share)
	}
	return fmt.Sprintf("%.1f%%", 100*share)
}

// uptime prints the seconds the run has lasted: 42s, 3m07s, 1h02m.
func uptime(sec float64) string {
	s := int64(sec)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	}
}
