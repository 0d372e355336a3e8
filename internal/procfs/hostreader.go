package procfs

import (
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// MaxConsumers is how many of the host's biggest CPU consumers a Host
// lists: enough to name who takes the CPUs, few enough that a tick stays
// small.
const MaxConsumers = 5

// The sweep of every process's stat runs at most every consumersEvery, and
// less often when it is dear: after a sweep that took d of CPU time, the
// next waits at least consumersCostFactor×d, so it costs at most 0.5 % of
// one CPU. Measured (BenchmarkConsumersSweep, a 2-CPU EPYC under load
// averages of 5 to 70): 6 to 18 µs of CPU a process, 0.6 to 1.9 ms for a
// host of about 100; a process's stat makes the kernel add up the CPU
// time of all its threads, and a 2,000-thread process adds about 0.5 ms.
// On every tick (10 a second at --interval 100ms) a host of 1,000
// processes would cost 6 to 18 % of a CPU; a sweep a second costs a tenth
// of that, and the spacing keeps bigger hosts within the budget.
const (
	consumersEvery      = time.Second
	consumersCostFactor = 200
)

// HostReader reads the host's context for one target, every tick: what
// FS.Host reads, the CPU quotas of the target's cgroups with their
// throttling counters, and every few seconds the processes that took the
// most CPU since the previous sweep. It keeps the previous sweep to tell
// the CPU time used in between; one goroutine uses it at a time.
type HostReader struct {
	fs  FS
	pid int

	// prev holds each process's CPU time at the previous sweep, by pid,
	// and cur the sweep under way; they swap, so a sweep allocates no map.
	prev, cur map[int]procCPU
	// prevAt and prevBoot are when the previous sweep ran (wall clock,
	// and clock ticks since boot to compare with a process's start).
	prevAt    time.Time
	prevBoot  uint64
	nextSweep time.Time
	// SweepCost is the CPU time the latest sweep of every process's stat
	// (and the search for the target's quotas) took.
	SweepCost time.Duration
	// OneSample says the run takes one sample: it has no window to
	// measure the consumers or the throttling over, and reads /proc/stat
	// alone.
	OneSample bool
	// Own are the other processes of the target's tree (a server made of
	// processes): their CPU is the target's own, measured thread by
	// thread, not another process's. Set by the sampler between reads.
	Own map[int]bool

	dirBuf  []byte
	statBuf []byte
	pathBuf []byte

	// quotas are the target's cgroup directories that set a CPU quota,
	// found at the latest sweep; their counters are read every tick.
	quotas []quotaDir
}

type procCPU struct {
	start uint64
	cpu   time.Duration
	// at is when its stat was read, on the monotonic clock: on a busy
	// host a sweep takes long enough for the interval between two reads
	// of one process to differ from the window between the sweeps' starts.
	at time.Time
}

// NewHostReader returns a HostReader for the target pid (left out of the
// consumers: its own CPU use is measured thread by thread).
func (f FS) NewHostReader(pid int) *HostReader {
	return &HostReader{
		fs: f, pid: pid,
		prev: map[int]procCPU{}, cur: map[int]procCPU{},
		dirBuf: make([]byte, 32<<10), statBuf: make([]byte, 1024), pathBuf: make([]byte, 0, 32),
	}
}

// Read reads the host's context now. Only /proc/stat is required; the
// consumers and quotas are left empty when they cannot be read.
func (r *HostReader) Read() (*Host, error) {
	h, err := r.fs.Host()
	if err != nil {
		return nil, err
	}
	if r.OneSample {
		return h, nil
	}
	now := time.Now()
	if !now.Before(r.nextSweep) {
		// The cost is the CPU time the sweep takes, not its wall time: on
		// a busy host the wall time is mostly waiting for a CPU, which
		// would space the sweeps out just when they are needed.
		runtime.LockOSThread()
		start := threadCPU()
		h.Consumers, h.ConsumersWindow = r.sweep(now)
		r.quotas = r.fs.findQuotas(r.pid)
		r.SweepCost = threadCPU() - start
		runtime.UnlockOSThread()
		r.nextSweep = now.Add(max(consumersEvery, consumersCostFactor*r.SweepCost))
	}
	h.Quotas = r.readQuotas()
	return h, nil
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// sweep reads the CPU time of every process but the target and returns
// the biggest users since the previous sweep, with the time between the
// two; the first sweep only sets the baseline. A process that exited in
// between is not seen (its CPU time is still in Host.BusyCPU).
func (r *HostReader) sweep(now time.Time) ([]ProcCPU, time.Duration) {
	dir, err := unix.Open(r.fs.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0
	}
	defer unix.Close(dir)
	var boot unix.Timespec
	bootTicks := uint64(0)
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) == nil {
		bootTicks = uint64(boot.Sec)*userHZ + uint64(boot.Nsec)/(1e9/userHZ)
	}
	clear(r.cur)
	baseline := r.prevAt.IsZero()
	window := time.Duration(0)
	if !baseline {
		window = now.Sub(r.prevAt)
	}
	var top []ProcCPU
	for {
		n, err := unix.Getdents(dir, r.dirBuf)
		if err != nil || n <= 0 {
			break
		}
		b := r.dirBuf[:n]
		// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
		for len(b) >= 19 {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen <= 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			b = b[reclen:]
			pid, ok := 0, false
			for _, c := range name {
				if c == 0 {
					break
				}
				if c < '0' || c > '9' {
					ok = false
					break
				}
				pid, ok = pid*10+int(c-'0'), true
			}
			if !ok || pid == r.pid || r.Own[pid] {
				continue
			}
			cpu, start, comm, ok := r.readStat(dir, pid)
			if !ok {
				continue
			}
			at := time.Now()
			r.cur[pid] = procCPU{start: start, cpu: cpu, at: at}
			if baseline {
				continue
			}
			used := cpu
			if p, seen := r.prev[pid]; seen && p.start == start {
				// Its use over its own interval between reads, as a
				// share of the window the consumers are listed for.
				used = cpu - p.cpu
				if between := at.Sub(p.at); between > 0 && window > 0 {
					used = time.Duration(float64(used) * float64(window) / float64(between))
				}
			} else if start+1 < r.prevBoot {
				// Unseen at the previous sweep, yet older than it (its
				// stat was unreadable then): its CPU time in between is
				// unknown.
				continue
			}
			if used > 0 {
				top = insertTop(top, ProcCPU{PID: pid, Start: start, CPU: used}, comm)
			}
		}
	}
	r.prev, r.cur = r.cur, r.prev
	r.prevAt, r.prevBoot = now, bootTicks
	return top, window
}

// readStat reads one process's stat: its CPU time, start time and name
// (valid until the next read).
func (r *HostReader) readStat(dir, pid int) (cpu time.Duration, start uint64, comm []byte, ok bool) {
	r.pathBuf = strconv.AppendInt(r.pathBuf[:0], int64(pid), 10)
	r.pathBuf = append(r.pathBuf, "/stat\x00"...)
	fd, err := openat(dir, r.pathBuf)
	if err != nil {
		return 0, 0, nil, false
	}
	n, err := preadRaw(fd, r.statBuf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, nil, false
	}
	var t Thread
	comm, ok = parseStat(r.statBuf[:n], &t)
	return t.UserCPU + t.SystemCPU, t.StartTime, comm, ok
}

// insertTop keeps top sorted by CPU time (then pid) and at most
// MaxConsumers long; the name is copied only for a process that enters.
func insertTop(top []ProcCPU, p ProcCPU, comm []byte) []ProcCPU {
	i := len(top)
	for i > 0 && (top[i-1].CPU < p.CPU || top[i-1].CPU == p.CPU && top[i-1].PID > p.PID) {
		i--
	}
	if i >= MaxConsumers {
		return top
	}
	p.Name = string(comm)
	if len(top) < MaxConsumers {
		top = append(top, ProcCPU{})
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = p
	return top
}
