package jvm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/jfr"
)

// jfrCheck is JFR.check as the JDK's own jcmd prints it.
func jfrCheck(t *testing.T, p *testjvm.Process) string {
	t.Helper()
	return string(p.Jcmd(t, "JFR.check"))
}

// recordingState finds name in JFR.check's output: "running", "stopped",
// or "" when it is not listed.
func recordingState(check, name string) string {
	for _, line := range strings.Split(check, "\n") {
		if strings.Contains(line, "name="+name+" ") {
			if i := strings.LastIndexByte(line, '('); i >= 0 {
				return strings.Trim(line[i:], "()")
			}
		}
	}
	return ""
}

// readEvents reads a JFR stream: the events of each type, and the chunk
// starts in order.
func readEvents(t *testing.T, b []byte) (map[string][]*jfr.Event, []time.Time) {
	t.Helper()
	r := jfr.NewReader(bytes.NewReader(b), jfr.Options{EventTypes: JFREvents})
	byType := map[string][]*jfr.Event{}
	var chunks []time.Time
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		byType[ev.Type] = append(byType[ev.Type], ev)
		if c := r.Chunk().Start; len(chunks) == 0 || !chunks[len(chunks)-1].Equal(c) {
			chunks = append(chunks, c)
		}
	}
	return byType, chunks
}

// ctprofDirs lists ctprof's recording directories for pid in /tmp.
func ctprofDirs(t *testing.T, nspid int) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("/tmp", "ctprof-jfr-"+strconv.Itoa(nspid)+"-*"))
	require.NoError(t, err)
	return m
}

// A recording started through ctprof's attach client holds exactly the
// lock events asked for, each read returns only chunks not returned
// before, and Stop leaves neither the recording nor ctprof's directory.
func TestRecordingStartReadStop(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		for _, mode := range []SettingsMode{SettingsAuto, SettingsFile} {
			name := jdk.Name + "/inline"
			if mode == SettingsFile {
				if jdk.Major >= 21 {
					continue // the .jfc path is for old JDKs; JDK 17 shows it works
				}
				name = jdk.Name + "/jfc"
			}
			t.Run(name, func(t *testing.T) {
				p := testjvm.Start(t, jdk, "JfrLocks")
				info := inspect(t, p.PID)
				ctx := context.Background()
				rec, err := StartRecording(ctx, info, RecordingOptions{Threshold: time.Millisecond, Duration: DefaultJFRDuration, Settings: mode})
				require.NoError(t, err)
				defer rec.Stop(ctx)
				assert.Regexp(t, `^ctprof-\d+-\d+$`, rec.Name())
				require.Len(t, ctprofDirs(t, info.NSPID), 1, "ctprof's private directory in the JVM's /tmp")
				st, err := os.Stat(ctprofDirs(t, info.NSPID)[0])
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())

				check := string(p.Jcmd(t, "JFR.check", "verbose=true"))
				assert.Equal(t, "running", recordingState(check, rec.Name()), check)
				assert.Contains(t, check, "jdk.JavaMonitorEnter")
				assert.NotContains(t, check, "jdk.ExecutionSample", "only the events ctprof reads")
				assert.Contains(t, check, "maxsize=32.0MB")
				assert.Contains(t, check, "maxage=2m")
				assert.Contains(t, check, "duration=2m")

				time.Sleep(1500 * time.Millisecond) // let waits happen; the reads below are what is tested
				first, err := rec.Read(ctx, 5*time.Second)
				require.NoError(t, err)
				require.NotEmpty(t, first)
				ev1, chunks1 := readEvents(t, first)
				assert.NotEmpty(t, ev1["jdk.JavaMonitorEnter"], "monitor enters of JfrLocks$Monitor")
				assert.NotEmpty(t, ev1["jdk.ThreadPark"], "parks on the ReentrantLock")
				assert.NotEmpty(t, ev1["jdk.JavaMonitorWait"], "the waiter's Object.wait")
				for _, ev := range ev1["jdk.JavaMonitorEnter"] {
					assert.GreaterOrEqual(t, ev.Duration, time.Millisecond, "below the threshold")
				}

				time.Sleep(1500 * time.Millisecond)
				before, err := info.ReadPerfData()
				require.NoError(t, err)
				readStart := time.Now()
				second, err := rec.Read(ctx, 5*time.Second)
				require.NoError(t, err)
				wall := time.Since(readStart)
				after, err := info.ReadPerfData()
				require.NoError(t, err)
				// What one read costs the JVM: the chunk rotation's
				// safepoints (for docs/PERFORMANCE.md).
				t.Logf("a read: %s wall, %d bytes, %d safepoints, %s at safepoints",
					wall.Round(time.Microsecond), len(second), after.Counters().Safepoints-before.Counters().Safepoints,
					after.Counters().SafepointTime-before.Counters().SafepointTime)
				require.NotEmpty(t, second)
				ev2, chunks2 := readEvents(t, second)
				assert.NotEmpty(t, ev2["jdk.JavaMonitorEnter"])
				require.NotEmpty(t, chunks1)
				for _, c := range chunks2 {
					assert.True(t, c.After(chunks1[len(chunks1)-1]), "a chunk read again: %v after %v", chunks2, chunks1)
				}
				seen := map[time.Time]bool{}
				for _, ev := range ev1["jdk.JavaMonitorEnter"] {
					seen[ev.Start] = true
				}
				again := 0
				for _, ev := range ev2["jdk.JavaMonitorEnter"] {
					if seen[ev.Start] {
						again++
					}
				}
				assert.Zero(t, again, "events returned twice")
				assert.Empty(t, ctprofFiles(t, info.NSPID), "dump files are removed after reading")

				require.NoError(t, rec.Stop(ctx))
				require.NoError(t, rec.Stop(ctx), "Stop twice")
				check = jfrCheck(t, p)
				assert.Empty(t, recordingState(check, rec.Name()), check)
				assert.NotContains(t, check, "ctprof-")
				assert.Empty(t, ctprofDirs(t, info.NSPID))
				_, err = rec.Read(ctx, time.Second)
				assert.Error(t, err, "a stopped recording is not read")
			})
		}
	}
}

// ctprofFiles lists what is in ctprof's directories (no ReadDir on the
// JVM's /tmp beyond them: the test's JVM runs as the test's user).
func ctprofFiles(t *testing.T, nspid int) []string {
	t.Helper()
	var out []string
	for _, d := range ctprofDirs(t, nspid) {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range ents {
			if e.Name() != "ctprof.jfc" {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// A recording about to end is renewed: the next one starts before the
// old one's last read, so no chunk falls between them, and the old one is
// stopped.
func TestRecordingRenewal(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "JfrLocks")
	info := inspect(t, p.PID)
	ctx := context.Background()
	rec, err := StartRecording(ctx, info, RecordingOptions{Threshold: time.Millisecond, Duration: 30 * time.Second})
	require.NoError(t, err)
	defer rec.Stop(ctx)
	old := rec.Name()
	b1, err := rec.Read(ctx, time.Second)
	require.NoError(t, err)
	assert.Equal(t, old, rec.Name(), "30 s left: no renewal for a read due in 1 s")
	_, chunks1 := readEvents(t, b1)

	// A read due in 40 s would come after the end: renew now.
	b2, err := rec.Read(ctx, 40*time.Second)
	require.NoError(t, err)
	assert.NotEqual(t, old, rec.Name())
	assert.WithinDuration(t, time.Now().Add(30*time.Second), rec.Ends(), 5*time.Second)
	check := jfrCheck(t, p)
	assert.Empty(t, recordingState(check, old), "the old recording is stopped and gone:\n%s", check)
	assert.Equal(t, "running", recordingState(check, rec.Name()), check)

	time.Sleep(time.Second)
	b3, err := rec.Read(ctx, time.Second)
	require.NoError(t, err)
	ev3, chunks3 := readEvents(t, b3)
	assert.NotEmpty(t, ev3["jdk.JavaMonitorEnter"], "the new recording records")
	_, chunks2 := readEvents(t, b2)
	all := append(append(chunks1, chunks2...), chunks3...)
	for k := 1; k < len(all); k++ {
		assert.True(t, all[k].After(all[k-1]), "chunks in order, none twice: %v", all)
	}
	require.NoError(t, rec.Stop(ctx))
	assert.NotContains(t, jfrCheck(t, p), "ctprof-")
}

// The chunk filter keeps chunks newer than the last one returned, and
// passes damaged tails on for the reader to judge.
func TestNewChunks(t *testing.T) {
	chunk := func(start int64, size int) []byte {
		b := make([]byte, size)
		copy(b, "FLR\x00")
		binary.BigEndian.PutUint64(b[8:], uint64(size))
		binary.BigEndian.PutUint64(b[32:], uint64(start))
		binary.BigEndian.PutUint64(b[40:], 1000)
		return b
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	tests := []struct {
		name      string
		last      int64
		in, want  []byte
		wantLast  int64
		wantEndNs int64
	}{
		{"first read", 0, cat(chunk(100, 80), chunk(200, 90)), cat(chunk(100, 80), chunk(200, 90)), 200, 1200},
		{"seen chunk left out", 100, cat(chunk(100, 80), chunk(200, 90)), chunk(200, 90), 200, 1200},
		{"nothing new", 200, chunk(200, 90), nil, 200, 0},
		{"cut tail kept for the reader", 100, cat(chunk(200, 90), chunk(300, 200)[:100]), cat(chunk(200, 90), chunk(300, 200)[:100]), 300, 1300},
		{"not JFR", 0, []byte("garbage that is longer than a chunk header, garbage, garbage, garbage"), nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recording{lastChunk: tc.last}
			got := r.newChunks(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantLast, r.lastChunk)
			if tc.wantEndNs != 0 {
				assert.Equal(t, tc.wantEndNs, r.lastEnd.UnixNano())
			}
		})
	}
}

// The settings name the five events, in both forms.
func TestRecordingSettings(t *testing.T) {
	inline := strings.Join(inlineSettings(15*time.Millisecond), " ")
	var cfg struct {
		Events []struct {
			Name     string `xml:"name,attr"`
			Settings []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:",chardata"`
			} `xml:"setting"`
		} `xml:"event"`
	}
	require.NoError(t, xml.Unmarshal(jfcSettings(15*time.Millisecond), &cfg))
	require.Len(t, cfg.Events, len(JFREvents))
	for k, e := range JFREvents {
		assert.Contains(t, inline, "+"+e+"#enabled=true")
		assert.Equal(t, e, cfg.Events[k].Name)
		if e != "jdk.GarbageCollection" {
			assert.Contains(t, inline, "+"+e+"#threshold=15000000ns")
			assert.Contains(t, cfg.Events[k].Settings, struct {
				Name  string `xml:"name,attr"`
				Value string `xml:",chardata"`
			}{"threshold", "15000000 ns"})
		}
	}
	assert.Equal(t, "1s", jfrSeconds(0))
	assert.Equal(t, "2s", jfrSeconds(1500*time.Millisecond))
	assert.Equal(t, "120s", jfrSeconds(2*time.Minute))
}

// What the JVM's user plants in ctprof's directory is never read through:
// a link where the next dump goes makes that read fail, and the next read
// works again.
func TestRecordingReadRefusesAPlantedLink(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "JfrLocks")
	info := inspect(t, p.PID)
	ctx := context.Background()
	rec, err := StartRecording(ctx, info, RecordingOptions{Threshold: time.Millisecond, Duration: DefaultJFRDuration})
	require.NoError(t, err)
	defer rec.Stop(ctx)
	dirs := ctprofDirs(t, info.NSPID)
	require.Len(t, dirs, 1)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("not for ctprof"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dirs[0], "dump-1.jfr")))

	b, err := rec.Read(ctx, 5*time.Second)
	require.Error(t, err)
	assert.Nil(t, b)
	assert.Contains(t, err.Error(), "symbolic link")
	_, err = os.Lstat(filepath.Join(dirs[0], "dump-1.jfr"))
	assert.NoError(t, err, "a link is not ctprof's to remove")

	b, err = rec.Read(ctx, 5*time.Second)
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	require.NoError(t, rec.Stop(ctx))
	assert.NotContains(t, jfrCheck(t, p), "ctprof-")
	// The directory stays: it holds what ctprof did not create.
	assert.Len(t, ctprofDirs(t, info.NSPID), 1)
	require.NoError(t, os.RemoveAll(dirs[0]))
}

// A recording someone else stopped (or one that ended while ctprof was
// stopped) is replaced at the next read, and the read says so.
func TestRecordingReplacedWhenStoppedByOthers(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "JfrLocks")
	info := inspect(t, p.PID)
	ctx := context.Background()
	rec, err := StartRecording(ctx, info, RecordingOptions{Threshold: time.Millisecond, Duration: DefaultJFRDuration})
	require.NoError(t, err)
	defer rec.Stop(ctx)
	old := rec.Name()
	p.Jcmd(t, "JFR.stop", "name="+old)

	_, err = rec.Read(ctx, 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a new recording was started")
	assert.NotEqual(t, old, rec.Name())
	assert.Equal(t, "running", recordingState(jfrCheck(t, p), rec.Name()))
	b, err := rec.Read(ctx, 5*time.Second)
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	require.NoError(t, rec.Stop(ctx))
	assert.NotContains(t, jfrCheck(t, p), "ctprof-")
}
