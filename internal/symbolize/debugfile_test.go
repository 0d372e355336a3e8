package symbolize

import (
	"debug/elf"
	"testing"

	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A build-id note is read only when it is one: another note, a short or
// a truncated one gives none.
func TestBuildIDOfBinaries(t *testing.T) {
	f, err := elf.Open(testnative.Build(t, "lock_convoy"))
	require.NoError(t, err)
	defer f.Close()
	assert.Len(t, BuildID(f), 40)
	self, err := elf.Open("/proc/self/exe")
	require.NoError(t, err)
	defer self.Close()
	// A Go test binary carries a Go build id, and a GNU one only when
	// linked externally: either way no error, and a hex string or "".
	assert.Regexp(t, `^([0-9a-f]{4,128})?$`, BuildID(self))
}
