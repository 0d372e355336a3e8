package fit

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/pkg/usl"
)

// The reader is lenient about layout and strict about numbers.
func TestReadPoints(t *testing.T) {
	want := []usl.Point{{N: 1, Throughput: 10}, {N: 2, Throughput: 19.5}, {N: 4, Throughput: 35}}
	tests := []struct {
		name, in string
	}{
		{"plain CSV", "1,10\n2,19.5\n4,35\n"},
		{"header", "threads,ops/s\n1,10\n2,19.5\n4,35\n"},
		{"comment before the header", "# run 7\n\nN X\n1 10\n2 19.5\n4 35\n"},
		{"inline comments", "1,10 # warm\n2,19.5#x\n4,35\n# end\n"},
		{"spaces around commas", "  1 ,  10\n2,\t19.5\n 4 , 35 \n"},
		{"tabs", "1\t10\n2\t19.5\n4\t35\n"},
		{"semicolons", "1;10\n2;19.5\n4;35\n"},
		{"CRLF and no final newline", "1,10\r\n2,19.5\r\n4,35"},
		{"byte-order mark", "\uFEFFN,X\r\n1,10\r\n2,19.5\r\n4,35\r\n"},
		{"exponents", "1e0,1e1\n2,1.95e1\n4,3.5E1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadPoints(strings.NewReader(tc.in), "in.csv")
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// NewReport is the hook for other writers (the HTML report): it holds
// both fits and every warning.
func TestNewReport(t *testing.T) {
	pts := []usl.Point{{N: 1, Throughput: 10}, {N: 2, Throughput: 20}, {N: 4, Throughput: 40}, {N: 8, Throughput: 80}}
	res, err := NewReport(pts)
	require.NoError(t, err)
	require.NotNil(t, res.USLFit)
	require.NotNil(t, res.AmdahlFit)
	assert.Equal(t, res.USLFit.Lambda, res.USL.Lambda)
	assert.Len(t, res.Points, 4)
	assert.Contains(t, res.Warnings, "USL: σ sits on its bound 0: no contention seen in the measured range")
	assert.Contains(t, res.Warnings, "Amdahl: σ sits on its bound 0: no contention seen in the measured range")

	_, err = NewReport([]usl.Point{{N: 3, Throughput: 1}})
	assert.ErrorIs(t, err, usl.ErrTooFewPoints)
}

// FuzzReadPoints: any input either fails with a message that names the
// input, or gives positive, finite points.
func FuzzReadPoints(f *testing.F) {
	for _, seed := range []string{
		"1,10\n2,19\n4,35\n8,60\n",
		"threads;ops\n# c\n1; 1e3\n2 ;2e3 # x\n",
		"\uFEFFN\tX\r\n1\t5\r\n",
		"1,NaN\n", "0,1\n", "1,2,3\n", "", "#\n", ",,,\n", "1e309,1\n", "0x1p3,5\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		pts, err := ReadPoints(strings.NewReader(in), "in.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.csv:") && !strings.HasPrefix(err.Error(), "read in.csv") {
				t.Fatalf("error does not name the input: %v", err)
			}
			if pts != nil {
				t.Fatalf("points with an error")
			}
			return
		}
		if len(pts) == 0 {
			t.Fatalf("no points and no error")
		}
		for _, p := range pts {
			if !(p.N > 0) || !(p.Throughput > 0) || math.IsInf(p.N, 0) || math.IsInf(p.Throughput, 0) {
				t.Fatalf("bad point %+v from %q", p, in)
			}
		}
	})
}

// The reader's limits and the file errors, which the command prefixes
// with "ctprof: " and turns into exit code 1.
func TestReadErrors(t *testing.T) {
	_, err := ReadPoints(strings.NewReader("1,5\n1,"+strings.Repeat("9", maxLine)+"\n"), "in.csv")
	assert.EqualError(t, err, "in.csv:2: line longer than 64 KiB: not a file of measurements")

	_, err = ReadFile(filepath.Join(t.TempDir(), "missing.csv"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "open measurements: ")

	dir := t.TempDir()
	_, err = ReadFile(dir)
	assert.EqualError(t, err, dir+" is a directory, not a file of measurements")

	path := filepath.Join(t.TempDir(), "m.csv")
	require.NoError(t, os.WriteFile(path, []byte("1,5\n2,x\n"), 0o644))
	_, err = ReadFile(path)
	assert.EqualError(t, err, path+`:2: throughput "x" is not a number`, "errors name the file")
}

// A bad line is repeated bounded, cut at a character, never inside one.
func TestQuote(t *testing.T) {
	assert.Equal(t, `"a\x1bb"`, quote(" a\x1bb "))
	long := strings.Repeat("a", quoteMax-1) + "é" + "zzz"
	assert.Equal(t, `"`+strings.Repeat("a", quoteMax-1)+`"…`, quote(long))
	assert.Equal(t, `"`+strings.Repeat("b", quoteMax)+`"…`, quote(strings.Repeat("b", quoteMax+1)))
}

func TestWriteReport(t *testing.T) {
	res, err := NewReport([]usl.Point{{N: 1, Throughput: 100}, {N: 2, Throughput: 160}})
	require.NoError(t, err)
	var js, text bytes.Buffer
	require.NoError(t, WriteReport(&js, "json", res))
	var m map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &m))
	for _, k := range []string{"points", "usl", "usl_error", "amdahl", "warnings"} {
		assert.Contains(t, m, k)
	}
	assert.NotContains(t, m, "USLFit", "the fits themselves stay out of the JSON")
	assert.True(t, strings.HasPrefix(js.String(), "{\n  \""), "indented by two spaces")

	require.NoError(t, WriteReport(&text, "text", res))
	assert.Contains(t, text.String(), "Amdahl: σ = 0.25")
}
