package threaddump

import (
	"bytes"
	"compress/gzip"
	"github.com/ctprof/ctprof/internal/testcorpus"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedDumps(t), name))
	require.NoError(t, err)
	return b
}

// The expectations come from ../shared/dumps/README.md: facts about the
// input counted with grep, not outputs of this parser.
var corpusCases = []struct {
	file       string
	dumps      int
	threads    int // per dump
	blocked    int // in the last dump
	deadlocks  int // reported by the JVM
	vmContains string
}{
	{"jdk6-apple-macos-eclipse-scalaide-hang-mima.txt", 1, 32, 0, 0, "19.1-b02-334"},
	{"jdk8-play-devmode-monitor-contention.txt", 1, 44, 15, 0, "25.40-b25"},
	{"jdk11-debian-4dumps-ycrash-testdata.txt", 4, 17, 0, 0, "11.0.5"},
	{"jdk17-selenium-cdp-deadlock-parking-not-jvm-detected.txt", 1, 86, 0, 0, "17.0.8"},
	{"jdk21-cardano-rosetta-production.txt", 1, 82, 0, 0, "21.0.2"},
	{"jdk25-windows-jcmd-pid-preamble-minecraft-lattice.txt", 1, 36, 0, 0, "25.0.1"},
	{"jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt", 1, 54, 7, 3, "25+36-LTS"},
}

func TestCorpusHotSpot(t *testing.T) {
	for _, tc := range corpusCases {
		t.Run(tc.file, func(t *testing.T) {
			dumps, err := ParseBytes(readCorpus(t, tc.file))
			require.NoError(t, err)
			require.Len(t, dumps, tc.dumps)
			for _, d := range dumps {
				assert.Equal(t, FormatHotSpot, d.Format)
				assert.Len(t, d.Threads, tc.threads)
				assert.Zero(t, d.UnknownLines, "unknown lines: %v", d.UnknownSamples)
				assert.Empty(t, d.Warnings)
				assert.Contains(t, d.VM, tc.vmContains)
				assert.False(t, d.Time.IsZero(), "timestamp")
				assert.Greater(t, d.JNIGlobalRefs, 0)
			}
			last := dumps[len(dumps)-1]
			blocked := 0
			for _, th := range last.Threads {
				if th.State == StateBlocked {
					blocked++
				}
			}
			assert.Equal(t, tc.blocked, blocked)
			assert.Len(t, last.Deadlocks, tc.deadlocks)
		})
	}
}

func TestCorpusSeriesTimestamps(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk11-debian-4dumps-ycrash-testdata.txt"))
	require.NoError(t, err)
	var got []string
	for _, d := range dumps {
		got = append(got, d.Time.Format("15:04:05"))
	}
	assert.Equal(t, []string{"07:28:37", "07:29:07", "07:29:38", "07:30:08"}, got)
	// The `top` output appended after each dump must not become threads.
	for _, d := range dumps {
		for _, th := range d.Threads {
			assert.NotContains(t, th.Name, "top -")
		}
	}
}

func TestCorpusPlayHottestMonitor(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk8-play-devmode-monitor-contention.txt"))
	require.NoError(t, err)
	locks := dumps[0].Locks()
	require.NotEmpty(t, locks)
	hot := locks[0]
	assert.Equal(t, "0x000000012034bbf8", hot.Lock.Address)
	assert.Equal(t, "play.core.server.DevServerStart$$anonfun$mainDev$1$$anon$1", hot.Lock.Class)
	assert.Len(t, hot.Waiters, 8)
	require.NotNil(t, hot.Owner)
	assert.Equal(t, "New I/O worker #7", hot.Owner.Name)
	assert.Equal(t, StateWaiting, hot.Owner.State, "the holder is parked")
}

func TestCorpusDeadlocks(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	require.NoError(t, err)
	d := dumps[0]
	require.Len(t, d.Deadlocks, 3)
	assert.Equal(t, []string{"DeadlockThread-A", "DeadlockThread-B"}, d.Deadlocks[0].Threads)
	assert.Equal(t, "DeadlockThread-B", d.Deadlocks[0].Edges[0].HeldBy)
	assert.Equal(t, Lock{Address: "0x0000000503a018b0", Class: "java.lang.Object"}, d.Deadlocks[0].Edges[0].WaitsFor)
	assert.Len(t, d.Deadlocks[2].Threads, 3)

	// ctprof's own cycle detection finds the same three cycles.
	cycles := d.FindDeadlocks()
	require.Len(t, cycles, 3)
	sizes := map[int]int{}
	for _, c := range cycles {
		sizes[len(c.Threads)]++
	}
	assert.Equal(t, map[int]int{2: 2, 3: 1}, sizes)
}

func TestCorpusCarrierThreads(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk25-virtual-threads-carrying-3-deadlocks-jthreaddump.txt"))
	require.NoError(t, err)
	carriers := 0
	for i := range dumps[0].Threads {
		th := &dumps[0].Threads[i]
		if th.CarryingVirtual != 0 {
			carriers++
			assert.True(t, strings.HasPrefix(th.Name, "ForkJoinPool-"), th.Name)
			// The carrier's own stack ends in the worker's run loop; the
			// virtual thread's frames are kept apart.
			require.NotEmpty(t, th.Frames)
			assert.Equal(t, "java.util.concurrent.ForkJoinWorkerThread", th.Frames[len(th.Frames)-1].Class)
			if th.Mounted != nil {
				assert.True(t, th.Mounted.Virtual)
				assert.Equal(t, th.CarryingVirtual, th.Mounted.ID)
			}
		}
	}
	assert.Equal(t, 10, carriers)
}

func TestCorpusJDK6AddressesWithoutPrefix(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk6-apple-macos-eclipse-scalaide-hang-mima.txt"))
	require.NoError(t, err)
	th := dumps[0].Threads[0]
	assert.Equal(t, "Attach Listener", th.Name)
	assert.Equal(t, "0x1226d2000", th.NativeAddress)
	assert.Equal(t, int64(0x11f7c9000), th.OSThreadID)
	assert.True(t, th.Daemon)
	assert.Equal(t, 9, th.Priority)
	// The reconciler is inside wait(): it prints "locked" for the monitor
	// it waits on, but does not hold it.
	var rec *Thread
	for i := range dumps[0].Threads {
		if dumps[0].Threads[i].Name == "org.eclipse.jdt.internal.ui.text.JavaReconciler" {
			rec = &dumps[0].Threads[i]
		}
	}
	require.NotNil(t, rec)
	assert.Empty(t, rec.Holds())
	ev, ok := rec.WaitsOn()
	require.True(t, ok)
	assert.Equal(t, "0x7f48a7138", ev.Lock.Address)
	names := map[string]bool{}
	for _, x := range dumps[0].Threads {
		names[x.Name] = true
	}
	assert.True(t, names["[ThreadPool Manager] - Idle Thread"])
	assert.True(t, names["Scala Presentation Compiler []"])
}

func TestCorpusJcmdPreamble(t *testing.T) {
	dumps, err := ParseBytes(readCorpus(t, "jdk25-windows-jcmd-pid-preamble-minecraft-lattice.txt"))
	require.NoError(t, err)
	assert.Equal(t, 32788, dumps[0].PID)
	var render *Thread
	for i := range dumps[0].Threads {
		if dumps[0].Threads[i].Name == "Render thread" {
			render = &dumps[0].Threads[i]
		}
	}
	require.NotNil(t, render)
	assert.NotZero(t, render.OSThreadID)
}

// TestCorpusEncodings feeds every HotSpot corpus file through the
// transformations people's files go through and expects the same model.
func TestCorpusEncodings(t *testing.T) {
	transforms := map[string]func([]byte) []byte{
		"crlf": func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) },
		"utf16le-bom": func(b []byte) []byte {
			u := utf16.Encode([]rune(string(b)))
			out := []byte{0xff, 0xfe}
			for _, c := range u {
				out = append(out, byte(c), byte(c>>8))
			}
			return out
		},
		"utf16be-bom": func(b []byte) []byte {
			u := utf16.Encode([]rune(string(b)))
			out := []byte{0xfe, 0xff}
			for _, c := range u {
				out = append(out, byte(c>>8), byte(c))
			}
			return out
		},
		"utf8-bom": func(b []byte) []byte { return append([]byte("\xef\xbb\xbf"), b...) },
		"gzip": func(b []byte) []byte {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(b)
			_ = zw.Close()
			return buf.Bytes()
		},
		"shell-prompt-and-log": func(b []byte) []byte {
			pre := "user@host:~$ jstack 4242 > dump.txt\n2024-05-01 10:00:00,123 INFO  [main] c.e.App - \"started\" in 3.2 s\n\tat some.Log.line(Log.java:1)\n"
			post := "\n2024-05-01 10:00:05,001 WARN  [http-nio-8080-exec-1] c.e.App - slow request\n"
			return append(append([]byte(pre), b...), post...)
		},
	}
	for _, tc := range corpusCases {
		orig := readCorpus(t, tc.file)
		want, err := ParseBytes(orig)
		require.NoError(t, err)
		for name, tr := range transforms {
			t.Run(tc.file+"/"+name, func(t *testing.T) {
				got, err := ParseBytes(tr(orig))
				require.NoError(t, err)
				require.Len(t, got, len(want))
				for i := range want {
					require.Len(t, got[i].Threads, len(want[i].Threads))
					for j := range want[i].Threads {
						w, g := &want[i].Threads[j], &got[i].Threads[j]
						assert.Equal(t, w.Name, g.Name)
						assert.Equal(t, w.State, g.State)
						assert.Equal(t, w.OSThreadID, g.OSThreadID)
						assert.Equal(t, len(w.Frames), len(g.Frames), w.Name)
						assert.Equal(t, w.Locks, g.Locks, w.Name)
					}
					assert.Equal(t, len(want[i].Deadlocks), len(got[i].Deadlocks))
				}
			})
		}
	}
}

func TestCorpusConcatenatedSeries(t *testing.T) {
	var all []byte
	total := 0
	for _, tc := range corpusCases {
		all = append(all, readCorpus(t, tc.file)...)
		all = append(all, '\n')
		total += tc.dumps
	}
	dumps, err := ParseBytes(all)
	require.NoError(t, err)
	assert.Len(t, dumps, total)
}

func sharedDumps(t testing.TB) string {
	t.Helper()
	dir := testcorpus.Dir(t)
	t.Logf("real-world dump corpus: %s", dir)
	return dir
}
