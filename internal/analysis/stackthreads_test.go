package analysis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// jvmDump is a snapshot of a dump whose threads, named names, all park
// in one stack (a pool's idle workers), at second sec.
func jvmDump(sec int, names []string) *snapshot.Snapshot {
	at := t0.Add(time.Duration(sec) * time.Second)
	d := &threaddump.Dump{Format: threaddump.FormatHotSpot, Time: at}
	for i, n := range names {
		d.Threads = append(d.Threads, threaddump.Thread{Name: n, ID: int64(i + 1), State: threaddump.StateWaiting,
			Frames: []threaddump.Frame{{Class: "jdk.internal.misc.Unsafe", Method: "park"}, {Class: "app.Pool", Method: "take"}, {Class: "java.lang.Thread", Method: "run"}}})
	}
	return &snapshot.Snapshot{Time: at, Interval: time.Second, Target: snapshot.Target{PID: 42, Name: "java", Kind: snapshot.KindJVM}, Dump: d}
}

// byThread adds up a stack's samples by thread name.
func byThread(st *FoldedStack) map[string]int {
	out := map[string]int{}
	for l, n := range st.ByLabel {
		out[l.Thread] += n
	}
	return out
}

func onlyStack(t *testing.T, a *Aggregator) *FoldedStack {
	t.Helper()
	stacks := a.Stacks()
	require.Len(t, stacks, 1)
	return stacks[0]
}

// A sample's label names its thread, beside its pool: both safe to print
// (the name is the target's) and bounded in length.
func TestStackLabelNamesTheThread(t *testing.T) {
	for _, tc := range []struct {
		name, thread, want string
	}{
		{"a pool's thread", "request-12", "request-12"},
		{"no name", "", ""},
		{"control characters escaped", "evil\x1b[2J\nname", `evil\x1b[2J\nname`},
		{"a long name cut", strings.Repeat("x", 1<<20), strings.Repeat("x", 125) + "…"},
		{"cut at a rune", strings.Repeat("é", 100), strings.Repeat("é", 62) + "…"},
		{"the fold-away name is itself", OtherThreads, OtherThreads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New()
			a.Add(jvmDump(0, []string{tc.thread}))
			a.Add(jvmDump(1, []string{tc.thread}))
			st := onlyStack(t, a)
			assert.Equal(t, map[string]int{tc.want: 2}, byThread(st))
			assert.LessOrEqual(t, len(tc.want), maxThreadNameBytes)
			for l := range st.ByLabel {
				assert.Equal(t, StackLabel{State: "WAITING", Pool: threadLabel(PoolName(tc.thread)), Thread: tc.want}, l)
				assert.LessOrEqual(t, len(l.Pool), maxThreadNameBytes, "the pool is the name's, bounded alike")
				assert.NotContains(t, l.Pool, "\x1b", "nor raw control characters in the pool")
			}
		})
	}
}

// A stack names at most maxStackThreads threads: the ones it named first
// keep their names (their counts only grow), every further thread, new
// ones of a churning pool too, counts as OtherThreads.
func TestStackThreadNamesAreBounded(t *testing.T) {
	names := make([]string, maxStackThreads+6)
	for i := range names {
		names[i] = fmt.Sprintf("worker-%d", i)
	}
	a := New()
	a.Add(jvmDump(0, names))
	first := byThread(onlyStack(t, a))
	assert.Len(t, first, maxStackThreads+1)
	assert.Equal(t, 6, first[OtherThreads])
	a.Add(jvmDump(1, names))
	a.Add(jvmDump(2, append(names, "worker-100", "worker-101")))
	got := byThread(onlyStack(t, a))
	require.Len(t, got, maxStackThreads+1, "64 names and the fold-away one")
	for _, n := range names[:maxStackThreads] {
		assert.Equal(t, 3, got[n], n)
	}
	assert.NotContains(t, got, "worker-100")
	assert.Equal(t, 3*6+2, got[OtherThreads])
	for n, c := range first {
		assert.GreaterOrEqual(t, got[n], c, "a count never goes down: %s", n)
	}
	assert.Equal(t, 3*len(names)+2, onlyStack(t, a).Count)
}

// The stack table's fold-away entry, (other stacks), is bounded in thread
// names as any stack is, and still counts every sample.
func TestOtherStacksThreadNamesAreBounded(t *testing.T) {
	a := NewWithOptions(Options{MaxStacks: 4})
	d := &threaddump.Dump{Format: threaddump.FormatHotSpot, Time: t0}
	const n = 100
	for i := range n {
		d.Threads = append(d.Threads, threaddump.Thread{Name: fmt.Sprintf("t-%d", i), ID: int64(i + 1), State: threaddump.StateRunnable,
			Frames: []threaddump.Frame{{Class: "app.C", Method: fmt.Sprintf("m%d", i)}, {Class: "java.lang.Thread", Method: "run"}}})
	}
	a.Add(&snapshot.Snapshot{Time: t0, Target: snapshot.Target{PID: 42, Kind: snapshot.KindJVM}, Dump: d})
	total := 0
	var other *FoldedStack
	for _, st := range a.Stacks() {
		total += st.Count
		if st.Frames[0] == OtherStacks {
			other = st
		}
	}
	assert.Equal(t, n, total)
	require.NotNil(t, other)
	got := byThread(other)
	assert.Len(t, got, maxStackThreads+1)
	assert.Equal(t, other.Count-maxStackThreads, got[OtherThreads])
}
