package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// Without the privilege for exact waits (ctprof and its target run as
// nobody), a thread that blocks thousands of times a second is read fast
// between samples: the futex it waits on is a finding with the share of
// reads that caught it, and the summary says to run as root for exact
// waits rather than leave "no lock" as the verdict. As root with
// --exact-waits off the reads still come, without that advice.
func TestAttachFastReadsWithoutExactWaits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test starts ctprof and its target as another user and needs root (CI runs as root)")
	}
	bin, err := buildCtprof()
	require.NoError(t, err)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	// The waiter blocks on counted_word about 5,000 times a second.
	p := testnative.StartWith(t, testnative.Options{Credential: nobody, Dir: "/"}, "counted_waits", "200", "2")
	counted := p.Value("COUNTED")

	type doc struct {
		Locks []struct {
			Address   string `json:"address"`
			Class     string `json:"class"`
			FastReads *struct {
				Share float64 `json:"share"`
				Reads int64   `json:"reads"`
			} `json:"fast_reads"`
			Exact *struct{} `json:"exact_waits"`
		} `json:"locks"`
		FastReads *struct {
			Threads           int     `json:"threads"`
			BlocksPerSecond   float64 `json:"blocks_per_second"`
			ExactWaitsMissing bool    `json:"exact_waits_missing"`
		} `json:"fast_reads"`
		Findings []struct {
			Summary  string `json:"summary"`
			NextStep string `json:"next_step"`
		} `json:"findings"`
		Warnings []string `json:"warnings"`
	}
	attachAs := func(cred *syscall.Credential, extra ...string) doc {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"attach", strconv.Itoa(p.PID), "--duration", "3s", "--interval", "500ms", "--format", "json"}, extra...)...)
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
		var d doc
		require.NoError(t, json.Unmarshal([]byte(stdout.String()), &d))
		return d
	}

	d := attachAs(nobody)
	require.NotNil(t, d.FastReads, "fast reads of the threads that block often")
	assert.True(t, d.FastReads.ExactWaitsMissing)
	assert.GreaterOrEqual(t, d.FastReads.BlocksPerSecond, 1000.0)
	var found bool
	for _, l := range d.Locks {
		assert.Nil(t, l.Exact, "no exact waits without the privilege")
		if l.Address == counted {
			found = true
			require.NotNil(t, l.FastReads, "%+v", l)
			assert.Positive(t, l.FastReads.Share)
			assert.Equal(t, "counted_word", l.Class)
		}
	}
	assert.True(t, found, "the counted word in the lock table: %+v", d.Locks)
	assert.Contains(t, strings.Join(d.Warnings, "\n"), "Run ctprof as root (or with CAP_PERFMON) for exact waits")
	var advice bool
	for _, f := range d.Findings {
		if strings.Contains(f.Summary, "futex counted_word") {
			advice = strings.Contains(f.NextStep, "Run ctprof as root (or with CAP_PERFMON) for exact waits")
		}
	}
	assert.True(t, advice, "the finding says how to get exact waits: %+v", d.Findings)

	// Root without exact waits: the reads, not the advice.
	d = attachAs(nil, "--exact-waits", "off")
	require.NotNil(t, d.FastReads)
	assert.False(t, d.FastReads.ExactWaitsMissing)
	assert.NotContains(t, strings.Join(d.Warnings, "\n"), "Run ctprof as root")
}
