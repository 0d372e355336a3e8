package record

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// takeSnapshots samples a real process n times.
func takeSnapshots(t testing.TB, pid, n int) []*snapshot.Snapshot {
	t.Helper()
	s, err := sample.NewSampler(sample.Options{PID: pid, Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	var out []*snapshot.Snapshot
	for i := 0; i < n; i++ {
		snap, err := s.Take(context.Background())
		require.NoError(t, err)
		out = append(out, snap)
		time.Sleep(20 * time.Millisecond)
	}
	return out
}

func writeAll(t testing.TB, path string, snaps []*snapshot.Snapshot) {
	t.Helper()
	w, err := Create(path, Header{Version: "test", Start: time.Unix(1700000000, 0).UTC(), Target: snaps[0].Target, Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	for _, s := range snaps {
		require.NoError(t, w.Append(s))
	}
	require.NoError(t, w.Close())
}

func readAll(t testing.TB, path string) ([]*snapshot.Snapshot, *Reader) {
	t.Helper()
	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()
	var out []*snapshot.Snapshot
	for {
		s, err := r.Next()
		if err == io.EOF {
			return out, r
		}
		require.NoError(t, err)
		out = append(out, s)
	}
}

// Every field of snapshots of real processes survives the round trip,
// across keyframes and delta frames.
func TestRoundTripRealProcesses(t *testing.T) {
	mutex := testnative.Start(t, "mutex_contention", "3", "2", "2000")
	server := testnative.Start(t, "tcp_server", "2")
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", server.Value("PORT")))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
	churn := testnative.Start(t, "thread_churn")
	for _, p := range []*testnative.Process{mutex, server, churn} {
		t.Run(p.Name, func(t *testing.T) {
			snaps := takeSnapshots(t, p.PID, KeyframeEvery+5) // a keyframe, deltas, a keyframe
			path := filepath.Join(t.TempDir(), "run.ctprof")
			writeAll(t, path, snaps)
			got, r := readAll(t, path)
			assert.Empty(t, r.Warnings())
			require.Len(t, got, len(snaps))
			for i := range snaps {
				want := *snaps[i]
				want.Time = want.Time.Round(0) // monotonic clock readings are not recorded
				// Stack pointers and program counters are recorded since
				// format 9 (the native wait rule tells waits on one word
				// apart by them).
				assert.Equal(t, want, *got[i], "snapshot %d", i)
			}
			assert.Equal(t, snaps[0].Target, r.Header().Target)
		})
	}
}

func TestRoundTripJVMDump(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "4")
	text := p.ThreadPrint(t)
	dumps, err := threaddump.ParseBytes(text)
	require.NoError(t, err)
	snap := takeSnapshots(t, p.PID, 1)[0]
	snap.DumpText, snap.Dump = text, dumps[0]
	snap.DumpCost = &snapshot.DumpCost{Method: "attach", Wall: 12 * time.Millisecond, Pause: 300 * time.Microsecond}
	snap.JVM = &snapshot.JVMCounters{LiveThreads: 11, Safepoints: 3, SafepointTime: time.Millisecond, Sync: map[string]int64{"Parks": 5}}
	path := filepath.Join(t.TempDir(), "jvm.ctprof")
	writeAll(t, path, []*snapshot.Snapshot{snap})
	got, _ := readAll(t, path)
	require.Len(t, got, 1)
	assert.Equal(t, text, got[0].DumpText)
	require.NotNil(t, got[0].Dump, "the dump is parsed again on replay")
	assert.Equal(t, len(dumps[0].Threads), len(got[0].Dump.Threads))
	assert.Equal(t, snap.DumpCost, got[0].DumpCost)
	assert.Equal(t, snap.JVM, got[0].JVM)
}

// A replay gives the same summary as the live run.
func TestReplayedSummaryEqualsLive(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "2", "3000")
	snaps := takeSnapshots(t, p.PID, 20)
	live := analysis.New()
	for _, s := range snaps {
		live.Add(s)
	}
	path := filepath.Join(t.TempDir(), "run.ctprof")
	writeAll(t, path, snaps)
	got, _ := readAll(t, path)
	replay := analysis.New()
	for _, s := range got {
		replay.Add(s)
	}
	a, err := json.Marshal(live.Summary())
	require.NoError(t, err)
	b, err := json.Marshal(replay.Summary())
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))
}

// A run killed mid-write leaves a partial frame: every complete frame
// replays, and the warning says where it was cut.
func TestTruncatedRecording(t *testing.T) {
	p := testnative.Start(t, "many_threads", "20")
	snaps := takeSnapshots(t, p.PID, 6)
	path := filepath.Join(t.TempDir(), "run.ctprof")
	writeAll(t, path, snaps)
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	// Offsets of the frame boundaries: replay frame by frame.
	_, r := readAll(t, path)
	require.Empty(t, r.Warnings())
	lastStart := frameStarts(t, full)
	for _, cut := range []int{1, 3, 7, 9, 50, (len(full) - lastStart) / 2, len(full) - lastStart - 1} {
		cutAt := lastStart + cut
		if cutAt >= len(full) {
			continue
		}
		trunc := filepath.Join(t.TempDir(), "cut.ctprof")
		require.NoError(t, os.WriteFile(trunc, full[:cutAt], 0o644))
		got, r := readAll(t, trunc)
		assert.Len(t, got, len(snaps)-1, "cut %d bytes into the last frame", cut)
		require.Len(t, r.Warnings(), 2)
		assert.Contains(t, r.Warnings()[0], "partial frame")
		assert.Contains(t, r.Warnings()[0], "5 samples replayed")
		assert.Equal(t, "1 frame damaged or cut off; the summary covers 5 samples", r.Warnings()[1])
		assert.Equal(t, 1, r.Lost())
	}
}

// frameStarts returns where the last frame begins.
func frameStarts(t *testing.T, b []byte) int {
	t.Helper()
	off := len(Magic) + 1
	last := off
	for off < len(b) {
		last = off
		length := int(b[off]) | int(b[off+1])<<8 | int(b[off+2])<<16 | int(b[off+3])<<24
		off += frameOverhead + length
	}
	return last
}

func TestDamagedRecording(t *testing.T) {
	p := testnative.Start(t, "many_threads", "20")
	snaps := takeSnapshots(t, p.PID, 6)
	path := filepath.Join(t.TempDir(), "run.ctprof")
	writeAll(t, path, snaps)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)*2/3] ^= 0xff // in the middle of a later frame
	require.NoError(t, os.WriteFile(path, b, 0o644))
	got, r := readAll(t, path)
	assert.NotEmpty(t, got, "what came before the damage is kept")
	assert.Less(t, len(got), len(snaps))
	require.Len(t, r.Warnings(), 2)
	assert.Contains(t, r.Warnings()[0], "damaged")
	assert.Equal(t, fmt.Sprintf("%s damaged or cut off; the summary covers %d samples", plural(len(snaps)-len(got), "frame"), len(got)), r.Warnings()[1])
}

// Damage is local: a damaged frame costs the samples up to the next
// keyframe, and the replay goes on after it.
func TestDamageSkipsToNextKeyframe(t *testing.T) {
	p := testnative.Start(t, "many_threads", "4")
	snaps := takeSnapshots(t, p.PID, 2)
	path := filepath.Join(t.TempDir(), "run.ctprof")
	w, err := Create(path, Header{Version: "test"})
	require.NoError(t, err)
	const n = KeyframeEvery + 10
	for i := range n {
		require.NoError(t, w.Append(snaps[i%2]))
	}
	require.NoError(t, w.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	// Flip a byte inside the third frame's payload (frame 0 is the header).
	starts := allFrameStarts(b)
	require.Len(t, starts, n+1)
	b[starts[3]+frameOverhead+3] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))
	got, r := readAll(t, path)
	// Frames 0 and 1 replay; 2 .. 59 are lost; the keyframe 60 and the
	// rest replay.
	assert.Len(t, got, n-(KeyframeEvery-2))
	assert.Equal(t, KeyframeEvery-2, r.Lost())
	w0 := r.Warnings()
	require.Len(t, w0, 2)
	assert.Contains(t, w0[0], "checksum mismatch")
	assert.Equal(t, fmt.Sprintf("58 frames damaged or cut off; the summary covers %d samples", n-58), w0[1])
}

// A frame that inflates past any snapshot is skipped without being
// inflated whole (the memory bound is measured in internal/cli).
func TestCompressionBombFrame(t *testing.T) {
	p := testnative.Start(t, "many_threads", "4")
	snaps := takeSnapshots(t, p.PID, 1)
	path := filepath.Join(t.TempDir(), "run.ctprof")
	w, err := Create(path, Header{Version: "test"})
	require.NoError(t, err)
	require.NoError(t, w.Append(snaps[0]))
	require.NoError(t, w.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, writeBombFrame(f, frameKey, maxPayload+1<<20))
	require.NoError(t, f.Close())
	w2, err := os.ReadFile(path)
	require.NoError(t, err)
	// A good keyframe after the bomb still replays.
	w, err = Create(path+".2", Header{Version: "test"})
	require.NoError(t, err)
	require.NoError(t, w.Append(snaps[0]))
	require.NoError(t, w.Close())
	tail, err := os.ReadFile(path + ".2")
	require.NoError(t, err)
	hs := allFrameStarts(tail)
	require.NoError(t, os.WriteFile(path, append(w2, tail[hs[1]:]...), 0o644))
	got, r := readAll(t, path)
	assert.Len(t, got, 2)
	require.Len(t, r.Warnings(), 2)
	assert.Contains(t, r.Warnings()[0], "decompresses to more than 192 MB")
	assert.Equal(t, "1 frame damaged or cut off; the summary covers 2 samples", r.Warnings()[1])
}

// allFrameStarts returns the offset of every frame, the header's first.
func allFrameStarts(b []byte) []int {
	var starts []int
	off := len(Magic) + 1
	for off+frameOverhead <= len(b) {
		starts = append(starts, off)
		length := int(b[off]) | int(b[off+1])<<8 | int(b[off+2])<<16 | int(b[off+3])<<24
		off += frameOverhead + length
	}
	return starts
}

func TestNotARecording(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"empty":  nil,
		"text":   []byte("Full thread dump OpenJDK\n"),
		"future": append([]byte(Magic), FormatVersion+1),
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, content, 0o644))
		_, err := Open(path)
		require.Error(t, err, name)
		if name == "future" {
			assert.True(t, errors.Is(err, ErrNewerFormat), "%v", err)
			assert.Contains(t, err.Error(), "use a newer ctprof")
		} else {
			assert.True(t, errors.Is(err, ErrNotRecording), "%v", err)
		}
	}
	_, err := Create(filepath.Join(dir, "text"), Header{})
	assert.ErrorContains(t, err, "exists", "an existing file is not overwritten")
}

// A full disk: the write fails, the file keeps its complete frames, and
// further appends fail too.
func TestDiskFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.ctprof")
	w, err := Create(path, Header{Version: "test"})
	require.NoError(t, err)
	snap := &snapshot.Snapshot{Time: time.Unix(1, 0), Errors: []string{"x"}}
	require.NoError(t, w.Append(snap))
	good := w.size
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	require.NoError(t, err)
	real := w.f
	w.f = full
	err = w.Append(snap)
	assert.ErrorContains(t, err, "no space left")
	assert.Error(t, w.Append(snap), "the writer stays failed")
	full.Close()
	w.f = real
	require.NoError(t, w.f.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, good, st.Size())
	got, r := readAll(t, path)
	assert.Len(t, got, 1)
	assert.Empty(t, r.Warnings())
}

func FuzzReader(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed")
	w, err := Create(path, Header{Version: "seed"})
	require.NoError(f, err)
	require.NoError(f, w.Append(&snapshot.Snapshot{Time: time.Unix(5, 0), Threads: []snapshot.OSThread{{TID: 1, Name: "a", State: 'S'}}, Errors: []string{"e"}}))
	require.NoError(f, w.Append(&snapshot.Snapshot{Time: time.Unix(6, 0), Threads: []snapshot.OSThread{{TID: 1, Name: "a", State: 'R', Voluntary: 3}}}))
	require.NoError(f, w.Close())
	seed, err := os.ReadFile(path)
	require.NoError(f, err)
	f.Add(seed)
	// In memory, not through a file per input: the fuzzer's minimizer
	// runs tens of thousands of inputs, and a temp dir and file each
	// made it stall for tens of seconds (0 execs/sec).
	f.Fuzz(func(t *testing.T, b []byte) { replayBytes(b) })
}

// replayBytes reads a recording held in memory to its end (at most 1,000
// snapshots), as Open and Next read a file.
func replayBytes(b []byte) {
	r, err := NewReader(io.NopCloser(bytes.NewReader(b)), "fuzz", int64(len(b)))
	if err != nil {
		return
	}
	defer r.Close()
	for i := 0; i < 1000; i++ {
		if _, err := r.Next(); err != nil {
			return
		}
	}
}

// The inputs the fuzzer's minimizer runs by the ten thousand (a real
// recording with bytes cut out, so frame lengths point past the end)
// each cost a 1 MB read buffer and a 1 MB frame buffer, zeroed, plus a
// 64 KB piece and a 32 KB inflate window per frame: about 1 ms each, so
// minimizing one input stalled the fuzzer for 30 s and more. Opening
// must cost what the file holds, not the largest frame it could hold.
func TestSmallDamagedRecordingsCostLittle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed")
	w, err := Create(path, Header{Version: "seed"})
	require.NoError(t, err)
	require.NoError(t, w.Append(&snapshot.Snapshot{Time: time.Unix(5, 0), Threads: []snapshot.OSThread{{TID: 1, Name: "a", State: 'S'}}, Errors: []string{"e"}}))
	require.NoError(t, w.Append(&snapshot.Snapshot{Time: time.Unix(6, 0), Threads: []snapshot.OSThread{{TID: 1, Name: "a", State: 'R', Voluntary: 3}}}))
	require.NoError(t, w.Close())
	seed, err := os.ReadFile(path)
	require.NoError(t, err)
	inputs := [][]byte{seed}
	// The regression seeds the fuzzer keeps (one claims a 3 MB frame).
	corpus, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzReader", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, corpus, "regression seeds under testdata/fuzz/FuzzReader")
	for _, c := range corpus {
		b := fuzzSeed(t, c)
		inputs = append(inputs, b)
		// A file read from disk goes through Open as well.
		p := filepath.Join(t.TempDir(), filepath.Base(c))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		if r, err := Open(p); err == nil {
			for {
				if _, err := r.Next(); err != nil {
					break
				}
			}
			require.NoError(t, r.Close())
		}
	}
	// What the minimizer tries first: every byte of the seed cut out.
	for i := range seed {
		inputs = append(inputs, append(append([]byte{}, seed[:i]...), seed[i+1:]...))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for _, in := range inputs {
		replayBytes(in)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	perInput := (after.TotalAlloc - before.TotalAlloc) / uint64(len(inputs))
	t.Logf("%d inputs in %v, %d bytes allocated per input", len(inputs), took, perInput)
	assert.Less(t, perInput, uint64(128<<10), "bytes allocated to replay a file of a few hundred bytes")
	assert.Less(t, took, time.Second, "%d inputs of a few hundred bytes", len(inputs))
}

// fuzzSeed reads a corpus file of the form "go test fuzz v1\n[]byte(...)".
func fuzzSeed(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	head, lit, ok := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	require.True(t, ok && head == "go test fuzz v1", "%s: not a fuzz corpus file", path)
	lit, ok = strings.CutPrefix(lit, "[]byte(")
	require.True(t, ok, "%s: not a []byte seed", path)
	b, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	require.NoError(t, err, path)
	return []byte(b)
}

// BenchmarkRecording4000Threads records snapshots of a real 4,000-thread
// process with changing counters and reports the size per thread-sample and
// per hour at 1 Hz.
//
//	go test -run '^$' -bench Recording -benchtime 120x ./internal/record/
func BenchmarkRecording4000Threads(b *testing.B) {
	p := testnative.Start(b, "many_threads", "4000")
	base := takeSnapshots(b, p.PID, 1)[0]
	path := filepath.Join(b.TempDir(), "bench.ctprof")
	w, err := Create(path, Header{Version: "bench"})
	require.NoError(b, err)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := *base
		s.Time = base.Time.Add(time.Duration(i) * time.Second)
		s.Threads = append([]snapshot.OSThread(nil), base.Threads...)
		for k := range s.Threads {
			// Counters move as a busy process's would.
			s.Threads[k].Voluntary += uint64(i * (k%7 + 1))
			s.Threads[k].RunTime += time.Duration(i*(k%13)) * time.Microsecond
			s.Threads[k].RunQueueWait += time.Duration(i*(k%5)) * time.Microsecond
		}
		if err := w.Append(&s); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, w.Close())
	st, err := os.Stat(path)
	require.NoError(b, err)
	perSample := float64(st.Size()) / float64(b.N)
	b.ReportMetric(perSample/float64(len(base.Threads)), "bytes/thread-sample")
	b.ReportMetric(perSample*3600/1e6, "MB/hour@1Hz")

	start := time.Now()
	r, err := Open(path)
	require.NoError(b, err)
	n := 0
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	r.Close()
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n), "µs/decode")
	_ = strconv.Itoa
}

// writeBombFrame appends a well-formed frame whose payload is n zero bytes:
// a few hundred KB on disk.
func writeBombFrame(w io.Writer, typ byte, n int64) error {
	var body bytes.Buffer
	body.WriteByte(typ)
	zw, err := flate.NewWriter(&body, flate.BestCompression)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(zw, zeroReader{}, n); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var head [frameOverhead]byte
	binary.LittleEndian.PutUint32(head[0:], uint32(body.Len()))
	binary.LittleEndian.PutUint32(head[4:], crc32.Checksum(body.Bytes(), crcTable()))
	_, err = w.Write(append(head[:], body.Bytes()...))
	return err
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Format 2 records each futex wait's expected value and timeout; a
// version 1 file (without them) still replays, with those fields zero.
func TestFutexWaitFieldsAndVersion1(t *testing.T) {
	snap := &snapshot.Snapshot{
		Time:    time.Unix(7, 0),
		Threads: []snapshot.OSThread{{TID: 3, Name: "w", State: 'S'}},
		Futexes: []snapshot.FutexWait{{Address: 0x1000, Kind: "lock", Op: "FUTEX_WAIT_PRIVATE", TIDs: []int{3}, Value: 7, Timed: true}},
		Host:    &snapshot.Host{CPUs: 2, Load1: 1.5},
	}
	for _, version := range []byte{1, FormatVersion} {
		got, r := recordAtVersion(t, version, snap, snap)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, 2, "version %d", version)
		want := snap.Futexes[0]
		if version < 2 {
			want.Value, want.Timed = 0, false
		}
		for _, g := range got {
			require.Len(t, g.Futexes, 1)
			assert.Equal(t, want, g.Futexes[0], "version %d", version)
			assert.Equal(t, snap.Host, g.Host, "version %d: what follows the futexes decodes", version)
		}
	}
}

// Version 3 keeps the waits and GC pauses a JVM recorded (attach --jfr),
// so a replay feeds the Aggregator what the run did; a version 2 file
// reads without them.
func TestWaitEventsRoundTripAndVersion2(t *testing.T) {
	snap := &snapshot.Snapshot{
		Time: time.Unix(9, 0),
		Waits: []snapshot.WaitEvent{{
			Kind: "monitor", Event: "jdk.JavaMonitorEnter", Start: time.Unix(8, 5), Duration: 12 * time.Millisecond,
			Thread: "worker-1", JavaThreadID: 21, OSThreadID: 4242, Class: "app.Log", Address: 0xffd19730,
			Other: "flusher", Timeout: time.Second, TimedOut: true,
			Stack: []threaddump.Frame{{Class: "app.Log", Method: "append", File: "Log.java", Line: 42}, {Class: "java.lang.Thread", Method: "run", Module: "java.base@17", Native: true}},
		}},
		GCPauses: []snapshot.GCPause{{Start: time.Unix(8, 9), Name: "G1New", Cause: "Allocation Failure", SumOfPauses: 3 * time.Millisecond, LongestPause: 2 * time.Millisecond}},
		JFRPause: 250 * time.Microsecond,
		Host:     &snapshot.Host{CPUs: 2},
	}
	for _, version := range []byte{2, FormatVersion} {
		got, r := recordAtVersion(t, version, snap)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, 1)
		if version < 3 {
			assert.Empty(t, got[0].Waits)
			assert.Empty(t, got[0].GCPauses)
			continue
		}
		assert.Equal(t, snap.Waits, got[0].Waits)
		assert.Equal(t, snap.GCPauses, got[0].GCPauses)
		assert.Equal(t, snap.JFRPause, got[0].JFRPause)
	}
}

// recordAtVersion writes snaps as format version writes them, under that
// version's number, and reads them back: what a ctprof of that version
// wrote, as this one reads it.
func recordAtVersion(t *testing.T, version byte, snaps ...*snapshot.Snapshot) ([]*snapshot.Snapshot, *Reader) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.ctprof")
	w, err := Create(path, Header{Version: "test"})
	require.NoError(t, err)
	w.version = version
	for _, s := range snaps {
		require.NoError(t, w.Append(s))
	}
	require.NoError(t, w.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(Magic)] = version
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return readAll(t, path)
}
