package cli

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Hostile input must not exhaust memory: each case runs the real binary as
// a child and reads its peak RSS from the kernel (rusage).
const maxRSS = 512 << 20

// runChild runs ctprof with stdin and returns its exit code, stdout, stderr
// and peak RSS in bytes.
func runChild(t *testing.T, stdin io.Reader, args ...string) (int, string, string, int64) {
	t.Helper()
	bin, err := buildCtprof()
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	werr := cmd.Wait()
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, werr)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("ctprof %s: exit %d, peak RSS %d MB", strings.Join(args, " "), code, rss>>20)
	return code, out.String(), errOut.String(), rss
}

func TestAnalyzeDevZeroFailsFast(t *testing.T) {
	start := time.Now()
	code, _, errOut, rss := runChild(t, nil, "analyze", "/dev/zero")
	assert.Equal(t, 1, code)
	assert.Equal(t, "ctprof: /dev/zero: not a thread dump (binary data)\n", errOut)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Less(t, rss, int64(maxRSS))
}

// A gzip bomb: 64 gzip members of 64 MB of zeros each, 4 GB in all, a few
// MB on disk.
func TestAnalyzeGzipBomb(t *testing.T) {
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	require.NoError(t, err)
	_, err = io.CopyN(zw, zeroes{}, 64<<20)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	path := filepath.Join(t.TempDir(), "bomb.gz")
	require.NoError(t, os.WriteFile(path, bytes.Repeat(member.Bytes(), 64), 0o644))
	code, _, errOut, rss := runChild(t, nil, "analyze", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a thread dump (binary data)")
	assert.Less(t, rss, int64(maxRSS))
}

// An endless stdout log: log lines, exception traces and a real dump,
// again and again. Memory stays bounded by one dump, and when the writer
// closes the pipe the summary counts every dump.
func TestAnalyzeEndlessLogStaysBounded(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join(sharedDumps(t), "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	require.NoError(t, err)
	var logBlock bytes.Buffer
	for i := 0; logBlock.Len() < 5<<20; i++ {
		fmt.Fprintf(&logBlock, "2026-11-23 12:00:00.%03d INFO  [http-nio-8080-exec-%d] c.e.Service request %d served in 12 ms\n", i%1000, i%200, i)
		if i%100 == 0 {
			logBlock.WriteString("java.lang.IllegalStateException: boom\n\tat com.example.Service.call(Service.java:42)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)\n")
		}
	}
	const total = 1500 << 20
	pr, pw := io.Pipe()
	written := make(chan int, 1)
	go func() {
		n, dumps := 0, 0
		for n < total {
			if _, err := pw.Write(logBlock.Bytes()); err != nil {
				break
			}
			if _, err := pw.Write(dump); err != nil {
				break
			}
			n += logBlock.Len() + len(dump)
			dumps++
		}
		pw.Close()
		written <- dumps
	}()
	code, out, errOut, rss := runChild(t, pr, "analyze", "--format", "json", "-")
	dumps := <-written
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Dumps     int `json:"dumps"`
		Deadlocks []struct {
			Dumps int `json:"dumps"`
		} `json:"deadlocks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Greater(t, dumps, 250)
	assert.Equal(t, dumps, doc.Dumps, "every dump in the stream is counted")
	require.NotEmpty(t, doc.Deadlocks)
	assert.Equal(t, dumps, doc.Deadlocks[0].Dumps, "the deadlock report after each trailer stays with its dump")
	assert.Less(t, rss, int64(maxRSS))
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// recordRun records a real run of 70 samples (a keyframe every 60) and
// returns the file and the offsets of its frames (the header's first).
func recordRun(t *testing.T) (string, []int) {
	t.Helper()
	p := testnative.Start(t, "mutex_contention", "3", "2", "2000")
	path := filepath.Join(t.TempDir(), "run.ctprof")
	code, _, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "70", "--interval", "10ms", "--record", path)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var starts []int
	for off := len("CTPROF-RECORDING\n") + 1; off+8 <= len(b); off += 8 + int(binary.LittleEndian.Uint32(b[off:])) {
		starts = append(starts, off)
	}
	require.Len(t, starts, 71)
	return path, starts
}

// A damaged recording (a flipped byte, an end cut short) still replays and
// exits 0, and every output says what was lost: the warning is the signal.
func TestReportDamagedRecordingSaysWhatWasLost(t *testing.T) {
	path, starts := recordRun(t)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[starts[5]+20] ^= 0xff                  // frame 4 (a delta): frames 4..59 are lost
	b = b[:starts[70]+(len(b)-starts[70])/2] // the last frame is cut
	require.NoError(t, os.WriteFile(path, b, 0o644))

	html := filepath.Join(t.TempDir(), "run.html")
	code, out, errOut := run(t, "", "report", "--format", "json", "--html", html, path)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Samples  int      `json:"samples"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	// 4 before the damage, the keyframe 60 and the 9 after it.
	assert.Equal(t, 4+10-1, doc.Samples)
	lost := fmt.Sprintf("57 frames damaged or cut off; the summary covers %d samples", doc.Samples)
	assert.Contains(t, doc.Warnings, path+": "+lost)
	joined := strings.Join(doc.Warnings, "\n")
	assert.Contains(t, joined, "checksum mismatch")
	assert.Contains(t, joined, "partial frame")
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), lost)

	code, text, _ := run(t, "", "report", path)
	require.Equal(t, 0, code)
	assert.Contains(t, text, lost)
}

// A frame that inflates to 1 GB is damage: skipped without being inflated,
// with the warning in the summary.
func TestReportCompressionBombFrame(t *testing.T) {
	path, starts := recordRun(t)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var body bytes.Buffer
	body.WriteByte('D')
	zw, err := flate.NewWriter(&body, flate.BestCompression)
	require.NoError(t, err)
	_, err = io.CopyN(zw, zeroes{}, 1<<30)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	var frame bytes.Buffer
	_ = binary.Write(&frame, binary.LittleEndian, uint32(body.Len()))
	_ = binary.Write(&frame, binary.LittleEndian, crc32.Checksum(body.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	frame.Write(body.Bytes())
	// After frame 2: the bomb and the deltas up to the keyframe are lost.
	bombed := append(append(append([]byte(nil), b[:starts[3]]...), frame.Bytes()...), b[starts[3]:]...)
	require.NoError(t, os.WriteFile(path, bombed, 0o644))

	code, out, errOut, rss := runChild(t, nil, "report", "--format", "json", path)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Samples  int      `json:"samples"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	joined := strings.Join(doc.Warnings, "\n")
	assert.Contains(t, joined, "decompresses to more than 192 MB")
	assert.Contains(t, joined, fmt.Sprintf("frames damaged or cut off; the summary covers %d samples", doc.Samples))
	assert.Equal(t, 2+10, doc.Samples)
	assert.Less(t, rss, int64(maxRSS))
}

// Streaming gives the summary the whole-input parser gave: a stdout log of
// 300 dumps among log lines, read both ways.
func TestAnalyzeStreamSameSummaryAsWholeInput(t *testing.T) {
	var log bytes.Buffer
	for i := range 300 {
		name := []string{"jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt", "jdk8-play-devmode-monitor-contention.txt", "jdk11-debian-4dumps-ycrash-testdata.txt"}[i%3]
		dump, err := os.ReadFile(filepath.Join(sharedDumps(t), name))
		require.NoError(t, err)
		fmt.Fprintf(&log, "12:00:%02d INFO [main] tick %d\njava.lang.RuntimeException: x\n\tat a.B.c(B.java:1)\n", i%60, i)
		log.Write(dump)
	}
	path := filepath.Join(t.TempDir(), "app.log")
	require.NoError(t, os.WriteFile(path, log.Bytes(), 0o644))

	whole := analysis.New()
	dumps, err := threaddump.ParseString(log.String())
	require.NoError(t, err)
	for _, d := range dumps {
		whole.Add(&snapshot.Snapshot{Time: d.Time, Source: path, Dump: d})
	}
	streamed := analysis.New()
	n, err := drainFile(nil, path, streamed)
	require.NoError(t, err)
	assert.Equal(t, len(dumps), n)
	assert.Equal(t, 300+300/3*3, n, "the ycrash file holds 4 dumps")
	a, err := json.Marshal(whole.Summary())
	require.NoError(t, err)
	b, err := json.Marshal(streamed.Summary())
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))
	assert.NotEmpty(t, streamed.Summary().Locks)
}
