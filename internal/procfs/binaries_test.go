package procfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// mappingOf describes path as a maps line would: its device and inode.
func mappingOf(t *testing.T, path string) symbolize.Mapping {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return symbolize.Mapping{Start: 0x1000, End: 0x2000, Perms: "r--p", Path: path, Inode: st.Ino,
		DevMajor: unix.Major(st.Dev), DevMinor: unix.Minor(st.Dev)}
}

// The file behind a mapping is opened only if it is still the file that
// was mapped: a path its owner replaced by a link (to a file ctprof, as
// root, could read and the owner could not), by another file, or by a
// FIFO (whose open would block) is refused, without blocking.
func TestOpenMappedRefusesAnythingButTheMappedFile(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libapp.so")
	require.NoError(t, os.WriteFile(lib, []byte("the mapped library"), 0o644))
	m := mappingOf(t, lib)
	self := os.Getpid()
	// A mapping keeps its file alive, so no new file gets its inode.
	mapped, err := os.Open(lib)
	require.NoError(t, err)
	defer mapped.Close()

	f, err := openMapped(NewFS("/proc"), self, m)
	require.NoError(t, err)
	b := make([]byte, 64)
	n, _ := f.Read(b)
	f.Close()
	assert.Equal(t, "the mapped library", string(b[:n]))

	other := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(other, []byte("not for the target"), 0o600))
	for name, plant := range map[string]func() error{
		"a link to another file":    func() error { return os.Symlink(other, lib) },
		"a link to a host path":     func() error { return os.Symlink("/etc/passwd", lib) },
		"another file in its place": func() error { return os.WriteFile(lib, []byte("impostor"), 0o644) },
		"a FIFO":                    func() error { return unix.Mkfifo(lib, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.Remove(lib))
			require.NoError(t, plant())
			_, err := openMapped(NewFS("/proc"), self, m)
			assert.ErrorIs(t, err, errNotMapped)
		})
	}
}
