package procfs

import (
	"bytes"
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v4/common"
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

// Host reads the host's context: /proc/stat, and the load averages with
// gopsutil, pointed at this FS's root. It runs every tick, so it reads
// /proc/stat itself: gopsutil's equivalent (load.Misc) also lists /proc to
// count every process, and its CPU count reads /proc/cpuinfo, which on x86
// interrupts every CPU to measure its clock.
func (f FS) Host(ctx context.Context) (*Host, error) {
	b, err := f.readFile(f.Path("stat"))
	if err != nil {
		return nil, fmt.Errorf("read host counters: %w", err)
	}
	h := parseHostStat(b)
	ctx = context.WithValue(ctx, common.EnvKey, common.EnvMap{common.HostProcEnvKey: f.root})
	if avg, err := load.AvgWithContext(ctx); err == nil {
		h.Load1, h.Load5, h.Load15 = avg.Load1, avg.Load5, avg.Load15
	}
	return h, nil
}

// parseHostStat reads ctxt, procs_running, procs_blocked and the per-CPU
// lines (the online CPUs) of /proc/stat.
func parseHostStat(b []byte) *Host {
	h := &Host{}
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(line) > 3 && hasPrefix(line, "cpu") && line[3] >= '0' && line[3] <= '9':
			h.CPUs++
		case hasPrefix(line, "ctxt "):
			h.ContextSwitches = atou(trim(line[len("ctxt "):]))
		case hasPrefix(line, "procs_running "):
			h.ProcsRunning = atoi(trim(line[len("procs_running "):]))
		case hasPrefix(line, "procs_blocked "):
			h.ProcsBlocked = atoi(trim(line[len("procs_blocked "):]))
		}
	}
	return h
}
