package procfs

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Lines from a JDK 17 JVM's maps: libstdc++'s data segment is followed by
// its .bss, but the anonymous mapping after the locale file LC_CTYPE is a
// malloc arena where HotSpot keeps its Heap_lock; naming a futex there
// "LC_CTYPE" made it look like a binary's static lock.
func TestModuleRangesBssOnlyAfterDataSegments(t *testing.T) {
	maps, err := parseMaps([]byte(`7f25fe214000-7f25fe217000 rw-p 00214000 fe:00 326789                     /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
7f25fe217000-7f25fe21a000 rw-p 00000000 00:00 0 
7f25fe22a000-7f25fe281000 r--p 00000000 fe:00 316526                     /usr/lib/locale/C.utf8/LC_CTYPE
7f25fe281000-7f25fe300000 rw-p 00000000 00:00 0 
`))
	require.NoError(t, err)
	got := map[string][2]uint64{}
	for _, r := range moduleRanges(maps) {
		got[r.path] = [2]uint64{r.start, r.end}
	}
	assert.Equal(t, map[string][2]uint64{
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30": {0x7f25fe214000, 0x7f25fe21a000},
		"/usr/lib/locale/C.utf8/LC_CTYPE":               {0x7f25fe22a000, 0x7f25fe281000},
	}, got)
}

// bssProbe lies in this test binary's .bss (.noptrbss).
var bssProbe [64]byte

// The kernel merges an anonymous mapping made right after a binary's .bss
// into the .bss mapping (same permissions): a JDK 17 JVM's C heap after a
// small library's .bss once named a HotSpot lock "libjsvml.so". Past the
// binary's loaded image the memory is anonymous, through the maps text
// and through PROCMAP_QUERY alike; the binary's own .bss is still its.
func TestAnonymousMemoryMergedIntoBssIsNotTheBinarys(t *testing.T) {
	fs := NewFS("/proc")
	pid := os.Getpid()
	probe := uint64(uintptr(unsafe.Pointer(&bssProbe[0])))
	exe, err := os.Readlink("/proc/self/exe")
	require.NoError(t, err)
	maps, err := fs.Maps(pid)
	require.NoError(t, err)
	var bss Mapping
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
		sym := fs.NewSymbolizer(pid)
		sym.noQuery = noQuery
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
