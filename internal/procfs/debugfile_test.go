package procfs

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stripped binary whose symbols a debug package installed under
// /usr/lib/debug/.build-id/ (as Debian's -dbgsym packages do) is named by
// them: the debug file is made from the unstripped build with objcopy
// --only-keep-debug and installed for the test's length (root only; it is
// removed after, with the directories the test made).
func TestStrippedBinaryNamedFromItsDebugFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installing a debug file under /usr/lib/debug needs root")
	}
	objcopy, err := exec.LookPath("objcopy")
	require.NoError(t, err, "objcopy (binutils) is needed to make the debug file")
	full := testnative.Build(t, "lock_convoy")
	stripped := testnative.BuildStripped(t, "lock_convoy")
	f, err := elf.Open(stripped)
	require.NoError(t, err)
	id := symbolize.BuildID(f)
	f.Close()
	require.Len(t, id, 40, "gcc gives the binary a SHA-1 build-id")

	path := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(path); err != nil {
		made := []string{}
		for d := filepath.Dir(path); ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil {
				break
			}
			made = append(made, d)
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		t.Cleanup(func() {
			os.Remove(path)
			for _, d := range made { // deepest first
				os.Remove(d)
			}
		})
		out, err := exec.Command(objcopy, "--only-keep-debug", full, path).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}

	p := testnative.StartWith(t, testnative.Options{Stripped: true}, "lock_convoy", strconv.Itoa(convoyPerGroup), "20000")
	cs := sampleConvoy(t, p)
	glob := cs.byGroup["glob"].Location
	assert.Equal(t, "global_lock", glob.Symbol, "named from the debug file: %+v", glob)
	assert.Regexp(t, `^global_lock \(lock_convoy\+0x[0-9a-f]+\)$`, glob.String())
}
