//go:build linux && amd64

package testservers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// A server's labels are checked on one look at it: its threads read from
// /proc, each blocked thread's stack unwound as ctprof's sampler does
// (dropped when the thread moved meanwhile), labelled, and logged beside
// gdb's backtrace of the same thread taken right after, so that a reader
// can see each role's frames in both (a thread may have moved between
// the two).

// rlThread is one thread of a look at a server.
type rlThread struct {
	procfs.Thread
	label Label
	gdb   []string // gdb's frames, innermost first ("??" when unnamed)
}

// rlLook reads srv's threads once and labels them.
func rlLook(t *testing.T, srv *Server) []rlThread {
	t.Helper()
	fs := procfs.NewFS("/proc")
	tr, err := fs.NewThreadReader(srv.PID)
	require.NoError(t, err)
	defer tr.Close()
	threads, err := tr.Read(nil)
	require.NoError(t, err)
	u := symbolize.NewUnwinder(fs.Target(srv.PID))
	defer u.Close()
	mem := fs.NewMemReader(srv.PID)
	defer mem.Close()
	for i := range threads {
		th := &threads[i]
		if th.Syscall < 0 || th.SyscallSP == 0 || th.SyscallPC == 0 {
			continue
		}
		th.Stack = u.Unwind(symbolize.Regs{PC: th.SyscallPC, SP: th.SyscallSP}, mem, symbolize.MaxStackFrames)
		if !tr.StillBlocked(th) {
			th.Stack = nil // it moved: the frames may mix two moments
		}
	}
	out := make([]rlThread, len(threads))
	for i, th := range threads {
		l := Label{Verdict: Running, Role: "running"}
		if th.State != 'R' {
			l = srv.Label(&threads[i])
		}
		out[i] = rlThread{Thread: th, label: l}
	}
	return out
}

var (
	rlGDBThreadLine = regexp.MustCompile(`^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)`)
	rlGDBFrameLine  = regexp.MustCompile(`^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(`)
)

// rlGDB is gdb's `thread apply all bt` of pid: each thread's frame
// names by tid.
func rlGDB(t *testing.T, pid int) map[int][]string {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Fatalf("gdb is not installed: apt-get install gdb (scripts/deps.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-p", strconv.Itoa(pid), "-ex", "thread apply all bt")
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "gdb: %s", b)
	stacks := map[int][]string{}
	tid := 0
	for _, line := range strings.Split(string(b), "\n") {
		if m := rlGDBThreadLine.FindStringSubmatch(line); m != nil {
			tid, _ = strconv.Atoi(m[1])
			continue
		}
		if m := rlGDBFrameLine.FindStringSubmatch(line); m != nil && tid != 0 {
			stacks[tid] = append(stacks[tid], m[1])
		}
	}
	require.NotEmpty(t, stacks, "gdb printed no backtrace: %s", b)
	return stacks
}

// rlCount counts the threads of a look by verdict and role.
func rlCount(look []rlThread) map[Label]int {
	n := map[Label]int{}
	for _, th := range look {
		n[th.label]++
	}
	return n
}

// rlLog logs a table of the roles of a look, an example thread of each
// with its unwound stack and gdb's, and every unlabelled thread.
func rlLog(t *testing.T, name string, look []rlThread) {
	t.Helper()
	byLabel := map[Label][]rlThread{}
	for _, th := range look {
		byLabel[th.label] = append(byLabel[th.label], th)
	}
	labels := make([]Label, 0, len(byLabel))
	for l := range byLabel {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		if labels[i].Verdict != labels[j].Verdict {
			return labels[i].Verdict < labels[j].Verdict
		}
		return labels[i].Role < labels[j].Role
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d threads\n", name, len(look))
	for _, l := range labels {
		ths := byLabel[l]
		verdict, role := l.Verdict, l.Role
		if verdict == "" {
			verdict = "UNKNOWN"
		}
		fmt.Fprintf(&b, "%4d  %-10s %s\n", len(ths), verdict, role)
		examples := ths[:1]
		if l.Verdict == "" {
			examples = ths
		}
		for _, th := range examples {
			fmt.Fprintf(&b, "        tid %d %q state %c syscall %d args %#x\n        ctprof: %s\n        gdb:    %s\n",
				th.TID, th.Name, th.State, th.Syscall, th.SyscallArgs[:3], rlStackNames(th.Stack), strings.Join(th.gdb, " ← "))
		}
	}
	t.Log(b.String())
}

func rlStackNames(st []symbolize.StackFrame) string {
	if st == nil {
		return "(not unwound)"
	}
	n := make([]string, len(st))
	for i, f := range st {
		n[i] = f.Name()
	}
	return strings.Join(n, " ← ")
}

// rlCheck checks what every look must satisfy: each label is one of
// the verdicts with a role, and few threads are unknown.
func rlCheck(t *testing.T, look []rlThread, maxUnknown float64) {
	t.Helper()
	valid := map[string]bool{Running: true, Idle: true, Contention: true, Sleep: true, IO: true}
	unknown := 0
	for _, th := range look {
		if th.label.Verdict == "" {
			unknown++
			continue
		}
		assert.True(t, valid[th.label.Verdict], "tid %d: verdict %q", th.TID, th.label.Verdict)
		assert.NotEmpty(t, th.label.Role, "tid %d: a verdict without a role", th.TID)
	}
	assert.LessOrEqual(t, float64(unknown), maxUnknown*float64(len(look)), "%d of %d threads unlabelled", unknown, len(look))
}

// rlMaxUnknown is the share of a look's threads the rules may leave
// unknown: a thread that moved while its stack was read has none, and a
// look of 27 threads caught 4 so under load.
const rlMaxUnknown = 0.2

// rlUnknown is the share of a look's threads left unknown.
func rlUnknown(look []rlThread) float64 {
	n := 0
	for _, th := range look {
		if th.label.Verdict == "" {
			n++
		}
	}
	return float64(n) / float64(max(len(look), 1))
}

// rlMaxLooks bounds the looks rlLookUntil takes, 200 ms apart: one look
// is one instant, and a listener that runs at that instant, or a load
// between two bursts, misses a role (Apache's listener was running in
// 1 look of 3).
const rlMaxLooks = 25

// rlLookUntil looks at srv until ok accepts a look with few threads
// unknown (at most rlMaxLooks looks), then takes gdb's
// backtraces once (after the looks: gdb's attach interrupts the threads'
// system calls, which then show as restart_syscall), logs the last look
// beside them and returns it.
func rlLookUntil(t *testing.T, srv *Server, ok func([]rlThread) bool) []rlThread {
	t.Helper()
	var look []rlThread
	for i := 0; i < rlMaxLooks; i++ {
		look = rlLook(t, srv)
		if ok(look) && rlUnknown(look) <= rlMaxUnknown/2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	gdb := rlGDB(t, srv.PID)
	for i := range look {
		look[i].gdb = gdb[look[i].TID]
	}
	rlLog(t, srv.Name, look)
	return look
}
