package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// nativeLock is what the native stack tests read of a lock's JSON.
type nativeLock struct {
	Symbol     *string `json:"symbol"`
	Class      string  `json:"class"`
	WaitFrame  *string `json:"wait_frame"`
	WaitFrames []struct {
		Frame   string `json:"frame"`
		Samples int    `json:"samples"`
	} `json:"wait_frames"`
	Holder *struct {
		Thread string   `json:"thread"`
		TID    int      `json:"tid"`
		Runs   string   `json:"runs"`
		Stack  []string `json:"stack"`
	} `json:"holder"`
}

// ctprof attach on a native program whose threads block in known call
// chains (testdata/c/stacks.c: heap-N in worker_loop → post_entry →
// pthread_mutex_lock on a heap mutex, global-N in global_loop →
// take_global on a global one, both held by "holder" asleep in
// holder_main): the lock table, the findings, the text and every stack
// output say where the waiters wait and what the holder's stack is,
// unwound from /proc without stopping the program.
func TestAttachNativeStacksEverywhere(t *testing.T) {
	p := testnative.Start(t, "stacks", "3")
	p.WaitOutput(t, 30e9, "READY")
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "3", "--interval", "200ms", "--format", "json",
		"--html", out("r.html"), "--pprof", out("r.pb.gz"), "--folded", out("r.folded"), "--speedscope", out("r.speedscope.json"))
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "has no stacks")

	var doc struct {
		Locks    []nativeLock `json:"locks"`
		Findings []struct {
			Summary  string   `json:"summary"`
			Evidence []string `json:"evidence"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	sites := map[string]string{}
	for _, l := range doc.Locks {
		if l.WaitFrame == nil {
			continue
		}
		sites[l.Class] = *l.WaitFrame
		require.NotNil(t, l.Holder, "%s: the mutex names its holder", l.Class)
		assert.Equal(t, "holder", l.Holder.Thread)
		assert.Contains(t, l.Holder.Runs, "at holder_main ← holder_thread")
		assert.Contains(t, strings.Join(l.Holder.Stack, " "), "holder_main holder_thread")
		// Every sighting of a waiter had its stack: 3 waiters, 3 samples.
		require.Len(t, l.WaitFrames, 1, "%s: %+v", l.Class, l.WaitFrames)
		assert.Equal(t, 9, l.WaitFrames[0].Samples, l.Class)
	}
	assert.Equal(t, "post_entry ← worker_loop", sites[heapClass(t, doc.Locks)], "%v", sites)
	assert.Equal(t, "take_global ← global_loop", sites["global_mutex"], "%v", sites)

	hot := 0
	for _, f := range doc.Findings {
		if strings.Contains(f.Summary, " in post_entry ← worker_loop") || strings.Contains(f.Summary, " in take_global ← global_loop") {
			hot++
			assert.Contains(t, strings.Join(f.Evidence, "\n"), "the holder's stack at that sample: ")
		}
	}
	assert.Equal(t, 2, hot, "%+v", doc.Findings)

	folded := readString(t, out("r.folded"))
	assert.Contains(t, folded, "worker_loop;post_entry;pthread_mutex_lock;")
	assert.Contains(t, folded, "global_loop;take_global;pthread_mutex_lock;")
	assert.Contains(t, folded, "level_a;level_b;level_c;")
	assert.Contains(t, folded, "cond_outer;cond_inner;")

	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	top, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=blocked", out("r.pb.gz")).CombinedOutput()
	require.NoError(t, err, "%s", top)
	assert.Contains(t, string(top), "post_entry")
	assert.Contains(t, string(top), "take_global")
	assert.NotContains(t, string(top), "cond_inner", "a condition wait is not blocked on a lock")

	var ss struct {
		Shared struct {
			Frames []struct {
				Name string `json:"name"`
			} `json:"frames"`
		} `json:"shared"`
	}
	require.NoError(t, json.Unmarshal([]byte(readString(t, out("r.speedscope.json"))), &ss))
	var names []string
	for _, f := range ss.Shared.Frames {
		names = append(names, f.Name)
	}
	assert.Contains(t, names, "post_entry")
	assert.Contains(t, names, "holder_main")

	page := readString(t, out("r.html"))
	assert.Contains(t, page, "post_entry ← worker_loop")
	assert.Contains(t, page, "holder_main")

	// The text summary's lock detail.
	code, text, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "2", "--interval", "200ms")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, text, "wait site: take_global ← global_loop")
	assert.Contains(t, text, "holder's stack: ")
}

// heapClass is the class of the lock whose waiters wait in post_entry
// (the heap mutex: "[heap]+0x…").
func heapClass(t *testing.T, locks []nativeLock) string {
	t.Helper()
	for _, l := range locks {
		if strings.HasPrefix(l.Class, "[heap]+0x") {
			return l.Class
		}
	}
	t.Fatalf("no heap lock in %+v", locks)
	return ""
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
