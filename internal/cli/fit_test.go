package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/browsertest"
	"github.com/ctprof/ctprof/internal/fit"
	"github.com/ctprof/ctprof/internal/testgolden"
)

const fitTestdata = "testdata/fit"

// fitGolden compares got with testdata/fit/name; -update rewrites it.
func fitGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testgolden.Check(t, filepath.Join(fitTestdata, name), got, *update, "go test ./internal/cli -run TestFitGolden -update")
}

// TestFitGolden pins the text and JSON output of every input under
// testdata/fit, so any change in what ctprof fit says is seen in review.
func TestFitGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(fitTestdata, "*.csv"))
	require.NoError(t, err)
	require.Len(t, inputs, 4)
	for _, in := range inputs {
		base := strings.TrimSuffix(filepath.Base(in), ".csv")
		t.Run(base, func(t *testing.T) {
			code, out, errOut := run(t, "", "fit", in)
			require.Equal(t, 0, code, errOut)
			assert.Empty(t, errOut)
			fitGolden(t, base+".txt", []byte(out))

			code, out, errOut = run(t, "", "fit", "--format", "json", in)
			require.Equal(t, 0, code, errOut)
			require.True(t, json.Valid([]byte(out)))
			fitGolden(t, base+".json", []byte(out))
		})
	}
}

// The JSON document carries the fields docs/usl.md promises, with the
// published fit of the benchmark data set.
func TestFitJSONFields(t *testing.T) {
	code, out, errOut := run(t, "", "fit", "-f", "json", filepath.Join(fitTestdata, "benchmark32.csv"))
	require.Equal(t, 0, code, errOut)
	var doc struct {
		USL      map[string]any   `json:"usl"`
		Amdahl   map[string]any   `json:"amdahl"`
		Warnings []string         `json:"warnings"`
		Points   []map[string]any `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	for _, k := range []string{"sigma", "kappa", "lambda", "peak_concurrency", "max_throughput", "r2", "sigma_stderr", "kappa_stderr", "lambda_stderr", "bound", "warnings"} {
		assert.Contains(t, doc.USL, k)
	}
	for _, k := range []string{"sigma", "lambda", "r2", "sigma_stderr", "lambda_stderr", "max_throughput", "bound"} {
		assert.Contains(t, doc.Amdahl, k)
	}
	assert.NotContains(t, doc.Amdahl, "kappa", "Amdahl has no κ")
	assert.NotContains(t, doc.Amdahl, "peak_concurrency")
	assert.InEpsilon(t, 0.02671591, doc.USL["sigma"], 1e-3)
	assert.InEpsilon(t, 7.690945e-4, doc.USL["kappa"], 1e-3)
	assert.InEpsilon(t, 995.6486, doc.USL["lambda"], 1e-3)
	assert.Equal(t, "coherency", doc.USL["bound"])
	require.Len(t, doc.Points, 32)
	assert.Equal(t, 1.0, doc.Points[0]["n"])
	assert.Equal(t, 955.16, doc.Points[0]["throughput"])
	assert.Contains(t, doc.Points[0], "usl")
	assert.Contains(t, doc.Points[0], "amdahl")
	assert.NotNil(t, doc.Warnings, "warnings is a list, empty when all is well")
	assert.Empty(t, doc.Warnings)
}

// The example of --help, the SPEC SDM91 data, read from standard input:
// the published three-parameter fit, and contention named as the bound.
func TestFitFromStdinWithHeader(t *testing.T) {
	in := "users,throughput\n1,65\n18,996\n36,1652\n72,1853\n108,1829\n144,1775\n216,1702\n"
	code, out, errOut := run(t, in, "fit", "--format", "json", "-")
	require.Equal(t, 0, code, errOut)
	var doc fit.Report
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotNil(t, doc.FitDocument)
	require.NotNil(t, doc.USL)
	assert.InEpsilon(t, 0.0277299, doc.USL.Sigma, 1e-3)
	assert.InEpsilon(t, 0.000104343, *doc.USL.Kappa, 1e-3)
	assert.InEpsilon(t, 89.9878, doc.USL.Lambda, 1e-3)
	assert.InEpsilon(t, 1883.76, *doc.USL.MaxThroughput, 1e-3)
	assert.Equal(t, "contention", doc.USL.Bound)
	assert.Len(t, doc.Points, 7)

	// The text form says the same in words.
	code, text, errOut := run(t, in, "fit", "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "σ = 0.02773 ± ")
	assert.Contains(t, text, "N* ≈ 96.5 with X ≈ 1,884")
}

// Two CPU counts: the USL is not fitted and says why; Amdahl is exact.
func TestFitTwoLevels(t *testing.T) {
	code, out, errOut := run(t, "cpus,throughput\n1,100\n2,160\n", "fit", "--format", "json", "-")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Nil(t, doc["usl"])
	assert.Contains(t, doc["usl_error"], "needs 4, got 2")
	assert.InDelta(t, 0.25, doc["amdahl"].(map[string]any)["sigma"], 1e-9)
	w := strings.Join(toStrings(doc["warnings"]), "\n")
	assert.Contains(t, w, "USL not fitted: too few distinct concurrency levels")
	assert.Contains(t, w, "Amdahl: two concurrency levels determine σ and λ exactly")
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestFitInputErrors(t *testing.T) {
	long := "1," + strings.Repeat("9", 64<<10) + "\n" // past the reader's limit, which the message names
	tests := []struct {
		name, in, msg string
	}{
		{"text where a number belongs", "1,2\nx,y\n", "standard input:2: concurrency \"x\" is not a number"},
		{"header not first", "1,2\n2,3\nN,X\n", "standard input:3: concurrency \"N\" is not a number"},
		{"one field", "1,5\n7\n", "standard input:2: want two fields, concurrency and throughput; got 1 in \"7\""},
		{"three fields", "1,5,0.3\n", "standard input:1: want two fields, concurrency and throughput; got 3"},
		{"zero concurrency", "# c\n0,5\n", "standard input:2: concurrency must be a positive number, got \"0\""},
		{"negative concurrency", "-1,5\n", "standard input:1: concurrency must be a positive number, got \"-1\""},
		{"zero throughput", "1,5\n2,0\n", "standard input:2: throughput must be a positive number, got \"0\""},
		{"negative throughput", "1,5\n2,-6\n", "standard input:2: throughput must be a positive number, got \"-6\""},
		{"NaN", "1,NaN\n", "standard input:1: throughput must be a positive number, got \"NaN\""},
		{"infinity", "1,5\n+Inf,4\n", "standard input:2: concurrency must be a positive number, got \"+Inf\""},
		{"control characters are quoted", "1,5\n2,\x1b[31m\n", `standard input:2: throughput "\x1b[31m" is not a number`},
		{"a line too long", "1,5\n" + long, "standard input:2: line longer than 64 KiB"},
		{"nothing", "# only a comment\n\n", "standard input: no measurements"},
		{"one level", "1,5\n1,6\n", "standard input: too few distinct concurrency levels: Amdahl's law needs 2, got 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.in, "fit", "-")
			assert.Equal(t, ExitFailure, code, errOut)
			assert.Empty(t, out)
			assert.True(t, strings.HasPrefix(errOut, "ctprof: "), errOut)
			assert.Contains(t, errOut, tc.msg)
			assert.NotContains(t, errOut, "\x1b", "nothing from the input reaches the terminal raw")
		})
	}
}

func TestFitFileErrors(t *testing.T) {
	code, _, errOut := run(t, "", "fit", filepath.Join(t.TempDir(), "missing.csv"))
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, errOut, "ctprof: open measurements: ")
	assert.Contains(t, errOut, "no such file")

	code, _, errOut = run(t, "", "fit", t.TempDir())
	assert.Equal(t, ExitFailure, code)
	assert.Contains(t, errOut, "is a directory, not a file of measurements")
}

func TestFitUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"fit"}, "fit takes one FILE"},
		{[]string{"fit", "a.csv", "b.csv"}, "got 2 arguments"},
		{[]string{"fit", "--format", "xml", "-"}, "unknown --format \"xml\""},
		{[]string{"fit", "--bogus", "-"}, "unknown flag: --bogus"},
	}
	for _, tc := range tests {
		code, out, errOut := run(t, "1,5\n2,9\n", tc.args...)
		assert.Equal(t, ExitUsage, code, "%v: %s", tc.args, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}

// NewCmdFit only parses flags: runF receives the options.
func TestNewCmdFitParsesFlags(t *testing.T) {
	var got *FitOptions
	var out bytes.Buffer
	cmd := NewCmdFit(IO{In: strings.NewReader(""), Out: &out, ErrOut: &out}, func(o *FitOptions) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"-f", "json", "-"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	assert.Equal(t, "-", got.File)
	assert.Equal(t, "json", got.Format)
	assert.Empty(t, out.String(), "parsing prints nothing")
}

// --help teaches: what σ and κ mean, how to collect points, an example.
func TestFitHelpTeaches(t *testing.T) {
	code, out, errOut := run(t, "", "fit", "--help")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"σ, contention: the share of the work that runs one at a time",
		"κ, coherency",
		"N* = sqrt((1−σ)/κ)",
		"Collecting the points:",
		"at least 4 distinct N for the USL",
		"ctprof fit measurements.csv",
		"--format string",
	} {
		assert.Contains(t, out, want)
	}
	// The example in the help works as printed (the printf input).
	in := "users,throughput\n1,65\n18,996\n36,1652\n72,1853\n108,1829\n144,1775\n216,1702\n"
	assert.Contains(t, out, strings.ReplaceAll(in, "\n", `\n`))
}

// ctprof fit --html draws the points and both curves in a page that works
// offline in a real browser.
func TestFitHTML(t *testing.T) {
	page := filepath.Join(t.TempDir(), "fit.html")
	code, out, errOut := run(t, "", "fit", "--html", page, filepath.Join(fitTestdata, "specsdm91.csv"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "wrote the HTML report to "+page)
	assert.Contains(t, out, "contention bounds it", "the text summary still prints")

	p := browsertest.Open(t, page)
	pixels := browsertest.CheckReport(t, p)
	assert.Contains(t, pixels, "chart-fit")
	series := browsertest.Eval[[]string](t, p, `window.ctprofReport.charts["chart-fit"].getOption().series.map(function (s) { return s.name })`)
	assert.Equal(t, []string{"measured", "USL", "Amdahl"}, series)
	text := browsertest.Eval[string](t, p, `document.getElementById("fit-text").innerText`)
	assert.Contains(t, text, "peaks at N* ≈ 96.5")
	t.Log("screenshot:", p.Screenshot(t, artifactsDir()))
}
