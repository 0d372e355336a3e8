package scale

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/testnative"
)

// A /proc tree as Linux writes it: the CPU lines (user nice system idle
// iowait irq softirq steal guest guest_nice) and a process whose name holds
// spaces and parentheses.
func TestReadCPUClock(t *testing.T) {
	root := t.TempDir()
	stat := "cpu  50 0 30 900 10 0 5 5 7 0\n" +
		"cpu0 10 0 10 500 5 0 0 5 7 0\n" +
		"cpu1 40 0 20 400 5 0 5 0 0 0\n" +
		"intr 123\nctxt 456\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "42"), 0o755))
	pidStat := "42 (a) b (c) R 1 42 42 0 -1 4194304 100 0 0 0 17 4 0 0 20 0 3 0 100 0 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "42", "stat"), []byte(pidStat), 0o644))

	tests := []struct {
		name        string
		cpus        []int
		busy, total uint64
	}{
		{"all CPUs", nil, 25 + 65, 25 + 505 + 65 + 405},
		{"cpu0", []int{0}, 25, 25 + 505},
		{"cpu1", []int{1}, 65, 65 + 405},
		{"a CPU the machine lacks", []int{7}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readCPUClock(root, 42, tc.cpus)
			require.NoError(t, err)
			assert.Equal(t, tc.busy, c.busy, "user+nice+system+irq+softirq+steal; guest is inside user")
			assert.Equal(t, tc.total, c.total)
			assert.Equal(t, uint64(17+4), c.workload, "utime+stime")
		})
	}
	_, err := readCPUClock(root, 43, nil)
	assert.ErrorContains(t, err, "workload's CPU time")
}

func TestOtherShare(t *testing.T) {
	tests := []struct {
		name     string
		from, to cpuClock
		want     float64
	}{
		{"the workload alone", cpuClock{100, 1000, 50}, cpuClock{300, 1200, 250}, 0},
		{"a neighbour on half the time", cpuClock{0, 0, 0}, cpuClock{200, 200, 100}, 0.5},
		{"idle", cpuClock{0, 0, 0}, cpuClock{0, 200, 0}, 0},
		{"no time passed", cpuClock{5, 10, 1}, cpuClock{5, 10, 1}, 0},
		{"counters stepped back", cpuClock{100, 1000, 0}, cpuClock{90, 1100, 0}, 0},
		{"workload ticks ahead of the CPU's", cpuClock{0, 0, 0}, cpuClock{100, 200, 110}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, otherShare(tc.from, tc.to), 1e-9)
		})
	}
}

func TestDisturbed(t *testing.T) {
	queued := func(share float64) *analysis.Summary { return &analysis.Summary{RunQueueWaitShare: share} }
	tests := []struct {
		name string
		lv   Level
		want bool
	}{
		{"quiet", Level{OtherCPUShare: 0.02, Summary: queued(0.01)}, false},
		{"a neighbour used the CPU the workload left idle", Level{OtherCPUShare: 0.5, Summary: queued(0.02)}, false},
		{"the workload queued behind itself", Level{OtherCPUShare: 0.03, Summary: queued(0.6)}, false},
		{"a neighbour held it back", Level{OtherCPUShare: 0.4, Summary: queued(0.3)}, true},
		{"no profile to tell", Level{OtherCPUShare: 0.4}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.lv.Disturbed())
		})
	}
}

// A busy neighbour bound to the first CPU disturbs the 1-CPU level: ctprof
// sees it, measures that level again, and says the figure understates the
// workload. The neighbour runs at the workload's own priority, so it keeps
// about half of that CPU whatever else the machine runs.
func TestScaleSeesANeighbour(t *testing.T) {
	cpus, err := AllowedCPUs()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cpus), 2, "the scaling tests need 2 CPUs")
	bin := testnative.Build(t, "scale_workload")

	hog := exec.Command("sh", "-c", "while :; do :; done")
	hog.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, startBound(hog, cpus[:1]))
	t.Cleanup(func() {
		_ = hog.Process.Kill()
		_ = hog.Wait()
	})

	res, err := Run(context.Background(), Options{
		Command: []string{bin, "independent"}, Vary: VaryCPUs, Levels: []int{1, 2}, CPUs: cpus,
		Warmup: 500 * time.Millisecond, Measure: 1500 * time.Millisecond, Interval: 100 * time.Millisecond,
		NewThroughput: regexSource(t), Retries: 1,
	}, func(s string) { t.Log(s) })
	require.NoError(t, err)
	one := res.Levels[0]
	assert.Greater(t, one.OtherCPUShare, 0.3, "the neighbour takes about half of CPU %d", cpus[0])
	assert.True(t, one.Disturbed())
	assert.Equal(t, 2, one.Measurements, "measured again once")
	f := res.Findings(nil)
	require.Len(t, f, 1)
	assert.True(t, strings.Contains(strings.Join(f[0].Evidence, "\n"), "1 CPUs: ") &&
		strings.Contains(strings.Join(f[0].Evidence, "\n"), "understates the workload"), "%q", f[0].Evidence)
}
