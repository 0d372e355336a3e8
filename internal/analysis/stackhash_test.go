package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// stackDump writes a HotSpot dump of the given threads, each "name state
// frame;frame;..." (a frame is "Class.method:line").
func stackDump(threads ...string) string {
	var b strings.Builder
	b.WriteString("Full thread dump test:\n\n")
	for i, th := range threads {
		f := strings.SplitN(th, " ", 3)
		tid := string(rune('a' + i))
		b.WriteString("\"" + f[0] + "\" #" + tid + " prio=5 tid=0x1 nid=0x" + tid + " runnable  [0x0]\n")
		b.WriteString("   java.lang.Thread.State: " + f[1] + "\n")
		for _, fr := range strings.Split(f[2], ";") {
			cm, line, _ := strings.Cut(fr, ":")
			class := cm[:strings.LastIndexByte(cm, '.')]
			file := class[strings.LastIndexByte(class, '.')+1:] + ".java"
			b.WriteString("\tat " + cm + "(" + file + ":" + line + ")\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("JNI global refs: 1, weak refs: 0\n")
	return b.String()
}

func dumpSnap(t *testing.T, i int, text string) *snapshot.Snapshot {
	t.Helper()
	dumps, err := threaddump.ParseString(text)
	require.NoError(t, err)
	require.Len(t, dumps, 1)
	return &snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Interval: time.Second, Dump: dumps[0]}
}

// TestStuckThreadsCompareWholeStacks checks that a thread counts as stuck
// only when its whole stack (every frame's class, method and line) and
// state stayed the same across the dumps, now that stacks are compared by
// hash.
func TestStuckThreadsCompareWholeStacks(t *testing.T) {
	a := New()
	a.Add(dumpSnap(t, 0, stackDump(
		"same RUNNABLE app.Loop.spin:10;app.Main.run:5",
		"line RUNNABLE app.Loop.spin:10;app.Main.run:5",
		"deep RUNNABLE app.Loop.spin:10;app.Main.run:5",
		"state RUNNABLE app.Loop.spin:10;app.Main.run:5",
	)))
	a.Add(dumpSnap(t, 1, stackDump(
		"same RUNNABLE app.Loop.spin:10;app.Main.run:5",
		"line RUNNABLE app.Loop.spin:10;app.Main.run:6", // a line below the top
		"deep RUNNABLE app.Loop.spin:10;app.Main.run:5;app.Main.main:1",
		"state BLOCKED app.Loop.spin:10;app.Main.run:5",
	)))
	s := a.Summary()
	var stuck []string
	for _, st := range s.StuckThreads {
		stuck = append(stuck, st.Thread)
	}
	assert.Equal(t, []string{"same"}, stuck)
}

// TestStackGroupsSplitOnAnyDifference checks the identical-stack table:
// threads group when state and every frame match, whether or not the
// parser shares their frames.
func TestStackGroupsSplitOnAnyDifference(t *testing.T) {
	a := New()
	a.Add(dumpSnap(t, 0, stackDump(
		"w1 WAITING app.Pool.take:7;app.Worker.run:3",
		"w2 WAITING app.Pool.take:7;app.Worker.run:3",
		"w3 WAITING app.Pool.take:7;app.Worker.run:3",
		"x1 WAITING app.Pool.take:8;app.Worker.run:3",
		"x2 WAITING app.Pool.take:8;app.Worker.run:3",
		"r1 RUNNABLE app.Pool.take:7;app.Worker.run:3",
		"r2 RUNNABLE app.Pool.take:7;app.Worker.run:3",
		"single WAITING app.Pool.poll:1;app.Worker.run:3",
	)))
	groups := a.Summary().StackGroups
	require.Len(t, groups, 3)
	assert.Equal(t, 3, groups[0].Threads)
	assert.Equal(t, []string{"w1", "w2", "w3"}, groups[0].Names)
	assert.Equal(t, "WAITING", groups[0].State)
	assert.Equal(t, []string{"app.Pool.take(Pool.java:7)", "app.Worker.run(Worker.java:3)"}, groups[0].Frames)
	byFirst := map[string]StackGroup{}
	for _, g := range groups {
		byFirst[g.Names[0]] = g
	}
	assert.Equal(t, 2, byFirst["x1"].Threads, "one differing line is another group")
	assert.Equal(t, "RUNNABLE", byFirst["r1"].State, "another state is another group")
	assert.Equal(t, 2, byFirst["r1"].Threads)
}

func TestStackHash(t *testing.T) {
	f := func(line int) []threaddump.Frame {
		return []threaddump.Frame{{Class: "a.B", Method: "c", Line: line}, {Class: "a.B", Method: "run", Line: 1}}
	}
	assert.Equal(t, stackHash(f(3)), stackHash(f(3)), "equal frames in other memory")
	assert.NotEqual(t, stackHash(f(3)), stackHash(f(4)))
	assert.NotEqual(t, stackHash(f(3)), stackHash(f(3)[:1]))
	swapped := []threaddump.Frame{f(3)[1], f(3)[0]}
	assert.NotEqual(t, stackHash(f(3)), stackHash(swapped), "order counts")
	split := []threaddump.Frame{{Class: "a", Method: "B.c", Line: 3}, {Class: "a.B", Method: "run", Line: 1}}
	assert.NotEqual(t, stackHash(f(3)), stackHash(split))
}
