package procfs

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Stopped says whether a thread's kernel state is a stop: T (SIGSTOP, job
// control) or t (a tracer such as a debugger holds it).
func Stopped(state byte) bool { return state == 'T' || state == 't' }

// LeaderStopped reports whether pid's main thread is stopped (state T or
// t in /proc/<pid>/stat). A stop signal stops every thread of the process
// and a debugger that attaches stops them all too, so the main thread
// tells, for the price of one small read, whether a request sent to the
// process now would wait for it to be continued.
func (f FS) LeaderStopped(pid int) (bool, error) {
	b, err := f.readFile(f.pidPath(pid, "stat"))
	if err != nil {
		return false, err
	}
	var t Thread
	if _, ok := parseStat(b, &t); !ok {
		return false, nil
	}
	return Stopped(t.State), nil
}

// Tracer returns the pid of the process tracing pid (TracerPid in
// /proc/<pid>/status: a debugger, strace) and its name; 0 when none.
func (f FS) Tracer(pid int) (int, string, error) {
	b, err := f.readFile(f.pidPath(pid, "status"))
	if err != nil {
		return 0, "", err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			tracer := int(atou(trim(v)))
			if tracer == 0 {
				return 0, "", nil
			}
			name := ""
			// The tracer may be in another pid namespace or gone: its name
			// is only a help.
			if c, err := f.readFile(f.pidPath(tracer, "comm")); err == nil {
				name = strings.TrimSpace(string(c))
			}
			return tracer, name, nil
		}
	}
	return 0, "", nil
}

// ThreadCPUTimes are one thread's CPU times read apart from a sweep.
type ThreadCPUTimes struct {
	State byte
	// RunTime is schedstat's time on CPU and RunQueueWait its time
	// runnable but waiting for a CPU (zero where the kernel has no
	// schedstat); CPU is stat's user plus system time.
	RunTime, RunQueueWait, CPU time.Duration
	// Timeslices counts the times it was put on a CPU (schedstat).
	Timeslices uint64
}

// ThreadRunTime reads one thread's state and times on CPU: what the
// sampler reads again, for the few threads that were running, when a
// request to the process went unanswered.
func (f FS) ThreadRunTime(pid, tid int) (ThreadCPUTimes, error) {
	b, err := f.readFile(f.pidPath(pid, "task", strconv.Itoa(tid), "stat"))
	if err != nil {
		return ThreadCPUTimes{}, err
	}
	var t Thread
	parseStat(b, &t)
	if s, err := f.readFile(f.pidPath(pid, "task", strconv.Itoa(tid), "schedstat")); err == nil {
		parseSchedstat(s, &t)
	}
	return ThreadCPUTimes{State: t.State, RunTime: t.RunTime, RunQueueWait: t.RunQueueWait, CPU: t.CPU(), Timeslices: t.Timeslices}, nil
}
