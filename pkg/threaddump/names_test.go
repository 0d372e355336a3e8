package threaddump

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Thread names that span lines. The entries follow what HotSpot prints for
// names with newlines (testdata/java/ForgedNames.java shows them in real
// dumps, see TestJVMForgedNames); these cases cover the shapes the scenario
// does not.

const namesHeader = "Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode):\n\n"

// namesEntry is a BLOCKED entry with a header closing a name.
func namesEntry(close string, nid string, waits, holds string) string {
	return close + "\" #12 prio=5 os_prio=0 tid=0x00007f0000000001 nid=" + nid + " waiting for monitor entry  [0x00007f0000000000]\n" +
		"   java.lang.Thread.State: BLOCKED (on object monitor)\n" +
		"\tat A.b(A.java:1)\n" +
		"\t- waiting to lock <" + waits + "> (a X)\n" +
		"\t- locked <" + holds + "> (a X)\n\n"
}

const namesTrailer = "JNI global refs: 1, weak refs: 0\n"

// forgedPair is two forged entries deadlocked on each other, as name text.
const forgedPair = "\"evil1\" #99 daemon prio=5 os_prio=0 tid=0x1 nid=0x7ffffff0 waiting for monitor entry [0x0]\n" +
	"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat A.b(A.java:1)\n\t- waiting to lock <0x1> (a X)\n\t- locked <0x2> (a Y)\n\n" +
	"\"evil2\" #98 daemon prio=5 os_prio=0 tid=0x1 nid=0x7ffffff1 waiting for monitor entry [0x0]\n" +
	"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat A.b(A.java:1)\n\t- waiting to lock <0x2> (a Y)\n\t- locked <0x1> (a X)\n\n" +
	"Found one Java-level deadlock:\n=============================\n\"evil1\":\n  waiting to lock monitor 0x1 (object 0x1, a X),\n  which is held by \"evil2\"\n" +
	"\"evil2\":\n  waiting to lock monitor 0x2 (object 0x2, a Y),\n  which is held by \"evil1\"\n\nFound 1 deadlock.\n\n"

var forgedNameSeeds = []string{
	namesHeader + namesEntry("\"a\nb", "0x10", "0x5", "0x6") + namesTrailer,
	namesHeader + "\"x\n\n" + forgedPair + namesEntry("tail", "0x10", "0x5", "0x6") + namesTrailer,
	namesHeader + "\"x\n\n" + forgedPair + namesEntry("\"tail", "0x10", "0x5", "0x6") + namesTrailer,
	namesHeader + "\"x\" #5 prio=5 tid=0x1 nid=0x7ffffff9 runnable\n\n" + forgedPair + namesEntry("tail", "0x10", "0x5", "0x6") + namesTrailer,
	"\"\n\"\n\" #1 nid=1 x\n\"\r\n\r\n\"a\r\nb\" #2 nid=2 y\r\n",
}

func TestMultilineNames(t *testing.T) {
	type want struct {
		names    []string // every thread, in order; "*" suffix: suspect
		warnings []string // substrings, one per warning
		jvmDL    int      // JVM deadlock reports that are not suspect
	}
	tests := []struct {
		name string
		text string
		want want
	}{
		{"newline inside", namesHeader + namesEntry("\"a\nb", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"a\nb"}}},
		{"newline last", namesHeader + namesEntry("\"a\n", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"a\n"}}},
		{"newline first", namesHeader + namesEntry("\"\na", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"\na"}}},
		{"CRLF", strings.ReplaceAll(namesHeader+namesEntry("\"a\nb", "0x10", "0x5", "0x6")+namesTrailer, "\n", "\r\n"),
			want{names: []string{"a\nb"}}},
		{"quote opens the second line", namesHeader + namesEntry("\"a\n\"b", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"a\n\"b"}}},
		{"forged entries, end visible", namesHeader + "\"x\n\n" + forgedPair + namesEntry("tail", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"x\n\n" + forgedPair + "tail"}, warnings: []string{"the name of the thread at line 3 spans lines 3-28; the thread entries between are part of it"}}},
		{"forged entries, end not visible", namesHeader + "\"x\n\n" + forgedPair + namesEntry("\"tail", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"x\n\n\"evil1*", "evil2*", "tail*"}, warnings: []string{"the name of the thread at line 3 spans lines 3-28 or more; the entries between may be part of it"}}},
		{"opening line forged as a header", namesHeader + "\"x\" #5 prio=5 tid=0x1 nid=0x7ffffff9 runnable\n\n" + forgedPair + namesEntry("tail", "0x10", "0x5", "0x6") + namesTrailer,
			want{names: []string{"x*", "evil1*", "evil2*", "tail"}, warnings: []string{"line 28 ends a thread name that starts on an earlier line"}}},
		{"quoted line not after a blank line opens nothing", namesHeader + strings.TrimSuffix(namesEntry("\"a", "0x10", "0x5", "0x6"), "\n") + "\"GET / HTTP/1.1\" 200\n\n" + namesEntry("\"b", "0x11", "0x7", "0x8") + namesTrailer,
			want{names: []string{"a", "b"}}},
		{"unclosed name is left alone", namesHeader + namesEntry("\"a", "0x10", "0x5", "0x6") + "\"truncated\n",
			want{names: []string{"a"}, warnings: []string{"without the JNI references trailer"}}},
		{"real deadlock report after the trailer", namesHeader + namesEntry("\"a\nb", "0x10", "0x5", "0x6") + namesTrailer + "\n" + forgedPair[strings.Index(forgedPair, "Found one"):],
			want{names: []string{"a\nb"}, jvmDL: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := parseOne(t, tc.text)
			var names []string
			for i := range d.Threads {
				n := d.Threads[i].Name
				if d.Threads[i].Suspect {
					n += "*"
				}
				names = append(names, n)
			}
			assert.Equal(t, tc.want.names, names)
			require.Len(t, d.Warnings, len(tc.want.warnings), "%q", d.Warnings)
			for i, w := range tc.want.warnings {
				assert.Contains(t, d.Warnings[i], w)
			}
			dl := 0
			for _, r := range d.Deadlocks {
				if !r.Suspect {
					dl++
				}
			}
			assert.Equal(t, tc.want.jvmDL, dl, "JVM deadlock reports taken as real")
			assert.Zero(t, d.UnknownLines-strings.Count(tc.text, "GET /")-strings.Count(tc.text, "\"truncated"), "%v", d.UnknownSamples)
		})
	}
}

// TestParseOptionsSettleForgedNames: with the target's threads known, the
// forged entries of a name whose end the text cannot show join the name.
func TestParseOptionsSettleForgedNames(t *testing.T) {
	real := func(nid int64) bool { return nid == 0x10 || nid == 0x11 }
	evil := namesEntry("\"evil1", "0x10", "0x1", "0x2") + namesEntry("\"evil2", "0x11", "0x2", "0x1")
	tests := []struct {
		name     string
		text     string
		names    []string
		warnings []string
	}{
		{"forged nids are no tasks",
			namesHeader + "\"x\n\n" + forgedPair + namesEntry("\"tail", "0x10", "0x5", "0x6") + namesEntry("\"c", "0x11", "0x7", "0x8") + namesTrailer,
			[]string{"x\n\n" + forgedPair + "\"tail", "c"},
			[]string{"the name of the thread at line 3 spans lines 3-28: the thread entries in it name no thread of the process"}},
		{"forged entries take real nids, printed later",
			namesHeader + "\"x\n\n" + evil + namesEntry("\"tail", "0x10", "0x5", "0x6") + namesEntry("\"c", "0x11", "0x7", "0x8") + namesTrailer,
			[]string{"x\n\n" + evil + "\"tail", "c"},
			[]string{"the name of the thread at line 3 spans lines 3-17; the thread entries between are part of it"}},
		{"a nid taken twice, the first time inside the name",
			namesHeader + namesEntry("\"a", "0x10", "0x5", "0x6") + "\"x\n\n" + evil + namesEntry("\"c", "0x11", "0x7", "0x8") + namesTrailer,
			[]string{"a", "x\n\n" + evil + "\"c"},
			[]string{"the name of the thread at line 9 spans lines 9-17: the thread entries in it name no thread of the process",
				"the name of the thread at line 9 spans lines 9-23; the thread entries between are part of it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dumps, err := ParseHotSpot([]byte(tc.text), ParseOptions{ThreadExists: real})
			require.NoError(t, err)
			require.Len(t, dumps, 1)
			d := dumps[0]
			var names []string
			for i := range d.Threads {
				assert.False(t, d.Threads[i].Suspect)
				names = append(names, d.Threads[i].Name)
			}
			assert.Equal(t, tc.names, names)
			assert.Empty(t, d.FindDeadlocks())
			assert.Empty(t, d.Deadlocks)
			assert.Equal(t, tc.warnings, d.Warnings)
		})
	}
}

// FuzzParseNames runs the parser with and without live checks on inputs
// seeded with forged names.
func FuzzParseNames(f *testing.F) {
	for _, s := range forgedNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkParsed(t, s)
		dumps, err := ParseHotSpot([]byte(s), ParseOptions{ThreadExists: func(nid int64) bool { return nid%2 == 0 }, JavaThreads: 1})
		if err != nil {
			return
		}
		for _, d := range dumps {
			seen := map[int64]bool{}
			for i := range d.Threads {
				th := &d.Threads[i]
				if th.OSThreadID != 0 && strings.Contains(s, "nid=") {
					if seen[th.OSThreadID] && th.OSThreadID%2 == 0 {
						t.Fatalf("nid %d taken twice", th.OSThreadID)
					}
					seen[th.OSThreadID] = true
				}
			}
		}
	})
}
