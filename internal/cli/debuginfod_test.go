//go:build linux && amd64

package cli

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testdebuginfod"
	"github.com/ctprof/ctprof/internal/testnative"
)

// A stripped lock convoy whose debug file only a slow debuginfod server has
// (a real one, behind a front that holds each request for 1.5 s): ctprof
// samples it by module and offset until the file arrives in the background,
// and by function after. Its wait site is one resource under its function's
// name, with the waiters of every sample, the first ones' too.
func TestAttachStrippedBinaryNamedMidRun(t *testing.T) {
	full := testnative.Build(t, "lock_convoy")
	dir, served := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for _, args := range [][]string{{"objcopy", "--only-keep-debug", full, filepath.Join(served, "lock_convoy.debug")}, {"strip", "-o", filepath.Join(dir, "lock_convoy"), full}} {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	f, err := elf.Open(filepath.Join(dir, "lock_convoy"))
	require.NoError(t, err)
	id := symbolize.BuildID(f)
	f.Close()
	require.NotEmpty(t, id)
	url := testdebuginfod.Start(t, served)
	testdebuginfod.WaitServed(t, url, id)
	slow := testdebuginfod.StartSlow(t, url, 1500*time.Millisecond)
	t.Setenv("DEBUGINFOD_URLS", slow.URL)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())

	p := testnative.StartWith(t, testnative.Options{Binary: filepath.Join(dir, "lock_convoy")}, "lock_convoy", "3", "2000")
	code, stdout, stderr := run(t, "", "attach", strconv.Itoa(p.PID), "--duration", "4s", "--interval", "250ms", "--format", "json")
	require.Equal(t, 0, code, stderr)
	assert.GreaterOrEqual(t, slow.Asked(), 1, "ctprof asked the server for the debug file")
	var doc struct {
		Samples         int `json:"samples"`
		ContentionSites []struct {
			ID        string `json:"id"`
			Class     string `json:"class"`
			WaitFrame string `json:"wait_frame"`
			DumpsSeen int    `json:"dumps_seen"`
		} `json:"contention_sites"`
		Waits []struct {
			Frame string `json:"frame"`
		} `json:"waits"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Greater(t, doc.Samples, 8)
	named := false
	for _, w := range doc.Waits {
		named = named || w.Frame == "convoy"
	}
	require.True(t, named, "the last sample names the wait site by function: %+v", doc.Waits)
	var convoy int
	for _, s := range doc.ContentionSites {
		if s.Class != "lock_convoy" {
			continue
		}
		assert.NotContains(t, s.ID, "+0x", "a resource under module and offset beside the named one")
		if s.WaitFrame == "convoy" {
			convoy++
			assert.GreaterOrEqual(t, s.DumpsSeen, doc.Samples-1, "the waiters of the samples before the names count at %s", s.ID)
		}
	}
	assert.Equal(t, 1, convoy, "one resource at convoy: %+v", doc.ContentionSites)
}
