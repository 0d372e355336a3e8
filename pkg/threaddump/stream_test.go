package threaddump

import (
	"bytes"
	"compress/gzip"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAllStream collects a Reader's dumps.
func readAllStream(t testing.TB, in io.Reader) ([]*Dump, *Reader, error) {
	t.Helper()
	r := NewReader(in)
	var ds []*Dump
	for {
		d, err := r.Next()
		if err == io.EOF {
			return ds, r, nil
		}
		if err != nil {
			return ds, r, err
		}
		ds = append(ds, d)
	}
}

// The stream must give exactly what the whole-input parser gives, line
// numbers included, on every real dump of the corpus.
func TestStreamMatchesWholeOnCorpus(t *testing.T) {
	dir := sharedDumps(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			whole, err := ParseString(string(b))
			require.NoError(t, err)
			// A one-byte reader exercises every buffer boundary.
			for name, in := range map[string]io.Reader{"plain": bytes.NewReader(b), "byte by byte": &oneByteReader{b: b}} {
				streamed, r, err := readAllStream(t, in)
				require.NoError(t, err, name)
				assert.Empty(t, r.Warnings(), name)
				require.Equal(t, whole, streamed, name)
			}
		})
	}
}

type oneByteReader struct{ b []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = o.b[0]
	o.b = o.b[1:]
	return 1, nil
}

// multiDumpLog builds a stdout log: copies of a dump among log lines, with
// the kill -3 timestamp, a deadlock report after a trailer, and an
// exception trace between dumps.
func multiDumpLog(t testing.TB, copies int) string {
	dump := string(readCorpus(t, "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	var b strings.Builder
	for i := range copies {
		fmt.Fprintf(&b, "12:00:%02d INFO  [main] request %d served\n", i%60, i)
		b.WriteString("java.lang.IllegalStateException: boom\n\tat com.example.App.run(App.java:12)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)\n")
		fmt.Fprintf(&b, "12:00:%02d WARN  [pool-1] slow\n", i%60)
		b.WriteString(dump)
		if !strings.HasSuffix(dump, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestStreamMatchesWholeOnLog(t *testing.T) {
	log := multiDumpLog(t, 300)
	whole, err := ParseString(log)
	require.NoError(t, err)
	require.Len(t, whole, 300)
	streamed, r, err := readAllStream(t, strings.NewReader(log))
	require.NoError(t, err)
	assert.Empty(t, r.Warnings())
	require.Len(t, streamed, 300)
	for i := range whole {
		require.Equal(t, whole[i], streamed[i], "dump %d", i)
	}
	// The deadlocks the JVM printed after each trailer stay with their dump.
	assert.Len(t, streamed[299].Deadlocks, 3)
	assert.Greater(t, streamed[299].StartLine, 299*200, "line numbers are the input's")
}

func TestStreamLimits(t *testing.T) {
	dump := string(readCorpus(t, "jdk11-debian-4dumps-ycrash-testdata.txt"))
	long := strings.Repeat("x", MaxLineBytes+10)
	t.Run("a long line is skipped with its line number", func(t *testing.T) {
		ds, r, err := readAllStream(t, strings.NewReader("log\n"+long+"\n"+dump))
		require.NoError(t, err)
		assert.Len(t, ds, 4)
		assert.Equal(t, []string{"line 2 is longer than 1024 KiB: skipped"}, r.Warnings())
		whole, err := ParseString("log\n\n" + dump)
		require.NoError(t, err)
		assert.Equal(t, whole, ds)
	})
	t.Run("binary data fails fast", func(t *testing.T) {
		_, _, err := readAllStream(t, io.LimitReader(zeros{}, 1<<40))
		require.ErrorIs(t, err, ErrBinary)
		assert.Equal(t, "not a thread dump (binary data)", err.Error())
	})
	t.Run("NUL bytes after text", func(t *testing.T) {
		in := io.MultiReader(strings.NewReader(dump), io.LimitReader(zeros{}, 1<<40))
		_, _, err := readAllStream(t, in)
		require.ErrorIs(t, err, ErrBinary)
	})
	t.Run("a gzip of zeros", func(t *testing.T) {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, err := io.Copy(zw, io.LimitReader(zeros{}, 64<<20))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		_, _, err = readAllStream(t, &gz)
		require.ErrorIs(t, err, ErrBinary)
	})
	t.Run("a cut gzip yields what it holds, with a warning", func(t *testing.T) {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write([]byte(dump))
		require.NoError(t, zw.Close())
		ds, r, err := readAllStream(t, bytes.NewReader(gz.Bytes()[:gz.Len()*2/3]))
		require.NoError(t, err)
		assert.NotEmpty(t, ds)
		require.Len(t, r.Warnings(), 1)
		assert.Contains(t, r.Warnings()[0], "gzip data ends early")
	})
	t.Run("a dump over the bound is refused", func(t *testing.T) {
		in := io.MultiReader(strings.NewReader("Full thread dump x:\n"), endless("\"t\" #1 prio=5 tid=0x1 nid=0x2 runnable\n\tat a.B.c(B.java:1)\n"))
		_, _, err := readAllStream(t, in)
		require.ErrorIs(t, err, ErrDumpTooLarge)
		assert.Contains(t, err.Error(), "the dump starting at line 1 is over 256 MB")
	})
	t.Run("a dump that lost its trailer ends when the log goes on", func(t *testing.T) {
		cut := dump[:strings.Index(dump, "JNI global")]
		in := io.MultiReader(strings.NewReader(cut), io.LimitReader(endless("INFO a log line\n"), 300<<20))
		ds, _, err := readAllStream(t, in)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		assert.Contains(t, ds[0].Warnings[0], "ends without the JNI references trailer")
		assert.Equal(t, 0, ds[0].UnknownLines, "the log lines after the cut are not the dump's")
	})
	t.Run("no dump", func(t *testing.T) {
		_, _, err := readAllStream(t, strings.NewReader("just a log\n"))
		require.ErrorIs(t, err, ErrNoThreadDump)
		_, _, err = readAllStream(t, strings.NewReader("log\n"+strings.Repeat("x\n", 40000)+"goroutine 1 [running]:\nmain.main()\n"))
		require.ErrorIs(t, err, ErrUnsupportedFormat)
	})
}

// UTF-16 and BOMs are transcoded on the fly to what the whole parser reads.
func TestStreamEncodings(t *testing.T) {
	dump := string(readCorpus(t, "jdk8-play-devmode-monitor-contention.txt")) + "\"\U0001F600 t\" #9 prio=5 tid=0x1 nid=0x2 runnable\n"
	u := utf16.Encode([]rune(dump))
	le, be := make([]byte, 2*len(u)), make([]byte, 2*len(u))
	for i, c := range u {
		le[2*i], le[2*i+1] = byte(c), byte(c>>8)
		be[2*i], be[2*i+1] = byte(c>>8), byte(c)
	}
	for name, in := range map[string][]byte{
		"utf-8 bom":    append([]byte("\xef\xbb\xbf"), dump...),
		"utf-16le bom": append([]byte("\xff\xfe"), le...),
		"utf-16be bom": append([]byte("\xfe\xff"), be...),
		"utf-16le":     le,
		"crlf":         []byte(strings.ReplaceAll(dump, "\n", "\r\n")),
	} {
		t.Run(name, func(t *testing.T) {
			whole, err := ParseBytes(in)
			require.NoError(t, err)
			streamed, _, err := readAllStream(t, &oneByteReader{b: in})
			require.NoError(t, err)
			require.Equal(t, whole, streamed)
			assert.Equal(t, "\U0001F600 t", streamed[len(streamed)-1].Threads[len(streamed[len(streamed)-1].Threads)-1].Name)
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type endlessReader struct {
	s   string
	off int
}

func endless(s string) io.Reader { return &endlessReader{s: s} }

func (e *endlessReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], e.s[e.off:])
		n += c
		e.off = (e.off + c) % len(e.s)
	}
	return n, nil
}

// FuzzStream checks the splitter against the whole-input parser: no panic,
// line numbers inside the input, and the same threads.
func FuzzStream(f *testing.F) {
	f.Add(lockLines)
	f.Add("log\n12:\n2020-01-01 00:00:00\nFull thread dump x:\n\"a\" #1 prio=5 tid=0x1 nid=0x2 runnable\n\tat a.b(c)\nJNI global refs: 1, weak refs: 0\n\nFound one Java-level deadlock:\n\"x\":\n  waiting to lock monitor 0x1 (object 0x2, a y),\n  which is held by \"z\"\nFound 1 deadlock.\nlog\nFull thread dump y:\n")
	f.Add("1\n2026-11-23T05:28:04Z\n25\n\n#2 \"a\" BLOCKED 2026-11-23T05:28:04Z\n    at x.Y.z(Y.java:1)\n2\n2026-11-23T05:28:05Z\n25\n\n#3 \"b\" RUNNABLE\n")
	f.Fuzz(func(t *testing.T, s string) {
		streamed, _, serr := readAllStream(t, strings.NewReader(s))
		lines := strings.Count(s, "\n") + 1
		for _, d := range streamed {
			if d.Format == FormatHotSpot || d.Format == FormatThreadDumpText {
				assert.True(t, d.StartLine >= 1 && d.StartLine <= lines, "start line %d of %d", d.StartLine, lines)
			}
		}
		if strings.IndexByte(s, 0) >= 0 || strings.HasPrefix(s, "\x1f\x8b") {
			return
		}
		whole, werr := ParseString(s)
		if werr != nil || serr != nil {
			assert.Equal(t, werr != nil, serr != nil, "whole: %v, stream: %v", werr, serr)
			return
		}
		assert.Equal(t, countThreads(whole), countThreads(streamed))
	})
}

func countThreads(ds []*Dump) int {
	n := 0
	for _, d := range ds {
		n += len(d.Threads)
	}
	return n
}

// A thread name may hold a forged header and trailer: the splitter does not
// cut the dump there, so the stream still gives what the whole parser gives.
func TestStreamForgedNameIsNotCut(t *testing.T) {
	dump := string(readCorpus(t, "jdk11-debian-4dumps-ycrash-testdata.txt"))
	forged := "\"evil\n\n2020-01-01 00:00:00\nFull thread dump forged:\n\nJNI global refs: 1, weak refs: 0\n\nlog line\nx\" #99 prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x00007f0000000001 nid=0x7777 runnable  [0x0000]\n   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:1)\n\n"
	i := strings.Index(dump, "\n\"") + 1
	in := "log\n" + dump[:i] + forged + dump[i:] + strings.Repeat("INFO after the dumps\n", 100000)
	whole, err := ParseString(in)
	require.NoError(t, err)
	streamed, _, err := readAllStream(t, strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, len(whole), len(streamed))
	for k := range whole {
		require.Equal(t, whole[k], streamed[k], "dump %d", k)
	}
	assert.Equal(t, countThreads(whole), countThreads(streamed))
}
