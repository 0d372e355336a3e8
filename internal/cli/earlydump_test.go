package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// The ctprof binary asks a one-shot's JVM for its dump while it starts
// (cmd/ctprof/internal/earlydump), and only a one-shot's: each run below
// makes the JVM print its threads exactly once (its safepoint log counts
// the "PrintThreads" operations), and the summary says which dumps were
// asked for early.
func TestBinaryAsksAOneShotsDumpWhileStarting(t *testing.T) {
	bin, err := buildCtprof()
	require.NoError(t, err)
	p := testjvm.StartWith(t, testjvm.JDK17(t), "ManyThreads", testjvm.Options{SafepointLog: true}, "30")
	// jcmd's dump starts the attach listener: an early dump goes only to a
	// JVM whose listener runs (starting one waits for the parsed options).
	p.WaitForDump(t, 20*time.Second, func(d []byte) bool { return bytes.Contains(d, []byte("conn-1-reader")) })
	dumps := p.ThreadDumpsLogged(t, 1)
	pid := strconv.Itoa(p.PID)

	tests := []struct {
		name  string
		env   string
		args  []string
		early bool
	}{
		{"one-shot", "", []string{"attach", pid, "--count", "1", "--format", "json"}, true},
		{"one-shot, shorthands", "", []string{"attach", "-n1", "-fjson", pid}, true},
		{"turned off", "CTPROF_NO_EARLY_DUMP=1", []string{"attach", pid, "--count", "1", "--format", "json"}, false},
		{"another kind of dump", "", []string{"attach", pid, "--count", "1", "--format", "json", "--locks"}, false},
		{"two samples", "", []string{"attach", pid, "--count", "2", "--interval", "100ms", "--format", "json", "--dump-interval", "1h"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = os.Environ()
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "stderr: %s", stderr.String())
			var doc struct {
				SampleCost struct {
					Dumps      int `json:"dumps"`
					EarlyDumps int `json:"early_dumps"`
				} `json:"sample_cost"`
				JVM map[string]any `json:"jvm"`
			}
			require.NoError(t, json.Unmarshal(out, &doc), string(out))
			assert.Equal(t, 1, doc.SampleCost.Dumps)
			if tc.early {
				assert.Equal(t, 1, doc.SampleCost.EarlyDumps)
			} else {
				assert.Zero(t, doc.SampleCost.EarlyDumps)
			}
			assert.NotEmpty(t, doc.JVM, "the JVM's counters, read before the dump")
			dumps++
			assert.Equal(t, dumps, p.ThreadDumpsLogged(t, dumps), "the JVM printed its threads once")
		})
	}
	time.Sleep(200 * time.Millisecond) // a late second dump would be logged by now
	assert.Equal(t, dumps, p.ThreadDumpsLogged(t, dumps))
}

// Go initializes packages in import-path order as their imports allow, so
// the early dump's initializer runs once everything package jvm imports
// is initialized: it must not wait behind the costly initializers of the
// rest of the binary. An import of package jvm (or procfs, which it
// imports) that pulls in net (gopsutil does, through net/url) holds it
// back behind nearly all of them; regexp or crypto/rand, behind a few
// more (`go list -deps ./internal/jvm` shows what it needs).
func TestEarlyDumpInitializesBeforeTheRest(t *testing.T) {
	bin, err := buildCtprof()
	require.NoError(t, err)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run())
	order := map[string]int{}
	for n, line := range bytes.Split(stderr.Bytes(), []byte("\n")) {
		if f := bytes.Fields(line); len(f) > 1 && string(f[0]) == "init" {
			order[string(f[1])] = n
		}
	}
	early, ok := order["github.com/ctprof/ctprof/cmd/ctprof/internal/earlydump"]
	require.True(t, ok, "no init trace of the early dump:\n%s", stderr.String())
	for _, later := range []string{"net", "net/http", "crypto/tls", "github.com/spf13/cobra", "github.com/google/pprof/profile",
		"github.com/prometheus/client_golang/prometheus", "github.com/charmbracelet/bubbletea"} {
		n, ok := order[later]
		require.True(t, ok, "%s has no initializer work any more: choose another package to compare with", later)
		assert.Less(t, early, n, "the early dump is initialized after %s", later)
	}
}
