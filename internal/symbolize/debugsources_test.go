package symbolize_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/debuginfod"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testdebuginfod"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Stripped programs whose symbols live elsewhere, as in production: in a
// debug file their .gnu_debuglink names, in their MiniDebugInfo, and on a
// debuginfod server. Each test builds testdata/c/stacks.c, makes the
// stripped binary and its debug data with binutils (and xz), runs the
// binary from a directory of its own (a new file: no unwinder has its
// tables cached) and checks that the deep chain's frames are named by
// function, where the stripped binary alone gives module+offset.

// tool finds a program the test needs (make deps installs them).
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require.NoError(t, err, "%s is needed (make deps installs it)", name)
	return p
}

func runTool(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
}

// deepChain unwinds the stacks program running from bin and returns the
// names of its "deep" thread's frames.
func deepChain(t *testing.T, bin string) []string {
	t.Helper()
	return frameNames(deepStack(t, bin))
}

// deepStack unwinds the stacks program running from bin and returns its
// "deep" thread's stack.
func deepStack(t *testing.T, bin string) []symbolize.StackFrame {
	t.Helper()
	p := testnative.StartWith(t, testnative.Options{Binary: bin}, "stacks")
	defer p.Stop()
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	return blockedThreads(t, p.PID, u, mem, stacksProgramThreads)["deep"].Stack
}

// strippedWithDebugFile builds stacks, and in a fresh directory the
// stripped binary and the full build's debug file (objcopy
// --only-keep-debug); it returns the directory and the binary's name.
func strippedWithDebugFile(t *testing.T) (dir, full string) {
	t.Helper()
	full = testnative.Build(t, "stacks")
	dir = t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	runTool(t, dir, "objcopy", "--only-keep-debug", full, "stacks.debug")
	return dir, full
}

func TestStrippedBinaryNamedThroughItsDebugLink(t *testing.T) {
	dir, full := strippedWithDebugFile(t)
	runTool(t, dir, "objcopy", "--strip-all", "--add-gnu-debuglink=stacks.debug", full, "stacks")
	chain := deepChain(t, filepath.Join(dir, "stacks"))
	assert.Contains(t, chain, "level_c", "named from the debug file beside it: %v", chain)

	// In the binary's .debug/ as well.
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".debug"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(dir, "stacks.debug"), filepath.Join(dir, ".debug", "stacks.debug")))
	require.NoError(t, os.Rename(filepath.Join(dir, "stacks"), filepath.Join(dir, "stacks2"))) // a new path: no cached tables
	chain = deepChain(t, filepath.Join(dir, "stacks2"))
	assert.Contains(t, chain, "level_c", "named from .debug/: %v", chain)
}

// A debug file of another build under the linked name is not taken: its
// build-id differs, and its names would be wrong.
func TestDebugLinkToAnotherBuildIsRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	full := testnative.Build(t, "stacks")
	other := testnative.BuildFlags(t, "stacks", "-O2")
	runTool(t, dir, "objcopy", "--only-keep-debug", full, "stacks.debug")
	runTool(t, dir, "objcopy", "--strip-all", "--add-gnu-debuglink=stacks.debug", other, "stacks")
	chain := deepChain(t, filepath.Join(dir, "stacks"))
	assert.NotContains(t, chain, "level_c", "%v", chain)
	assert.True(t, strings.HasPrefix(chain[len(chain)/2], "stacks+0x") || strings.Contains(strings.Join(chain, " "), "stacks+0x"), "module+offset: %v", chain)
}

// MiniDebugInfo as Fedora builds it: the function symbols of the full
// build, without DWARF, xz-compressed into .gnu_debugdata of the stripped
// binary.
func TestStrippedBinaryNamedFromMiniDebugInfo(t *testing.T) {
	dir, full := strippedWithDebugFile(t)
	runTool(t, dir, "objcopy", "--strip-debug", "stacks.debug", "mini")
	runTool(t, dir, "xz", "-k", "mini")
	runTool(t, dir, "strip", "-o", "stacks", full)
	runTool(t, dir, "objcopy", "--add-section", ".gnu_debugdata=mini.xz", "stacks")
	f, err := elf.Open(filepath.Join(dir, "stacks"))
	require.NoError(t, err)
	assert.Nil(t, f.SectionByType(elf.SHT_SYMTAB), "stripped")
	assert.NotNil(t, f.Section(".gnu_debugdata"))
	f.Close()
	chain := deepChain(t, filepath.Join(dir, "stacks"))
	assert.Contains(t, chain, "level_c", "named from the MiniDebugInfo: %v", chain)
}

// A real debuginfod server (elfutils', Debian's package debuginfod) serves
// the debug file of a stripped binary that has no other: the frames are
// module+offset until the file arrives in the background, and named by
// function after (and the lock's data symbol too); a server that has no
// file for it leaves it so, and says why once.
func TestStrippedBinaryNamedByDebuginfod(t *testing.T) {
	dir, full := strippedWithDebugFile(t)
	served := t.TempDir()
	require.NoError(t, os.Rename(filepath.Join(dir, "stacks.debug"), filepath.Join(served, "stacks.debug")))
	runTool(t, dir, "strip", "-o", "stacks", full)
	f, err := elf.Open(filepath.Join(dir, "stacks"))
	require.NoError(t, err)
	id := symbolize.BuildID(f)
	f.Close()
	require.NotEmpty(t, id)

	url := testdebuginfod.Start(t, served)
	testdebuginfod.WaitServed(t, url, id)
	cache := t.TempDir()
	c := debuginfod.New(debuginfod.Options{URLs: []string{url}, CacheDir: cache, Timeout: 10 * time.Second, Verify: symbolize.VerifyDebugFile})
	defer c.Close()
	symbolize.SetDebuginfod(c)
	defer symbolize.SetDebuginfod(nil)

	p := testnative.StartWith(t, testnative.Options{Binary: filepath.Join(dir, "stacks")}, "stacks")
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	threads := blockedThreads(t, p.PID, u, mem, stacksProgramThreads)
	first := frameNames(threads["deep"].Stack)
	assert.NotContains(t, first, "level_c", "no names before the file arrives: %v", first)
	lock := threads["global-0"].SyscallArgs[0]
	c.Wait()
	assert.Empty(t, u.Refresh(), "the fetch succeeded")
	after := frameNames(blockedThreads(t, p.PID, u, mem, stacksProgramThreads)["deep"].Stack)
	assert.Contains(t, after, "level_c", "named from debuginfod's file: %v", after)
	l, err := sym.Resolve(lock)
	require.NoError(t, err)
	assert.Equal(t, "global_mutex", l.Symbol, "the lock's data symbol from debuginfod's file: %+v", l)
	cached, err := os.ReadDir(filepath.Join(cache, id))
	require.NoError(t, err)
	assert.Len(t, cached, 1, "the file is in the cache")

	// A server without the file: module+offset stays, and the reason is
	// told once.
	empty := testdebuginfod.Start(t, t.TempDir())
	c2 := debuginfod.New(debuginfod.Options{URLs: []string{empty}, CacheDir: t.TempDir(), Timeout: 10 * time.Second, Verify: symbolize.VerifyDebugFile})
	defer c2.Close()
	symbolize.SetDebuginfod(c2)
	b, err := os.ReadFile(filepath.Join(dir, "stacks"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stacks-other"), b, 0o755)) // a new file: its tables are read afresh
	p2 := testnative.StartWith(t, testnative.Options{Binary: filepath.Join(dir, "stacks-other")}, "stacks")
	u2 := symbolize.NewUnwinder(fs.Target(p2.PID))
	defer u2.Close()
	mem2 := fs.NewMemReader(p2.PID)
	defer mem2.Close()
	blockedThreads(t, p2.PID, u2, mem2, stacksProgramThreads)
	c2.Wait()
	msgs := u2.Refresh()
	require.Len(t, msgs, 1, "%v", msgs)
	assert.Contains(t, msgs[0], "stacks-other")
	assert.Contains(t, msgs[0], id)
	assert.Contains(t, msgs[0], "404")
	assert.Empty(t, u2.Refresh(), "told once")
	chain := frameNames(blockedThreads(t, p2.PID, u2, mem2, stacksProgramThreads)["deep"].Stack)
	assert.NotContains(t, chain, "level_c")
}

// Frames carry the file and line of their address where the binary (or
// its debug file) has a line table: the deep chain's level_c waits at its
// nanosleep call, which level_b calls from its own line. Without the debug
// file, the stripped binary's frames have no line.
func TestFramesCarryFileAndLine(t *testing.T) {
	lineOf := func(text string) int { return testnative.SourceLine(t, "stacks.c", text) }
	frames := func(bin string) map[string]symbolize.StackFrame {
		out := map[string]symbolize.StackFrame{}
		for _, f := range deepStack(t, bin) {
			out[f.Name()] = f
		}
		return out
	}
	dir, full := strippedWithDebugFile(t)
	for _, tc := range []struct{ name, bin string }{
		{"the binary's own", full},
		{"the debug file's", func() string {
			runTool(t, dir, "objcopy", "--strip-all", "--add-gnu-debuglink=stacks.debug", full, "stacks")
			return filepath.Join(dir, "stacks")
		}()},
	} {
		got := frames(tc.bin)
		assert.Equal(t, "stacks.c:"+strconv.Itoa(lineOf("while (nanosleep(&ts, NULL) != 0)")), got["level_c"].FileLine(), "%s line table: %+v", tc.name, got["level_c"])
		assert.Equal(t, "stacks.c:"+strconv.Itoa(lineOf("level_c(n + 1);")), got["level_b"].FileLine(), tc.name)
	}
	runTool(t, dir, "objcopy", "--strip-all", full, "bare")
	for name, f := range frames(filepath.Join(dir, "bare")) {
		if f.Module == "bare" {
			assert.Empty(t, f.FileLine(), "frame %s of a stripped binary without its debug file", name)
		}
	}
}
