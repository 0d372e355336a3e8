package scale

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// A level's measurement is disturbed when other load held its workload
// back: other processes took more than DisturbedShare of its CPUs while its
// threads queued for a CPU more than QueuedShare of the time they could
// run. Either alone is not enough: a workload that leaves a CPU idle lets a
// neighbour use it at no cost to itself, and one with more runnable
// threads than CPUs queues behind itself. ctprof's own sampling stays well
// below both; a busy neighbour on one of two CPUs is far above.
const (
	DisturbedShare = 0.15
	QueuedShare    = 0.10
)

// Disturbed says whether other load held the level's workload back during
// its measurement (see DisturbedShare).
func (lv Level) Disturbed() bool {
	if lv.OtherCPUShare <= DisturbedShare {
		return false
	}
	return lv.Summary == nil || lv.Summary.RunQueueWaitShare > QueuedShare
}

// lessDisturbed says whether a is the better measurement of a level than b.
func lessDisturbed(a, b Level) bool {
	if a.Disturbed() != b.Disturbed() {
		return !a.Disturbed()
	}
	return a.OtherCPUShare < b.OtherCPUShare
}

// cpuClock is a reading of the CPUs a level runs on and of its workload,
// in clock ticks: the two are read together so their differences cover
// one window.
type cpuClock struct {
	// busy and total are summed over the level's CPUs (/proc/stat); busy
	// counts steal, the time a hypervisor gave to other machines.
	busy, total uint64
	// workload is the process's own user and system time (/proc/PID/stat).
	workload uint64
}

// readCPUClock reads /proc/stat for cpus (all CPUs when empty) and the
// process's CPU time.
func readCPUClock(procRoot string, pid int, cpus []int) (cpuClock, error) {
	var c cpuClock
	stat, err := os.ReadFile(procRoot + "/stat")
	if err != nil {
		return c, fmt.Errorf("read CPU times: %w", err)
	}
	want := map[int]bool{}
	for _, n := range cpus {
		want[n] = true
	}
	for line := range bytes.Lines(stat) {
		f := bytes.Fields(line)
		if len(f) < 9 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue
		}
		n, err := strconv.Atoi(string(f[0][3:]))
		if err != nil || (len(cpus) > 0 && !want[n]) {
			continue
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice]:
		// guest time is already inside user and nice.
		var v [8]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(string(f[i+1]), 10, 64)
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		c.busy += busy
		c.total += busy + v[3] + v[4]
	}
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return c, fmt.Errorf("read the workload's CPU time: %w", err)
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'. utime and stime are fields 14 and 15, the 12th and 13th
	// after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return c, fmt.Errorf("read the workload's CPU time: malformed %s/%d/stat", procRoot, pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return c, fmt.Errorf("read the workload's CPU time: short %s/%d/stat", procRoot, pid)
	}
	utime, err1 := strconv.ParseUint(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseUint(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return c, fmt.Errorf("read the workload's CPU time: malformed %s/%d/stat", procRoot, pid)
	}
	c.workload = utime + stime
	return c, nil
}

// otherShare is the share of the CPUs' time between two readings that went
// to anything but the workload: other processes, the kernel's own work,
// ctprof, a hypervisor. It is what the workload could not have had.
func otherShare(from, to cpuClock) float64 {
	// Counters can step back (iowait does on some kernels): subtract as
	// floats and clamp.
	total := float64(to.total) - float64(from.total)
	if total <= 0 {
		return 0
	}
	other := (float64(to.busy) - float64(from.busy)) - (float64(to.workload) - float64(from.workload))
	return min(max(other/total, 0), 1)
}
