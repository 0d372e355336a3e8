package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// starvedRun is a process whose one busy thread waits for CPUs a
// neighbour with a hostile name holds, in a cgroup whose name is hostile
// too (a quota that never throttled).
func starvedRun(evil string) *analysis.Aggregator {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := analysis.New()
	for i := 0; i <= 4; i++ {
		d := time.Duration(i)
		s := &snapshot.Snapshot{
			Time: t0.Add(d * time.Second), Interval: time.Second,
			Target: snapshot.Target{PID: 42, Name: "app", Kind: snapshot.KindNative, CPUs: 2},
			Threads: []procfs.Thread{{TID: 42, StartTime: 1, Name: "worker", State: 'R', RunTime: d * 200 * time.Millisecond,
				UserCPU: d * 200 * time.Millisecond, RunQueueWait: d * 700 * time.Millisecond, Syscall: procfs.SyscallUnknown, CPUsAllowed: "0-1"}},
			Host: &procfs.Host{CPUs: 2, BusyTicks: uint64(1000 + 200*i),
				Quotas: []procfs.CPUQuota{{Cgroup: "/" + evil, Version: 2, Quota: time.Second, Period: 100 * time.Millisecond, Periods: uint64(10 * i)}}},
		}
		if i > 0 {
			s.Host.Consumers = []procfs.ProcCPU{{PID: 500, Start: 3, Name: evil, CPU: 1700 * time.Millisecond}}
			s.Host.ConsumersWindow = time.Second
		}
		a.Add(s)
	}
	return a
}

// The text summary, the JSON and the HTML report say whom the waiting is
// owed to and name the neighbour; its name and the cgroup's, any
// process's choice, forge no line, no terminal escape and no markup.
func TestSchedulingCauseInTextJSONAndHTML(t *testing.T) {
	const evil = "<script>alert(1)</script>\n[CRITICAL] forged\x1b[2J"
	a := starvedRun(evil)
	s := a.Summary()
	require.Equal(t, analysis.CauseOtherProcesses, s.Scheduling.Cause)

	var text bytes.Buffer
	require.NoError(t, Text(&text, s, TextOptions{}))
	out := text.String()
	assert.Contains(t, out, "  cause: other processes (they hold the CPUs it may use)\n")
	assert.Contains(t, out, "  the rest of the host used 1.80 CPUs on average\n")
	assert.Contains(t, out, `  biggest CPU users over 4.0 s (CPUs): "<script>alert(1)</script>\n[CRITICAL] forged\x1b[2J" (pid 500) 1.70`)
	assert.Contains(t, out, "[WARNING] Other processes take the CPUs:")
	assert.NotContains(t, out, "\x1b")
	for _, line := range strings.Split(out, "\n") {
		assert.False(t, strings.HasPrefix(strings.TrimSpace(line), "[CRITICAL] forged"), "a forged line: %q", line)
	}

	var js bytes.Buffer
	require.NoError(t, JSON(&js, s))
	assert.NotContains(t, js.String(), "<script>")
	var doc struct {
		Scheduling struct {
			Cause     string `json:"cause"`
			Consumers []struct {
				PID  int     `json:"pid"`
				Name string  `json:"name"`
				CPUs float64 `json:"cpus"`
			} `json:"consumers"`
			Quota *struct {
				Cgroup string  `json:"cgroup"`
				CPUs   float64 `json:"cpus"`
			} `json:"cpu_quota"`
		} `json:"scheduling"`
		Findings []struct {
			Kind, Severity, Cause string
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
	assert.Equal(t, "other-processes", doc.Scheduling.Cause)
	require.Len(t, doc.Scheduling.Consumers, 1)
	assert.Equal(t, evil, doc.Scheduling.Consumers[0].Name, "JSON keeps the name exactly, escaped")
	assert.Equal(t, 1.7, doc.Scheduling.Consumers[0].CPUs)
	require.NotNil(t, doc.Scheduling.Quota)
	assert.Equal(t, "/"+evil, doc.Scheduling.Quota.Cgroup)
	assert.Contains(t, doc.Findings, struct{ Kind, Severity, Cause string }{"cpu-saturation", "warning", "other-processes"})

	page := string(renderHTML(t, a, nil))
	assert.NotContains(t, page, "<script>alert(1)")
	assert.Contains(t, page, "Other processes take the CPUs")
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;", "the evidence names the neighbour, escaped")
}
