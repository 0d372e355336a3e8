package procfs

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
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
	// BusyTicks is the CPU time all CPUs spent on work since boot (user,
	// nice, system, irq and softirq of /proc/stat's cpu line), and
	// StealTicks the time a hypervisor ran something else while they had
	// work, in clock ticks (Ticks converts): the first less the target's
	// own CPU time is what the rest of the host took, exited processes
	// included. (A time.Duration of a sum over 512 CPUs would overflow
	// within a year of uptime.)
	BusyTicks  uint64
	StealTicks uint64
	// Consumers are the processes other than the target that used the
	// most CPU in the ConsumersWindow before this tick, biggest first (at
	// most MaxConsumers). HostReader fills them every few seconds: nil on
	// the other ticks, and on every tick of a plain FS.Host.
	Consumers       []ProcCPU
	ConsumersWindow time.Duration
	// Quotas are the CPU quotas that apply to the target (its cgroup's and
	// its ancestors', innermost first) with their throttling counters;
	// nil when none applies or none could be read. Filled by HostReader.
	Quotas []CPUQuota
}

// Ticks converts a count of clock ticks (USER_HZ) to a duration.
func Ticks(n uint64) time.Duration { return ticks(n) }

// ProcCPU is one process's CPU use over a window.
type ProcCPU struct {
	PID int
	// Name is the process's comm, as hostile as any text of another
	// process.
	Name string
	// Start is its start time (clock ticks after boot): a pid reused by a
	// later process is another process.
	Start uint64
	// CPU is the CPU time it used over the window (Host.ConsumersWindow):
	// what it used between its own two reads, which a sweep on a busy
	// host may space further apart or closer, scaled to the window.
	CPU time.Duration
}

// Host reads the host's context from this FS's /proc/stat and
// /proc/loadavg. It runs every tick, so it reads both itself: gopsutil's
// equivalent of the first (load.Misc) also lists /proc to count every
// process, and its CPU count reads /proc/cpuinfo, which on x86 interrupts
// every CPU to measure its clock. Its load.Avg would do for the second,
// but package jvm, which the early dump's initializer needs, imports this
// one: gopsutil's imports (net/url) would make Go initialize it after
// most of the binary (see jvm.connectUnix).
func (f FS) Host() (*Host, error) {
	b, err := f.readFile(f.Path("stat"))
	if err != nil {
		return nil, fmt.Errorf("read host counters: %w", err)
	}
	h := parseHostStat(b)
	if b, err := f.readFile(f.Path("loadavg")); err == nil {
		avg := parseLoadAvg(b)
		h.Load1, h.Load5, h.Load15 = avg[0], avg[1], avg[2]
	}
	return h, nil
}

// parseLoadAvg reads the three load averages at the start of
// /proc/loadavg ("0.52 0.58 0.59 1/467 12345"). A field that does not
// parse as what the kernel prints (a finite number, not negative) reads 0.
func parseLoadAvg(b []byte) [3]float64 {
	var avg [3]float64
	for k, field := range bytes.Fields(b) {
		if k == len(avg) {
			break
		}
		if v, err := strconv.ParseFloat(string(field), 64); err == nil && v >= 0 && v < 1e9 {
			avg[k] = v
		}
	}
	return avg
}

// maxTicks bounds a CPU time read from /proc/stat (22 years of one CPU),
// so that a sum of them, or one converted by Ticks, cannot overflow.
const maxTicks = 1 << 36

// parseHostStat reads ctxt, procs_running, procs_blocked, the cpu line
// (all CPUs) and the per-CPU lines (the online CPUs) of /proc/stat.
func parseHostStat(b []byte) *Host {
	h := &Host{}
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case hasPrefix(line, "cpu "):
			// user nice system idle iowait irq softirq steal (guest time
			// is counted in user already).
			for k, f := range bytes.Fields(line[len("cpu "):]) {
				n := atou(f)
				if n > maxTicks {
					continue
				}
				switch k {
				case 0, 1, 2, 5, 6:
					h.BusyTicks += n
				case 7:
					h.StealTicks = n
				}
			}
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
