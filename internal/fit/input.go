package fit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/pkg/usl"
)

// Limits of the input, so that a wrong file fails fast instead of filling
// memory.
const (
	maxLine   = 64 << 10
	maxPoints = 1_000_000
	// quoteMax bounds how much of a bad line an error message repeats.
	quoteMax = 60
)

// ReadFile reads the points of the file at path; its errors name the path.
func ReadFile(path string) ([]usl.Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open measurements: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file of measurements", path)
	}
	return ReadPoints(f, path)
}

// ReadPoints parses lines of "concurrency, throughput". Fields are
// separated by commas, semicolons, tabs or spaces; # starts a comment; the
// first line that is not blank or a comment may be a header (no field is a
// number). Every error starts with name and the line.
func ReadPoints(r io.Reader, name string) ([]usl.Point, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var pts []usl.Point
	line, seenContent := 0, false
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF") // a byte-order mark from spreadsheets
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.FieldsFunc(text, func(r rune) bool {
			return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f'
		})
		if len(fields) == 0 {
			continue
		}
		first := !seenContent
		seenContent = true
		if first && isHeader(fields) {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want two fields, concurrency and throughput; got %d in %s", name, line, len(fields), quote(text))
		}
		n, err := parseMeasure(fields[0], "concurrency")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		x, err := parseMeasure(fields[1], "throughput")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if len(pts) == maxPoints {
			return nil, fmt.Errorf("%s:%d: more than %d measurements", name, line, maxPoints)
		}
		pts = append(pts, usl.Point{N: n, Throughput: x})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d KiB: not a file of measurements", name, line+1, maxLine>>10)
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no measurements (want lines of concurrency,throughput)", name)
	}
	return pts, nil
}

// isHeader: a line none of whose fields is a number.
func isHeader(fields []string) bool {
	for _, f := range fields {
		if _, err := strconv.ParseFloat(f, 64); err == nil {
			return false
		}
	}
	return true
}

// parseMeasure reads a positive, finite number.
func parseMeasure(field, what string) (float64, error) {
	v, err := strconv.ParseFloat(field, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s is not a number", what, quote(field))
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s must be a positive number, got %s", what, quote(field))
	}
	return v, nil
}

// quote renders part of the input for an error message: bounded, and
// quoted so that control characters cannot reach the terminal.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > quoteMax {
		cut := quoteMax
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
