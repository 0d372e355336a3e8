package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const benchmark32 = "../../pkg/usl/testdata/benchmark32.csv"

func TestFitGolden(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		code, out, errOut := run(t, "", "fit", "--format", format, benchmark32)
		require.Equal(t, 0, code, errOut)
		golden(t, "fit-benchmark32."+map[string]string{"text": "txt", "json": "json"}[format], []byte(out))
	}
	code, out, _ := run(t, "", "fit", "--format", "json", benchmark32)
	require.Equal(t, 0, code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	u := doc["usl"].(map[string]any)
	for _, k := range []string{"sigma", "kappa", "lambda", "peak_concurrency", "max_throughput", "r2", "sigma_stderr", "kappa_stderr", "lambda_stderr"} {
		assert.Contains(t, u, k)
	}
	a := doc["amdahl"].(map[string]any)
	for _, k := range []string{"sigma", "lambda", "r2"} {
		assert.Contains(t, a, k)
	}
	assert.Len(t, doc["points"], 32)
}

func TestFitFromStdinWithTwoPoints(t *testing.T) {
	code, out, errOut := run(t, "concurrency,throughput\n# two CPUs\n1,100\n2,160\n", "fit", "--format", "json", "-")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Nil(t, doc["usl"])
	assert.Contains(t, doc["usl_error"], "needs 4")
	assert.InDelta(t, 0.25, doc["amdahl"].(map[string]any)["sigma"], 1e-9)
}

func TestFitErrors(t *testing.T) {
	tests := []struct {
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"", []string{"fit"}, 2, "one FILE"},
		{"", []string{"fit", "/no/such/file.csv"}, 1, "no such file"},
		{"1,2\nx,y\n", []string{"fit", "-"}, 1, "standard input:2: not two numbers"},
		{"1\n", []string{"fit", "-"}, 1, "standard input:1: want concurrency,throughput"},
		{"# nothing\n", []string{"fit", "-"}, 1, "no measurements"},
		{"1,5\n1,6\n", []string{"fit", "-"}, 1, "too few distinct"},
		{"1,5\n2,-6\n", []string{"fit", "-"}, 1, "positive"},
		{"1,5\n2,6\n", []string{"fit", "--format", "xml", "-"}, 2, "unknown --format"},
	}
	for _, tc := range tests {
		code, _, errOut := run(t, tc.stdin, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}
