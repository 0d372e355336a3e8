package procfs

import (
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
)

// Host is system-wide context at one instant.
type Host struct {
	// ContextSwitches is the machine's cumulative count (/proc/stat ctxt).
	ContextSwitches uint64
	// ProcsRunning and ProcsBlocked count tasks runnable and in
	// uninterruptible sleep right now.
	ProcsRunning int
	ProcsBlocked int
	Load1        float64
	Load5        float64
	Load15       float64
	// CPUs is the number of online logical CPUs.
	CPUs int
}

// Host reads the host's context with gopsutil, pointed at this FS's root.
func (f FS) Host(ctx context.Context) (*Host, error) {
	ctx = context.WithValue(ctx, common.EnvKey, common.EnvMap{common.HostProcEnvKey: f.root})
	misc, err := load.MiscWithContext(ctx)
	if err != nil && misc == nil {
		return nil, fmt.Errorf("read host counters: %w", err)
	}
	h := &Host{ContextSwitches: uint64(max(misc.Ctxt, 0)), ProcsRunning: misc.ProcsRunning, ProcsBlocked: misc.ProcsBlocked}
	if avg, err := load.AvgWithContext(ctx); err == nil {
		h.Load1, h.Load5, h.Load15 = avg.Load1, avg.Load5, avg.Load15
	}
	if n, err := cpu.CountsWithContext(ctx, true); err == nil {
		h.CPUs = n
	}
	return h, nil
}
