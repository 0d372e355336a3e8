package threaddump

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jdk21JSON follows the writer of JDK 21's Thread.dump_to_file
// (jdk.internal.vm.ThreadDumper.dumpThreadsToJson in openjdk/jdk21u): every
// number is a quoted string, threads carry only tid, name and stack, "/"
// is escaped, and containers nest under "threadContainers".
const jdk21JSON = `{
  "threadDump": {
    "processId": "4242",
    "time": "2023-10-17T08:00:01.123456789Z",
    "runtimeVersion": "21.0.1+12-LTS",
    "threadContainers": [
      {
        "container": "<root>",
        "parent": null,
        "owner": null,
        "threads": [
         {
           "tid": "1",
           "name": "main",
           "stack": [
              "java.base\/java.lang.Thread.sleep0(Native Method)",
              "java.base\/java.lang.Thread.sleep(Thread.java:509)",
              "App.main(App.java:12)"
           ]
         },
         {
           "tid": "9",
           "name": "Reference Handler",
           "stack": [
           ]
         }
        ],
        "threadCount": "2"
      },
      {
        "container": "java.util.concurrent.ThreadPerTaskExecutor@1b2c3d4e",
        "parent": "<root>",
        "owner": null,
        "threads": [
         {
           "tid": "23",
           "name": "",
           "stack": [
              "java.base\/java.lang.VirtualThread.parkNanos(VirtualThread.java:631)",
              "App.lambda$main$0(App.java:20)"
           ]
         }
        ],
        "threadCount": "1"
      }
    ]
  }
}
`

// jdk21Text follows ThreadDumper.dumpThreads of JDK 21: a header per
// thread, "virtual" after virtual threads' names, frames indented by six
// spaces without "at".
const jdk21Text = `4242
2023-10-17T08:00:01.123456789Z
21.0.1+12-LTS

#1 "main"
      java.base/java.lang.Thread.sleep0(Native Method)
      App.main(App.java:12)

#23 "" virtual
      java.base/java.lang.VirtualThread.parkNanos(VirtualThread.java:631)
      App.lambda$main$0(App.java:20)

`

func TestThreadDumpJSONOfJDK21(t *testing.T) {
	dumps, err := ParseString(jdk21JSON)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	d := dumps[0]
	assert.Equal(t, FormatThreadDumpJSON, d.Format)
	assert.Equal(t, 4242, d.PID)
	assert.Equal(t, "21.0.1+12-LTS", d.VM)
	assert.Equal(t, "2023-10-17T08:00:01Z", d.Time.Truncate(1e9).Format("2006-01-02T15:04:05Z07:00"))
	require.Len(t, d.Threads, 3)
	main := d.Threads[0]
	assert.Equal(t, "main", main.Name)
	assert.Equal(t, int64(1), main.ID)
	assert.Equal(t, StateNone, main.State, "JDK 21 writes no state")
	require.Len(t, main.Frames, 3)
	assert.Equal(t, Frame{Module: "java.base", Class: "java.lang.Thread", Method: "sleep0", Native: true}, main.Frames[0])
	assert.Equal(t, Frame{Class: "App", Method: "main", File: "App.java", Line: 12}, main.Frames[2])
	vt := d.Threads[2]
	assert.Equal(t, "java.util.concurrent.ThreadPerTaskExecutor@1b2c3d4e", vt.Container)
	assert.Equal(t, int64(23), vt.ID)
	assert.Empty(t, d.Warnings)
	assert.Empty(t, d.Locks(), "JDK 21 writes no lock data")
}

func TestThreadDumpTextOfJDK21(t *testing.T) {
	require.True(t, looksLikeThreadDumpText(jdk21Text))
	dumps, err := ParseString(jdk21Text)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	d := dumps[0]
	assert.Equal(t, FormatThreadDumpText, d.Format)
	assert.Equal(t, 4242, d.PID)
	require.Len(t, d.Threads, 2)
	assert.Equal(t, "main", d.Threads[0].Name)
	assert.Len(t, d.Threads[0].Frames, 2)
	assert.True(t, d.Threads[1].Virtual)
	assert.Equal(t, "", d.Threads[1].Name)
	assert.Equal(t, "App", d.Threads[1].Frames[1].Class)
	assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
}

// A JDK 25 text header carries the state and time, and names are printed
// unescaped: a name may hold quotes and what looks like a state.
func TestThreadDumpTextHeaders(t *testing.T) {
	in := `77
2026-11-23T05:28:04.149938163Z
25.0.3+9-LTS

#27 ""left" 'owner', #1 [0x0]" BLOCKED 2026-11-23T05:28:04.153985967Z
    at HostileNames.enterRight(HostileNames.java:90)
    - waiting to lock <HostileNames$Right@18ef171f>
    at HostileNames.lambda$main$2(HostileNames.java:120)
    - locked <HostileNames$Left@61df3440>

#28 "fake" RUNNABLE 1" virtual WAITING 2026-11-23T05:28:04.153985967Z
    at java.base/jdk.internal.misc.Unsafe.park(Native Method)
    - parking to wait for <java.util.concurrent.locks.ReentrantLock$NonfairSync@94d708d>

`
	dumps, err := ParseString(in)
	require.NoError(t, err)
	d := dumps[0]
	require.Len(t, d.Threads, 2)
	a, b := d.Threads[0], d.Threads[1]
	assert.Equal(t, `"left" 'owner', #1 [0x0]`, a.Name)
	assert.Equal(t, StateBlocked, a.State)
	require.Len(t, a.Locks, 2)
	assert.Equal(t, LockEvent{Action: LockWaitingToLock, Lock: Lock{Class: "HostileNames$Right", Address: "0x18ef171f"}, Frame: 0}, a.Locks[0])
	assert.Equal(t, LockEvent{Action: LockLocked, Lock: Lock{Class: "HostileNames$Left", Address: "0x61df3440"}, Frame: 1}, a.Locks[1])
	assert.Equal(t, `fake" RUNNABLE 1`, b.Name)
	assert.Equal(t, StateWaiting, b.State)
	assert.True(t, b.Virtual)
	ev, ok := b.BlockedOn()
	require.True(t, ok)
	assert.Equal(t, LockParking, ev.Action)
}

func TestThreadDumpJSONTruncated(t *testing.T) {
	cut := jdk21JSON[:strings.Index(jdk21JSON, `"tid": "23"`)]
	dumps, err := ParseString(cut)
	require.NoError(t, err, "what was read before the cut is kept")
	require.Len(t, dumps, 1)
	assert.Len(t, dumps[0].Threads, 2)
	require.Len(t, dumps[0].Warnings, 1)
	assert.Contains(t, dumps[0].Warnings[0], "ends early")

	_, err = ParseString(`{"threadDump": {"processId": "1", "threadContainers": [{"threads": [{"tid": `)
	assert.Error(t, err, "nothing to keep")
}

func TestThreadDumpJSONSeriesAndOddInput(t *testing.T) {
	dumps, err := ParseString(jdk21JSON + jdk21JSON)
	require.NoError(t, err)
	assert.Len(t, dumps, 2, "documents appended to one file are a series")

	// Numbers as numbers, unknown fields, a null thread list.
	odd := `{"threadDump": {"processId": 7, "future": {"x": [1, 2]}, "threadContainers": [
		{"container": "<root>", "threads": null},
		{"container": "c", "threads": [{"tid": 5, "name": "w", "state": "RUNNABLE", "stack": ["a.B.c(B.java:1)"], "extra": true,
		  "monitorsOwned": [{"depth": 9, "locks": ["X@1"]}]}]}]}}`
	dumps, err = ParseString(odd)
	require.NoError(t, err)
	require.Len(t, dumps[0].Threads, 1)
	th := dumps[0].Threads[0]
	assert.Equal(t, int64(5), th.ID)
	assert.Equal(t, 7, dumps[0].PID)
	require.Len(t, th.Locks, 1)
	assert.Equal(t, -1, th.Locks[0].Frame, "a depth beyond the stack is not tied to a frame")
}

// A Java string is any UTF-16: a lone surrogate written as an escape, or
// raw bytes that are not UTF-8 (a hand-edited file), become U+FFFD rather
// than an error, and a repeated member keeps the last value.
func TestThreadDumpJSONOddStrings(t *testing.T) {
	in := "{\"threadDump\": {\"threadContainers\": [{\"threads\": [{\"tid\": 1, \"tid\": 2, " +
		"\"name\": \"lone \\ud800 \\ud83d\\ude00 \xff\", \"stack\": [\"a.B\xfe.c(B.java:1)\"]}]}]}}"
	dumps, err := ParseString(in)
	require.NoError(t, err)
	require.Len(t, dumps[0].Threads, 1)
	th := dumps[0].Threads[0]
	assert.Equal(t, int64(2), th.ID)
	assert.Equal(t, "lone \uFFFD \U0001F600 \uFFFD", th.Name)
	require.Len(t, th.Frames, 1)
	assert.True(t, utf8.ValidString(th.Frames[0].Class), th.Frames[0].Class)
}

func TestDumpToFileDetectionLeavesHotSpotAlone(t *testing.T) {
	for _, in := range []string{
		"4242:\n2026-11-23 05:00:00\nFull thread dump OpenJDK 64-Bit Server VM:\n\n\"main\" #1 prio=5\n",
		"2026-11-23 05:00:00\nFull thread dump\n",
		"{\"other\": 1}",
		"12\nnot a time\nx\n\n#1 \"a\"\n",
	} {
		assert.False(t, looksLikeThreadDumpText(in), in)
		assert.False(t, looksLikeThreadDumpJSON(in), in)
	}
}

func FuzzParseThreadDumpJSON(f *testing.F) {
	f.Add(jdk21JSON)
	f.Add(`{"threadDump": {"threadContainers": [{"threads": [{"tid": "1", "blockedOn": "A@1", "parkBlocker": {"object": "B@2", "owner": "3"}, "carrier": 4, "monitorsOwned": [{"depth": 0, "locks": ["A@1"]}], "stack": ["x.Y.z(Y.java:1)"]}]}]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		checkParsed(t, s)
	})
}

func FuzzParseThreadDumpText(f *testing.F) {
	f.Add(jdk21Text)
	f.Add("1\n2026-11-23T05:28:04Z\n25\n\n#2 \"a\" BLOCKED 2026-11-23T05:28:04Z\n    - locked <A@1>\n    at x.Y.z(Y.java:1)\n")
	f.Fuzz(func(t *testing.T, s string) {
		checkParsed(t, s)
	})
}

// checkParsed parses s and checks the invariants every parser keeps.
func checkParsed(t *testing.T, s string) {
	dumps, err := ParseString(s)
	if err != nil {
		return
	}
	for _, d := range dumps {
		for i := range d.Threads {
			th := &d.Threads[i]
			for _, ev := range th.Locks {
				if ev.Frame >= len(th.Frames) || ev.Frame < -1 {
					t.Fatalf("lock event frame %d out of range (%d frames)", ev.Frame, len(th.Frames))
				}
			}
		}
		for _, li := range d.Locks() {
			_ = li.Owner
		}
		d.FindDeadlocks()
	}
}
