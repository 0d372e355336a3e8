package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Version 4 keeps the host's CPU time, its biggest CPU consumers and the
// target's cgroup quotas, so a replay names the neighbours and the quota
// as the run did; a version 3 file reads without them (the rest of the
// host context intact), and a tick without consumers keeps them nil.
func TestHostCPURoundTripAndVersion3(t *testing.T) {
	full := &procfs.Host{CPUs: 2, Load1: 3.5, ContextSwitches: 99, BusyTicks: 123456, StealTicks: 78,
		Consumers:       []procfs.ProcCPU{{PID: 500, Name: "stress-ng-cpu", Start: 42, CPU: 900 * time.Millisecond}, {PID: 7, Name: "evil\n\x1b", Start: 1, CPU: time.Millisecond}},
		ConsumersWindow: 1100 * time.Millisecond,
		Quotas:          []procfs.CPUQuota{{Cgroup: "/kubepods/pod1", Version: 2, Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond, Periods: 40, Throttled: 30, ThrottledTime: 2500 * time.Millisecond}},
	}
	between := &procfs.Host{CPUs: 2, BusyTicks: 123460}
	snaps := []*snapshot.Snapshot{{Time: time.Unix(9, 0), Host: full}, {Time: time.Unix(10, 0), Host: between}}
	for _, version := range []byte{3, FormatVersion} {
		got, r := recordAtVersion(t, version, snaps...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, 2)
		if version < 4 {
			assert.Equal(t, &procfs.Host{CPUs: 2, Load1: 3.5, ContextSwitches: 99}, got[0].Host)
			assert.Equal(t, &procfs.Host{CPUs: 2}, got[1].Host)
			continue
		}
		assert.Equal(t, full, got[0].Host)
		assert.Equal(t, between, got[1].Host)
		assert.Nil(t, got[1].Host.Consumers)
		assert.Nil(t, got[1].Host.Quotas)
	}
}
