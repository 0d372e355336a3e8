package symbolize_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openFiles counts this process's descriptors on path.
func openFiles(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == path {
			n++
		}
	}
	return n
}

// A module stays open while names may be read from it, and Close closes
// it; a Resolve after Close opens it again and names the same.
func TestSymbolizerCloseClosesModules(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "2", "1", "3000")
	fs := procfs.NewFS("/proc")
	maps, err := fs.Maps(p.PID)
	require.NoError(t, err)
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.PID))
	require.NoError(t, err)
	var first symbolize.Mapping
	for _, m := range maps {
		if m.Path == exe {
			first = m
			break
		}
	}
	require.Equal(t, exe, first.Path)
	s := symbolize.NewSymbolizer(fs.Target(p.PID))
	addr, err := s.SymbolAddress(first, "contended_mutex")
	require.NoError(t, err)
	require.NotZero(t, addr)
	require.NoError(t, s.Close())
	require.Zero(t, openFiles(t, exe))

	l, err := s.Resolve(addr)
	require.NoError(t, err)
	assert.Equal(t, "contended_mutex", l.Symbol)
	assert.Equal(t, 1, openFiles(t, exe), "kept open for names")
	require.NoError(t, s.Close())
	assert.Zero(t, openFiles(t, exe))
	s = symbolize.NewSymbolizer(fs.Target(p.PID))
	defer s.Close()
	l, err = s.Resolve(addr + 4)
	require.NoError(t, err)
	assert.Equal(t, "contended_mutex+0x4", l.Symbol+"+0x"+strconv.FormatUint(l.SymbolOffset, 16))
}

// The kernel merges an anonymous mapping made right after a binary's .bss
// into the .bss mapping (same permissions): a JDK 17 JVM's C heap after a
// small library's .bss once named a HotSpot lock "libjsvml.so". Past the
// binary's loaded image the memory is anonymous, through the maps text
// and through PROCMAP_QUERY alike; the binary's own .bss is still its.
func TestAnonymousMemoryMergedIntoBssIsNotTheBinarys(t *testing.T) {
	fs := procfs.NewFS("/proc")
	pid := os.Getpid()
	probe := uint64(uintptr(unsafe.Pointer(&bssProbe[0])))
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	maps, err := fs.Maps(pid)
	require.NoError(t, err)
	var bss symbolize.Mapping
	for i, m := range maps {
		if probe >= m.Start && probe < m.End {
			require.Empty(t, m.Path, "bssProbe in an anonymous mapping: %+v", m)
			require.Positive(t, i)
			require.Equal(t, maps[i-1].End, m.Start, "the .bss mapping follows the data segment")
			bss = m
		}
	}
	require.NotZero(t, bss.End, "no mapping holds bssProbe")
	// Room right after the .bss for one more mapping, merged into it.
	extra, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(bss.End), 1<<16, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if errno != 0 {
		t.Skipf("the address after the .bss (%#x) is taken: %v", bss.End, errno)
	}
	defer unix.Syscall(unix.SYS_MUNMAP, extra, 1<<16, 0)
	require.Equal(t, uintptr(bss.End), extra)
	maps, err = fs.Maps(pid)
	require.NoError(t, err)
	merged := false
	for _, m := range maps {
		merged = merged || (m.Start == bss.Start && m.End == bss.End+1<<16)
	}
	require.True(t, merged, "the kernel did not merge the mappings; the test proves nothing")

	for _, noQuery := range []bool{false, true} {
		sym := symbolize.NewSymbolizer(fs.Target(pid))
		if noQuery {
			sym.QueryOff()
		}
		l, err := sym.Resolve(probe)
		require.NoError(t, err)
		assert.Equal(t, exe, l.ModulePath, "PROCMAP_QUERY off: %v: %+v", noQuery, l)
		l, err = sym.Resolve(bss.End + 0x100)
		require.NoError(t, err)
		assert.Empty(t, l.ModulePath, "PROCMAP_QUERY off: %v: %+v", noQuery, l)
		assert.Equal(t, "anonymous memory", l.Module, "%+v", l)
		sym.Close()
	}
}

// bssProbe lies in this test binary's .bss (.noptrbss).
var bssProbe [64]byte
