package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeIndented writes what encoding/json's indenting Encoder writes:
// every committed JSON golden, compacted and indented again, comes back
// byte for byte.
func TestWriteIndentedMatchesEncodingJSON(t *testing.T) {
	files, _ := filepath.Glob("../cli/testdata/golden/*.json")
	more, _ := filepath.Glob("testdata/*.json")
	files = append(files, more...)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if !json.Valid(b) {
			continue
		}
		checkIndented(t, f, b)
	}
	for _, s := range []string{`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[1,{"c":"x\"y\\\\"}]}`, `"s"`, `[[],[[]],{"k":null}]`, `{"a:b":"{[,]}"}`} {
		checkIndented(t, s, []byte(s))
	}
}

func checkIndented(t *testing.T, name string, b []byte) {
	t.Helper()
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, b), name)
	var want bytes.Buffer
	require.NoError(t, json.Indent(&want, compact.Bytes(), "", "  "), name)
	want.WriteByte('\n')
	var got bytes.Buffer
	require.NoError(t, writeIndented(&got, compact.Bytes(), "  "))
	assert.Equal(t, want.String(), got.String(), name)
}

func FuzzWriteIndented(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c\"d"}],"e":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		checkIndented(t, "fuzz", b)
	})
}
