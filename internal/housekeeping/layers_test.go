package housekeeping

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sinks and the analysis read the model (internal/snapshot) and
// nothing that takes it from a target: a report links no attach client, no
// JFR reader and no sampler (issue 27, item 1). go list answers for the
// non-test build of each package, as the binary links it.
func TestSinksAndAnalysisLinkNoInputs(t *testing.T) {
	const mod = "github.com/ctprof/ctprof/"
	consumers := []string{"internal/analysis", "internal/report", "internal/metrics", "internal/top", "internal/outfile", "internal/termtext", "internal/snapshot", "internal/diff"}
	inputs := []string{"internal/jvm", "pkg/jfr", "internal/jfrsnap", "internal/sample", "internal/source", "internal/record"}
	root := moduleRoot(t)
	for _, c := range consumers {
		cmd := exec.Command("go", "list", "-deps", "./"+c)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		deps := map[string]bool{}
		for _, l := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(l, mod)] = true
		}
		for _, in := range inputs {
			assert.False(t, deps[in], "%s links %s: it should read only the model (internal/snapshot)", c, in)
		}
	}
}

// internal/cli is wiring: flags, options, help, calls and exit codes. Its
// logic lives in packages of its own (issue 27, item 4), and this bound
// keeps it so.
func TestCLIStaysWiring(t *testing.T) {
	const maxLines = 2200
	root := moduleRoot(t)
	n, err := nonTestLines(root + "/internal/cli")
	require.NoError(t, err)
	assert.LessOrEqual(t, n, maxLines, "internal/cli has %d non-test lines: move logic to the package it belongs to", n)
}

// nonTestLines counts the lines of the non-test Go files in dir.
func nonTestLines(dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n, nil
}
