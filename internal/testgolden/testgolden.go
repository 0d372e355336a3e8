// Package testgolden compares test output with golden files under
// testdata/, and rewrites them when the package's -update flag is set.
package testgolden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Check compares got with the file at path, or writes it there when update
// is set. refresh is the command that rewrites the golden, for the message
// a difference prints.
func Check(t testing.TB, path string, got []byte, update bool, refresh string) {
	t.Helper()
	if update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file %s missing: run %s", path, refresh)
	assert.Equal(t, string(want), string(got), "output differs from %s (%s refreshes it)", path, refresh)
}
