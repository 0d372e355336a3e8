package symbolize_test

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

// stacksProgramThreads are the threads of testdata/c/stacks.c (2 waiters
// per mutex) and the system call each blocks in.
var stacksProgramThreads = map[string]int{
	"heap-0": unix.SYS_FUTEX, "heap-1": unix.SYS_FUTEX, "global-0": unix.SYS_FUTEX, "global-1": unix.SYS_FUTEX,
	"deep": sysNanosleepOrClock, "cond": unix.SYS_FUTEX, "holder": sysNanosleepOrClock,
}

// sysNanosleepOrClock marks a thread in nanosleep or clock_nanosleep
// (glibc's nanosleep calls the latter).
const sysNanosleepOrClock = -100

// blockedThreads polls until every named thread of the program is blocked
// in its system call, and returns the threads unwound by u.
func blockedThreads(t *testing.T, pid int, u *symbolize.Unwinder, mem symbolize.StackMemory, want map[string]int) map[string]procfs.Thread {
	t.Helper()
	fs := procfs.NewFS("/proc")
	r, err := fs.NewThreadReader(pid)
	require.NoError(t, err)
	defer r.Close()
	var byName map[string]procfs.Thread
	err = testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		byName = map[string]procfs.Thread{}
		for _, th := range threads {
			byName[th.Name] = th
		}
		for name, sys := range want {
			th, ok := byName[name]
			if !ok {
				return fmt.Errorf("no thread %s", name)
			}
			in := th.Syscall == sys || sys == sysNanosleepOrClock && (th.Syscall == 35 || th.Syscall == 230)
			if !in || th.SyscallPC == 0 {
				return fmt.Errorf("%s in syscall %d", name, th.Syscall)
			}
		}
		procfs.UnwindBlocked(u, threads, mem)
		byName = map[string]procfs.Thread{}
		for _, th := range threads {
			byName[th.Name] = th
		}
		return nil
	})
	require.NoError(t, err)
	return byName
}

// gdbThread is one thread's backtrace as gdb prints it.
type gdbThread struct {
	name   string
	frames []string
}

var (
	gdbThreadLine = regexp.MustCompile(`^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\) "([^"]*)"\)`)
	gdbFrameLine  = regexp.MustCompile(`^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(`)
)

// gdbStacks attaches gdb to pid (it stops the process for the moment it
// takes) and returns each thread's function names, innermost first.
func gdbStacks(t *testing.T, pid int) map[int]gdbThread {
	t.Helper()
	out, err := exec.Command("gdb", "-batch", "-nx", "-p", strconv.Itoa(pid), "-ex", "thread apply all bt").CombinedOutput()
	require.NoError(t, err, "%s", out)
	stacks := map[int]gdbThread{}
	tid := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := sc.Text()
		if m := gdbThreadLine.FindStringSubmatch(l); m != nil {
			tid, _ = strconv.Atoi(m[1])
			stacks[tid] = gdbThread{name: m[2]}
			continue
		}
		if m := gdbFrameLine.FindStringSubmatch(l); m != nil && tid != 0 {
			g := stacks[tid]
			g.frames = append(g.frames, m[1])
			stacks[tid] = g
		}
	}
	return stacks
}

func frameNames(st []symbolize.StackFrame) []string {
	var out []string
	for _, f := range st {
		out = append(out, f.Name())
	}
	return out
}

// normalName is a function's name without the prefixes glibc's aliases
// add ("__GI___lll_lock_wait", "___pthread_mutex_lock"): the unwinder
// names a function by its best alias, gdb by another.
func normalName(n string) string {
	n = strings.TrimPrefix(n, "__GI_")
	return strings.TrimLeft(n, "_")
}

// subsequence says whether every name of ours appears in theirs, in order
// (gdb adds the functions inlined into a frame, which no CFI shows).
func subsequence(ours, theirs []string) bool {
	j := 0
	for _, n := range ours {
		for j < len(theirs) && normalName(theirs[j]) != normalName(n) {
			j++
		}
		if j == len(theirs) {
			return false
		}
		j++
	}
	return true
}

// programFrames are the frames in the program's own binary.
func programFrames(st []symbolize.StackFrame, module string) []string {
	var out []string
	for _, f := range st {
		if f.Module == module {
			out = append(out, f.Name())
		}
	}
	return out
}

// stacksChains are the call chains of testdata/c/stacks.c's threads,
// innermost first, and a libc function each waits under.
var stacksChains = map[string]struct {
	chain []string
	libc  string
}{
	"heap-0":   {[]string{"post_entry", "worker_loop"}, "pthread_mutex_lock"},
	"heap-1":   {[]string{"post_entry", "worker_loop"}, "pthread_mutex_lock"},
	"global-0": {[]string{"take_global", "global_loop"}, "pthread_mutex_lock"},
	"global-1": {[]string{"take_global", "global_loop"}, "pthread_mutex_lock"},
	"deep":     {[]string{"level_c", "level_b", "level_a", "deep_main"}, "nanosleep"},
	"cond":     {[]string{"cond_inner", "cond_outer", "cond_main"}, "pthread_cond_wait"},
	"holder":   {[]string{"holder_main", "holder_thread"}, "nanosleep"},
}

// TestUnwindStacksMatchGDB unwinds the blocked threads of stacks.c built
// -O0, -O1 and -O2 without stopping them, and compares each stack with
// gdb's backtrace of the same thread: the program's frames exactly, and
// every frame in gdb's order. The "nocfi" build has no call-frame
// information for the program's functions but keeps frame pointers (as
// JIT code may): its frames are unwound by rbp, once libc's CFI says
// where it was saved, or by the stack scan. The "debug_frame" build has
// its functions' CFI in .debug_frame only (.eh_frame has the C
// runtime's).
func TestUnwindStacksMatchGDB(t *testing.T) {
	builds := map[string][]string{
		"-O0": {"-O0"}, "-O1": {"-O1"}, "-O2": {"-O2"},
		"nocfi":       {"-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g0"},
		"debug_frame": {"-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	}
	for _, build := range []string{"-O0", "-O1", "-O2", "nocfi", "debug_frame"} {
		t.Run(build, func(t *testing.T) {
			p := testnative.StartWith(t, testnative.Options{Flags: builds[build]}, "stacks")
			fs := procfs.NewFS("/proc")
			u := symbolize.NewUnwinder(fs.Target(p.PID))
			defer u.Close()
			mem := fs.NewMemReader(p.PID)
			defer mem.Close()
			byName := blockedThreads(t, p.PID, u, mem, stacksProgramThreads)
			g := gdbStacks(t, p.PID)
			for name, want := range stacksChains {
				th := byName[name]
				got := frameNames(th.Stack)
				gdb := g[th.TID]
				assert.Equal(t, want.chain, programFrames(th.Stack, "stacks"), "%s: ours %v, gdb %v", name, got, gdb.frames)
				assert.True(t, subsequence(got, gdb.frames), "%s: ours %v not in gdb's order %v", name, got, gdb.frames)
				assert.GreaterOrEqual(t, len(got), len(want.chain)+3, "%s: %v", name, got)
				if len(got) == 0 {
					continue
				}
				// glibc's own frames, tolerantly: where it waits, and the
				// thread's first frames.
				first := slices.Index(got, want.chain[0])
				require.Positive(t, first, "%s: %v", name, got)
				assert.True(t, slices.ContainsFunc(got[:first], func(n string) bool { return strings.Contains(n, want.libc) }), "%s: no %s in %v", name, want.libc, got)
				if want.libc == "pthread_mutex_lock" {
					assert.Contains(t, got[0], "lll_lock_wait", name)
				}
				assert.Equal(t, []string{"start_thread", "clone3"}, got[len(got)-2:], name)
				for _, f := range th.Stack {
					assert.NotZero(t, f.PC)
					assert.NotEmpty(t, f.Function, "%s: every frame has a symbol: %v", name, got)
				}
			}
			// The main thread, in pause: down to _start, whose CFI ends
			// the stack.
			main := frameNames(byName["stacks"].Stack)
			assert.Contains(t, main, "main")
			if len(main) > 0 {
				assert.Equal(t, "_start", main[len(main)-1], "%v", main)
			}
			st := u.Stats()
			t.Logf("%+v", st)
			assert.Equal(t, 1, st.SignalFrames, "the signal thread's handler")
			switch build {
			case "-O2", "debug_frame":
				assert.Equal(t, 1, st.ScanFrames+st.FPFrames, "-O2: every frame by CFI but the jit thread's in its anonymous code")
			case "nocfi":
				assert.Positive(t, st.ScanFrames+st.FPFrames, "nocfi: the program's frames without CFI")
			}
			assert.Equal(t, len(stacksChains)+3, st.Stacks, "the jit and signal threads and the main thread in pause too")
		})
	}
}

// TestUnwindThroughJITCode unwinds the thread of stacks.c that calls
// through code it copied into anonymous executable memory, as a JIT's
// code is: no symbol and no CFI there, so its caller is found by the
// frame pointer or the stack scan (an ff /2 call before the return
// address), and the frame is named by its mapping and offset.
func TestUnwindThroughJITCode(t *testing.T) {
	for _, build := range []string{"-O0", "-O2"} {
		t.Run(build, func(t *testing.T) {
			p := testnative.StartWith(t, testnative.Options{Flags: []string{build}}, "stacks")
			fs := procfs.NewFS("/proc")
			u := symbolize.NewUnwinder(fs.Target(p.PID))
			defer u.Close()
			mem := fs.NewMemReader(p.PID)
			defer mem.Close()
			byName := blockedThreads(t, p.PID, u, mem, map[string]int{"jit": sysNanosleepOrClock})
			got := frameNames(byName["jit"].Stack)
			i := slices.Index(got, "jit_callee")
			require.Positive(t, i, "%v", got)
			assert.Equal(t, []string{"jit_callee", "anonymous memory+0x50", "jit_main", "start_thread", "clone3"}, got[i:])
			assert.Contains(t, got[i-1], "nanosleep", "%v", got)
			st := u.Stats()
			assert.Positive(t, st.FPFrames+st.ScanFrames, "%+v", st)
		})
	}
}

// TestUnwindThroughSignalHandler unwinds stacks.c's thread blocked in a
// signal handler running on an alternate stack: through the handler's
// frames, glibc's trampoline (__restore_rt), and from the registers the
// kernel saved in the signal frame, back on the thread's own stack, the
// code the signal interrupted. gdb's backtrace has the program's frames
// in the same order.
func TestUnwindThroughSignalHandler(t *testing.T) {
	builds := map[string][]string{"-O0": {"-O0"}, "-O2": {"-O2"},
		"nocfi": {"-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-g0"}}
	for _, build := range []string{"-O0", "-O2", "nocfi"} {
		t.Run(build, func(t *testing.T) {
			p := testnative.StartWith(t, testnative.Options{Flags: builds[build]}, "stacks")
			fs := procfs.NewFS("/proc")
			u := symbolize.NewUnwinder(fs.Target(p.PID))
			defer u.Close()
			mem := fs.NewMemReader(p.PID)
			defer mem.Close()
			byName := blockedThreads(t, p.PID, u, mem, map[string]int{"signal": sysNanosleepOrClock})
			th := byName["signal"]
			got := frameNames(th.Stack)
			chain := []string{"in_handler", "on_signal", "signal_inner", "signal_main"}
			assert.Equal(t, chain, programFrames(th.Stack, "stacks"), "%v", got)
			i := slices.Index(got, "on_signal")
			require.Positive(t, i, "%v", got)
			require.Greater(t, len(got), i+1, "%v", got)
			assert.Contains(t, got[i+1], "restore_rt", "%v", got)
			assert.Equal(t, []string{"signal_main", "start_thread", "clone3"}, got[len(got)-3:], "%v", got)
			t.Logf("%v", got)
			assert.Equal(t, 1, u.Stats().SignalFrames)
			g := gdbStacks(t, p.PID)[th.TID]
			assert.True(t, subsequence(chain, g.frames), "gdb %v", g.frames)
		})
	}
}

// TestUnwindStrippedNamesAreStable unwinds a stripped -O2 build twice:
// the program's frames are named by module and offset, the same in both
// runs (ASLR moves the binary, not its offsets), and each offset lies in
// the function the unstripped build names.
func TestUnwindStrippedNamesAreStable(t *testing.T) {
	flags := []string{"-O2"}
	var runs [2]map[string][]string
	for i := range runs {
		p := testnative.StartWith(t, testnative.Options{Flags: flags, Stripped: true}, "stacks")
		fs := procfs.NewFS("/proc")
		u := symbolize.NewUnwinder(fs.Target(p.PID))
		mem := fs.NewMemReader(p.PID)
		byName := blockedThreads(t, p.PID, u, mem, stacksProgramThreads)
		runs[i] = map[string][]string{}
		for name := range stacksChains {
			runs[i][name] = frameNames(byName[name].Stack)
		}
		u.Close()
		mem.Close()
		p.Stop()
	}
	syms := funcSymbols(t, testnative.BuildFlags(t, "stacks", flags...))
	for name, want := range stacksChains {
		assert.Equal(t, runs[0][name], runs[1][name], name)
		var prog []string
		for _, n := range runs[0][name] {
			if off, ok := strings.CutPrefix(n, "stacks+0x"); ok {
				v, err := strconv.ParseUint(off, 16, 64)
				require.NoError(t, err)
				prog = append(prog, syms.name(v-1))
			}
		}
		assert.Equal(t, want.chain, prog, "%s: %v", name, runs[0][name])
		assert.True(t, slices.ContainsFunc(runs[0][name], func(n string) bool { return strings.Contains(n, want.libc) }),
			"%s: libc's frames keep their names: %v", name, runs[0][name])
	}
}

// elfFuncs names addresses by an ELF file's function symbols.
type elfFuncs []elf.Symbol

func funcSymbols(t *testing.T, path string) elfFuncs {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	var out elfFuncs
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			out = append(out, s)
		}
	}
	return out
}

func (fs elfFuncs) name(vaddr uint64) string {
	for _, s := range fs {
		if vaddr >= s.Value && vaddr < s.Value+s.Size {
			return s.Name
		}
	}
	return fmt.Sprintf("?%#x", vaddr)
}

// TestUnwindCXXNamesDemangle unwinds std_mutex.cc's waiters: the C++
// frames are named demangled, as gdb names them.
func TestUnwindCXXNamesDemangle(t *testing.T) {
	p := testnative.Start(t, "std_mutex", "3", "200000")
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	// Two of the three wait on the lock, one sleeps holding it; which
	// changes: wait until some thread waits in a futex.
	var waiter procfs.Thread
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		procfs.UnwindBlocked(u, threads, mem)
		for _, th := range threads {
			if strings.HasPrefix(th.Name, "cxx-") && th.Syscall == unix.SYS_FUTEX && len(th.Stack) > 0 {
				waiter = th
				return nil
			}
		}
		return fmt.Errorf("no waiter")
	}))
	got := frameNames(waiter.Stack)
	gdbOut, err := exec.Command("gdb", "-batch", "-nx", "-p", strconv.Itoa(p.PID), "-ex", "thread apply all bt").CombinedOutput()
	require.NoError(t, err)
	cxx := 0
	for _, f := range waiter.Stack {
		assert.False(t, strings.HasPrefix(f.Function, "_Z"), "mangled: %v", got)
		if f.Module == "std_mutex" && strings.Contains(f.Function, "::") {
			cxx++
			// gdb names a function by its DWARF name, not its symbol's
			// demangling ("main(int, char**)::<lambda()>" for
			// "main::{lambda()#1}"): its scope before the first template
			// argument, and its own name, are in gdb's output.
			n := f.Function
			scope, _, _ := strings.Cut(n, "<")
			own := n[strings.LastIndex(n, "::")+2:]
			own, _, _ = strings.Cut(own, "(")
			assert.Contains(t, string(gdbOut), scope, "%v", got)
			assert.Contains(t, string(gdbOut), "::"+own+"(", "%v", got)
		}
	}
	assert.Positive(t, cxx, "C++ frames of the program: %v", got)
	assert.True(t, slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, "pthread_mutex_lock") }), "%v", got)
	t.Logf("%v", got)
}
