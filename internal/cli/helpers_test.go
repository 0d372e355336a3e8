package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func fmtSscan(s string, n *int) (int, error) { return fmt.Sscan(s, n) }

// builtBinary says whether buildCtprof ran, so TestMain cleans up after it.
var builtBinary bool

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary {
		if bin, err := buildCtprof(); err == nil {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}
