// Package testcorpus finds the real-world thread dumps the tests read:
// ../shared/dumps beside the repository, or $CTPROF_SHARED_DUMPS (make test
// sets it). The corpus is not part of the repository, so tests without it
// say so and skip.
package testcorpus

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Path is where the corpus is, or would be.
func Path() string {
	if dir := os.Getenv("CTPROF_SHARED_DUMPS"); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "dumps")
}

// Dir returns the corpus directory, or skips the test, saying why, when it
// is not there.
func Dir(t testing.TB) string {
	t.Helper()
	dir := Path()
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Skipf("real-world dump corpus not found at %s: corpus tests skipped", dir)
	}
	return dir
}
