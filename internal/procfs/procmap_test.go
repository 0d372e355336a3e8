package procfs

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// The files PROCMAP_QUERY lists must be the file-backed mappings of the
// maps text, in the same order, and CheckJVM through it must say what the
// maps text says: for a JVM of a few hundred threads (two anonymous
// mappings each), a native process and ctprof's own.
func TestMappedFilesMatchTheMapsText(t *testing.T) {
	fs := NewFS("/proc")
	if err := fs.eachMappedFile(os.Getpid(), func(symbolize.Mapping) bool { return false }); err == errNoProcmapQuery {
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
				require.NoError(t, fs.eachMappedFile(tc.pid, func(m symbolize.Mapping) bool {
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
