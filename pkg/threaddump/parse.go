package threaddump

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unsafe"
)

// Errors callers can act on.
var (
	// ErrNoThreadDump means the input holds no thread dump ctprof knows.
	ErrNoThreadDump = errors.New("no thread dump found")
	// ErrUnsupportedFormat means the input is a thread dump of a kind
	// ctprof does not read (JRockit, Android, Go, ...). It is reported
	// rather than guessed at, so a wrong answer is never given.
	ErrUnsupportedFormat = errors.New("thread dump format not supported")
)

// maxDecompressed bounds gzip input held whole (ParseString, ParseBytes) so
// a hostile file cannot exhaust memory: no more than one dump can be. Parse
// and Reader stream instead.
const maxDecompressed = MaxDumpBytes

// Parse reads every thread dump in r: one dump, a series of dumps (each with
// its own timestamp), or dumps embedded in a log. Gzip, UTF-16 with a byte
// order mark and CRLF line endings are handled. It reads through a Reader,
// so binary data and oversized dumps are refused (ErrBinary,
// ErrDumpTooLarge); the Reader's own warnings (skipped lines, a cut gzip
// stream) are added to the first dump's. To hold one dump at a time, use
// NewReader.
func Parse(r io.Reader) ([]*Dump, error) {
	sr := NewReader(r)
	var dumps []*Dump
	for {
		d, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		dumps = append(dumps, d)
	}
	dumps[0].Warnings = append(dumps[0].Warnings, sr.Warnings()...)
	return dumps, nil
}

// ParseBytes is Parse on a byte slice. It copies b, so the caller may reuse it.
func ParseBytes(b []byte) ([]*Dump, error) {
	return ParseString(string(b))
}

// ParseOwnedBytes is ParseBytes without the copy: the returned model shares
// memory with b (its strings point into it), so b must never change
// afterwards. For a caller that owns b and keeps it read-only, such as a
// dump just read from a JVM: a 10,000-thread dump is some 16 MB.
func ParseOwnedBytes(b []byte) ([]*Dump, error) {
	return ParseString(unsafe.String(unsafe.SliceData(b), len(b)))
}

// ParseString is Parse on a string. The returned model shares memory with s.
func ParseString(s string) ([]*Dump, error) {
	text, err := decodeString(s)
	if err != nil {
		return nil, err
	}
	return parseText(text)
}

// decodeString undoes compression and non-UTF-8 encodings.
func decodeString(s string) (string, error) {
	if len(s) >= 2 && s[0] == 0x1f && s[1] == 0x8b {
		zr, err := gzip.NewReader(strings.NewReader(s))
		if err != nil {
			return "", fmt.Errorf("read gzip thread dump: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxDecompressed+1))
		if err != nil && len(b) == 0 {
			return "", fmt.Errorf("read gzip thread dump: %w", err)
		}
		if len(b) > maxDecompressed {
			return "", fmt.Errorf("%w: the gzip data inflates to over %d MB; use Parse or NewReader to stream it", ErrDumpTooLarge, maxDecompressed>>20)
		}
		// A truncated gzip still yields what it holds; the parser then
		// warns about a truncated dump.
		return decodeString(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	switch {
	case strings.HasPrefix(s, "\xef\xbb\xbf"):
		return s[3:], nil
	case strings.HasPrefix(s, "\xff\xfe"):
		return decodeUTF16(s[2:], false), nil
	case strings.HasPrefix(s, "\xfe\xff"):
		return decodeUTF16(s[2:], true), nil
	}
	// UTF-16 without a BOM (PowerShell redirection sometimes): ASCII text
	// has a zero in every other byte.
	if len(s) >= 64 && looksUTF16(s) {
		return decodeUTF16(s, s[0] == 0), nil
	}
	return s, nil
}

func looksUTF16(s string) bool {
	n := 64
	zeroEven, zeroOdd := 0, 0
	for i := 0; i < n; i++ {
		if s[i] == 0 {
			if i%2 == 0 {
				zeroEven++
			} else {
				zeroOdd++
			}
		}
	}
	return zeroEven > n/2-4 && zeroOdd == 0 || zeroOdd > n/2-4 && zeroEven == 0
}

func decodeUTF16(s string, bigEndian bool) string {
	u := make([]uint16, len(s)/2)
	for i := range u {
		if bigEndian {
			u[i] = uint16(s[2*i])<<8 | uint16(s[2*i+1])
		} else {
			u[i] = uint16(s[2*i+1])<<8 | uint16(s[2*i])
		}
	}
	var b bytes.Buffer
	b.Grow(len(u))
	for _, r := range utf16.Decode(u) {
		b.WriteRune(r)
	}
	return b.String()
}

// parseText detects the format and runs its parser.
func parseText(text string) ([]*Dump, error) {
	head := text
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	var dumps []*Dump
	var err error
	switch {
	case looksLikeThreadDumpJSON(head):
		dumps, err = parseThreadDumpJSON([]byte(text))
	case looksLikeJavacore(head):
		dumps, err = parseJavacore(text)
	case looksLikeThreadDumpText(head):
		dumps, err = parseThreadDumpText(text)
	default:
		if f := foreignFormat(head); f != "" {
			return nil, fmt.Errorf("%w: this looks like %s", ErrUnsupportedFormat, f)
		}
		dumps = parseHotSpot(text)
	}
	if err != nil {
		return nil, err
	}
	if len(dumps) == 0 {
		if f := foreignFormat(text); f != "" {
			return nil, fmt.Errorf("%w: this looks like %s", ErrUnsupportedFormat, f)
		}
		return nil, ErrNoThreadDump
	}
	return dumps, nil
}

// foreignFormat names thread dump formats of other runtimes, so that they get
// a clear refusal instead of an empty or wrong answer.
func foreignFormat(s string) string {
	switch {
	case strings.Contains(s, "===== FULL THREAD DUMP ===") || strings.Contains(s, "JRockit"):
		return "a JRockit thread dump"
	case strings.Contains(s, "DALVIK THREADS") || strings.Contains(s, "\n----- pid "):
		return "an Android ANR trace"
	case strings.HasPrefix(s, "goroutine ") || strings.Contains(s, "\ngoroutine 1 ["):
		return "a Go goroutine dump"
	case strings.Contains(s, "Thread 1 (Thread 0x") || strings.Contains(s, "\nThread 1 (LWP "):
		return "a gdb native backtrace"
	}
	return ""
}
