package housekeeping

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
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

// internal/cli is wiring: flags, options, calls and exit codes. Its logic
// lives in packages of its own (issue 27, item 4), and this bound keeps it
// so. The commands' manuals (--help and examples) are prose in help/*.txt,
// embedded, and not counted.
func TestCLIStaysWiring(t *testing.T) {
	const maxLines = 2200
	root := moduleRoot(t)
	total, help, err := cliLines(filepath.Join(root, "internal", "cli"))
	require.NoError(t, err)
	t.Logf("internal/cli: %d non-test lines of Go, %d of them in multi-line string literals", total, help)
	assert.LessOrEqual(t, total, maxLines, "internal/cli has %d non-test lines: move logic to the package it belongs to", total)
}

// cliLines counts the lines of the non-test Go files in dir, and of them
// the lines inside raw string literals that span lines (help texts).
func cliLines(dir string) (total, help int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, 0, err
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, 0, err
		}
		total += bytes.Count(b, []byte("\n"))
		file, err := parser.ParseFile(fset, f, b, 0)
		if err != nil {
			return 0, 0, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, "`") {
				help += strings.Count(lit.Value, "\n")
			}
			return true
		})
	}
	return total, help, nil
}
