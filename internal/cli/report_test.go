package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// A recording replays to the summary the live run printed.
func TestRecordThenReport(t *testing.T) {
	p := testnative.Start(t, "mutex_contention", "4", "2", "2000")
	path := filepath.Join(t.TempDir(), "run.ctprof")
	code, live, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "8", "--interval", "100ms", "--format", "json", "--record", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "8 samples recorded in "+path)

	code, replay, errOut := run(t, "", "report", "--format", "json", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "8 samples")
	assert.NotContains(t, errOut, "warning")
	assert.JSONEq(t, live, replay)

	code, text, _ := run(t, "", "report", path)
	require.Equal(t, 0, code)
	assert.Contains(t, text, "contended_mutex")

	code, _, errOut = run(t, "", "attach", strconv.Itoa(p.PID), "--count", "1", "--record", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "exists", "a recording is never overwritten")
}

// ctprof killed with SIGKILL mid-run: every complete sample replays.
func TestRecordingSurvivesSIGKILL(t *testing.T) {
	bin, err := buildCtprof()
	require.NoError(t, err)
	p := testnative.Start(t, "mutex_contention", "3", "2", "2000")
	path := filepath.Join(t.TempDir(), "killed.ctprof")
	cmd := exec.Command(bin, "attach", strconv.Itoa(p.PID), "--interval", "20ms", "--record", path)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := os.Stat(path)
		if err == nil && st.Size() > 20000 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the recording does not grow")
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	code, out, errOut := run(t, "", "report", "--format", "json", path)
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Greater(t, doc["samples"].(float64), 3.0)
	if strings.Contains(errOut, "warning") {
		assert.Contains(t, errOut, "partial frame", "a cut-off end is named as such")
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	notRec := filepath.Join(dir, "dump.txt")
	require.NoError(t, os.WriteFile(notRec, []byte("Full thread dump\n"), 0o644))
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"report"}, 2, "one recording FILE"},
		{[]string{"report", filepath.Join(dir, "none")}, 1, "no such file"},
		{[]string{"report", notRec}, 1, "not a ctprof recording"},
		{[]string{"report", "--format", "folded", notRec}, 2, "unknown --format"},
	}
	for _, tc := range tests {
		code, _, errOut := run(t, "", tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg)
	}
}
