package procfs

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// The files PROCMAP_QUERY lists must be the file-backed mappings of the
// maps text, in the same order, and CheckJVM through it must say what the
// maps text says: for a JVM of a few hundred threads (two anonymous
// mappings each), a native process and ctprof's own.
func TestMappedFilesMatchTheMapsText(t *testing.T) {
	fs := NewFS("/proc")
	if err := fs.eachMappedFile(os.Getpid(), func(Mapping) bool { return false }); err == errNoProcmapQuery {
		t.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11); CheckJVM reads the maps text")
	}
	jvm := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "300")
	native := testnative.Start(t, "many_threads", "20")
	for _, tc := range []struct {
		name string
		pid  int
		jvm  bool
	}{
		{"JVM", jvm.PID, true},
		{"native", native.PID, false},
		{"ctprof", os.Getpid(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A JVM maps libraries as it starts; the lists are compared
			// once two reads agree.
			var got, want []string
			for try := 0; try < 20; try++ {
				maps, err := fs.Maps(tc.pid)
				require.NoError(t, err)
				want = want[:0]
				for _, m := range maps {
					if m.Inode != 0 && len(m.Path) > 0 {
						want = append(want, m.Path)
					}
				}
				got = got[:0]
				require.NoError(t, fs.eachMappedFile(tc.pid, func(m Mapping) bool {
					got = append(got, m.Path)
					return true
				}))
				if assert.ObjectsAreEqual(want, got) {
					break
				}
			}
			require.NotEmpty(t, got)
			assert.Equal(t, want, got)

			isJVM, err := fs.CheckJVM(tc.pid)
			require.NoError(t, err)
			assert.Equal(t, tc.jvm, isJVM)
			libs, err := fs.JVMLibraries(tc.pid)
			require.NoError(t, err)
			fromText, err := fs.jvmLibrariesInMapsText(tc.pid)
			require.NoError(t, err)
			assert.Equal(t, fromText, libs)
			assert.Equal(t, tc.jvm, libs.HotSpot)
			assert.False(t, libs.OpenJ9)
			if tc.jvm {
				assert.True(t, strings.HasSuffix(libs.LibJVM.Path, "/libjvm.so"), libs.LibJVM.Path)
				assert.Zero(t, libs.LibJVM.Offset, "libjvm.so's first mapping")
			}
		})
	}
	_, err := fs.CheckJVM(1 << 22)
	assert.ErrorIs(t, err, ErrProcessGone)
}

// Resolving through PROCMAP_QUERY must name every address as resolving
// from the maps text does: the start, middle and last byte of every
// mapping of a native process with data symbols (its mutex and condition
// variable, its .bss) and of a JVM (libjvm.so's data, thread stacks,
// the heap, anonymous memory).
func TestResolveByQueryMatchesTheMapsText(t *testing.T) {
	fs := NewFS("/proc")
	if err := fs.eachMappedFile(os.Getpid(), func(Mapping) bool { return false }); err == errNoProcmapQuery {
		t.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	native := testnative.Start(t, "mutex_contention", "2", "1", "3000")
	jvm := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "50")
	for _, tc := range []struct {
		name string
		pid  int
	}{{"native", native.PID}, {"JVM", jvm.PID}} {
		t.Run(tc.name, func(t *testing.T) {
			byQuery := fs.NewSymbolizer(tc.pid)
			defer byQuery.Close()
			require.NoError(t, byQuery.Prepare())
			require.NotNil(t, byQuery.query, "PROCMAP_QUERY in use")
			if tc.name == "JVM" {
				// The sampler loads libjvm.so's symbols during the dump:
				// addresses in it must then resolve as they would have.
				libs, err := fs.JVMLibraries(tc.pid)
				require.NoError(t, err)
				byQuery.Preload(libs.LibJVM)
				require.Contains(t, byQuery.modules, libs.LibJVM.Path)
			}
			fromText := fs.NewSymbolizer(tc.pid)
			fromText.noQuery = true
			require.NoError(t, fromText.Prepare())
			require.Nil(t, fromText.query)

			symbols := 0
			for _, m := range fromText.maps {
				if m.Path == "[vsyscall]" {
					// The kernel's gate page: listed in the maps text but
					// no mapping of the process's own, read-only code no
					// futex lies in. PROCMAP_QUERY does not find it.
					continue
				}
				for _, addr := range []uint64{m.Start, m.Start + (m.End-m.Start)/2, m.End - 1} {
					want, err := fromText.Resolve(addr)
					require.NoError(t, err)
					got, err := byQuery.Resolve(addr)
					require.NoError(t, err)
					if !assert.Equal(t, want, got, "%#x in %+v", addr, m) {
						return
					}
					if got.Symbol != "" {
						symbols++
					}
				}
			}
			assert.Positive(t, symbols, "some addresses fall on data symbols")
		})
	}
}

// A target waiting on more addresses than queryBudget is served from the
// maps text from then on, with the same answers.
func TestManyAddressesTurnToTheMapsText(t *testing.T) {
	fs := NewFS("/proc")
	if err := fs.eachMappedFile(os.Getpid(), func(Mapping) bool { return false }); err == errNoProcmapQuery {
		t.Skip("this kernel has no PROCMAP_QUERY (Linux 6.11)")
	}
	defer func(b int) { queryBudget = b }(queryBudget)
	queryBudget = 10
	p := testnative.Start(t, "many_threads", "30")
	maps, err := fs.Maps(p.PID)
	require.NoError(t, err)
	sym := fs.NewSymbolizer(p.PID)
	defer sym.Close()
	fromText := fs.NewSymbolizer(p.PID)
	fromText.noQuery = true
	n := 0
	for _, m := range maps {
		if m.Path == "[vsyscall]" {
			continue
		}
		if n == queryBudget {
			assert.NotNil(t, sym.query, "queries until the budget is spent")
		}
		got, err := sym.Resolve(m.Start)
		require.NoError(t, err)
		want, err := fromText.Resolve(m.Start)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		n++
	}
	require.Greater(t, n, 2*queryBudget)
	assert.Nil(t, sym.query, "the maps text serves past the budget")
	assert.True(t, sym.noQuery)
}
