// Package scale runs scalability experiments: a workload run once per CPU
// count (or concurrency level), its throughput measured and the process
// profiled meanwhile through the same Aggregator as every other mode, so
// the lock that grows as CPUs are added can be named.
package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Vary names the dimension a run varies.
type Vary string

// Dimensions.
const (
	VaryCPUs        Vary = "cpus"
	VaryConcurrency Vary = "concurrency"
)

// Options describe an experiment.
type Options struct {
	// Command is the workload: it runs until stopped and reports its
	// throughput (see Throughput). With VaryConcurrency every "{n}" in it
	// is replaced by the level, and CTPROF_CONCURRENCY=n is in its
	// environment.
	Command []string
	Vary    Vary
	// Levels are the CPU counts or concurrency levels, ascending.
	Levels []int
	// CPUs are the CPUs a CPU level picks from (its first n).
	CPUs []int
	// Warmup is waited before measuring; Measure is the measurement.
	Warmup, Measure time.Duration
	// Interval is the profiling interval.
	Interval time.Duration
	// NewThroughput makes the throughput reader of one level; a
	// RegexThroughput gets the workload's output.
	NewThroughput func() (Throughput, error)
	// Sampler makes the profiler of one level's process; nil uses
	// sample.NewSampler with Interval.
	Sampler func(pid int) (Runner, error)
	// Dir is the workload's working directory.
	Dir string
	// Retries is how many more times a disturbed level is measured (other
	// load held its workload back, see DisturbedShare): after a pass
	// over all levels the disturbed ones run again, so a burst of load
	// meets different levels' attempts, and each level keeps its least
	// disturbed measurement. 0 measures each level once.
	Retries int
	// ProcRoot is where /proc is mounted; empty means /proc.
	ProcRoot string
}

// Runner is a live profiler of one process (a *sample.Sampler): a Source
// that says why it ended.
type Runner interface {
	snapshot.Source
	StopReason() sample.StopReason
}

// Level is one run of the workload.
type Level struct {
	N          int
	Throughput float64
	// Normalized is throughput over the first level's (for CPUs: the
	// speed-up relative to the smallest CPU count).
	Normalized float64
	Summary    *analysis.Summary
	// OtherCPUShare is the share of the level's CPUs that went to anything
	// but the workload during the measurement (other processes, the
	// kernel, ctprof, a hypervisor's steal): CPU time the workload could
	// not have had. See Disturbed.
	OtherCPUShare float64
	// Measurements is how many times the level was measured; the one kept
	// is the least disturbed.
	Measurements int
}

// Result is a whole experiment.
type Result struct {
	Vary       Vary
	Throughput string // where the figures come from
	Levels     []Level
	// Locks follows each lock seen contended at any level across the
	// levels, most growing first.
	Locks []LockTrend
}

// LockTrend is one lock's contention at each level. Java locks are
// followed by contention site (each level is a new process, with new
// addresses): ID is the site's ID, BlockedShare the largest of its
// instances' and AvgWaiters their sum.
type LockTrend struct {
	ID   string
	Name string
	Site string
	// BlockedShare[i] is the share of samples at Levels[i] in which a
	// thread queued on it; AvgWaiters[i] the mean number queued.
	BlockedShare []float64
	AvgWaiters   []float64
}

// ErrWorkloadFailed means the workload exited or could not be measured.
var ErrWorkloadFailed = errors.New("workload failed")

// Run runs the experiment, reporting progress through note.
func Run(ctx context.Context, o Options, note func(string)) (*Result, error) {
	if len(o.Command) == 0 {
		return nil, fmt.Errorf("no workload command")
	}
	if len(o.Levels) < 2 {
		return nil, fmt.Errorf("a scaling run needs at least two levels, got %v", o.Levels)
	}
	if o.Vary == VaryCPUs {
		for _, n := range o.Levels {
			if n < 1 || n > len(o.CPUs) {
				return nil, fmt.Errorf("cannot bind to %d CPUs: ctprof may use %d (%v)", n, len(o.CPUs), o.CPUs)
			}
		}
	}
	if note == nil {
		note = func(string) {}
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	res := &Result{Vary: o.Vary}
	for _, n := range o.Levels {
		lv, desc, err := runLevel(ctx, o, n, note)
		if err != nil {
			return res, fmt.Errorf("at %d %s: %w", n, o.Vary, err)
		}
		lv.Measurements = 1
		res.Throughput = desc
		res.Levels = append(res.Levels, lv)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	for pass := 1; pass <= o.Retries; pass++ {
		again := false
		for i, n := range o.Levels {
			kept := &res.Levels[i]
			if !kept.Disturbed() {
				continue
			}
			again = true
			note(fmt.Sprintf("%s: other processes took %.0f %% of its CPUs during the measurement while its threads queued for one: measuring again (%d of %d)",
				levelName(o, n), 100*kept.OtherCPUShare, pass, o.Retries))
			lv, _, err := runLevel(ctx, o, n, note)
			if err != nil {
				return res, fmt.Errorf("at %d %s: %w", n, o.Vary, err)
			}
			lv.Measurements = kept.Measurements + 1
			if lessDisturbed(lv, *kept) {
				*kept = lv
			} else {
				kept.Measurements = lv.Measurements
			}
		}
		if !again {
			break
		}
	}
	if base := res.Levels[0].Throughput; base > 0 {
		for i := range res.Levels {
			res.Levels[i].Normalized = res.Levels[i].Throughput / base
		}
	}
	res.Locks = lockTrends(res.Levels)
	return res, nil
}

func runLevel(ctx context.Context, o Options, n int, note func(string)) (Level, string, error) {
	tp, err := o.NewThroughput()
	if err != nil {
		return Level{}, "", err
	}
	args := append([]string(nil), o.Command...)
	env := os.Environ()
	var cpus []int
	switch o.Vary {
	case VaryCPUs:
		cpus = o.CPUs[:n]
	case VaryConcurrency:
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "{n}", strconv.Itoa(n))
		}
		env = append(env, "CTPROF_CONCURRENCY="+strconv.Itoa(n))
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Dir = o.Dir
	out := &tail{}
	var sink io.Writer = &lineWriter{fn: out.add}
	if rt, ok := tp.(*RegexThroughput); ok {
		sink = io.MultiWriter(sink, rt.Writer())
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Level{}, "", fmt.Errorf("%w: a pipe for its output: %v", ErrWorkloadFailed, err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	// If ctprof dies, the workload must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	startErr := startBound(cmd, cpus)
	pw.Close() // the workload's copy stays open while it runs
	if startErr != nil {
		pr.Close()
		return Level{}, "", fmt.Errorf("%w: start %s: %v", ErrWorkloadFailed, args[0], startErr)
	}
	output := readOutput(pr, sink)
	defer output.Close()
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// What it printed last, before its exit is reported.
		output.Sync(time.Second)
		exited <- err
	}()
	defer stop(cmd, exited)

	where := levelName(o, n)
	if cpus == nil {
		cpus = o.CPUs
	}
	note(fmt.Sprintf("%s: pid %d started, warming up %s", where, pid, o.Warmup))
	select {
	case <-ctx.Done():
		return Level{}, "", ctx.Err()
	case err := <-exited:
		exited <- err
		return Level{}, "", fmt.Errorf("%w: it exited during warm-up (%v); its last output:\n%s", ErrWorkloadFailed, err, out.String())
	case <-time.After(o.Warmup):
	}

	newSampler := o.Sampler
	if newSampler == nil {
		newSampler = func(pid int) (Runner, error) {
			return sample.NewSampler(sample.Options{PID: pid, Interval: o.Interval, Duration: o.Measure})
		}
	}
	s, err := newSampler(pid)
	if err != nil {
		return Level{}, "", fmt.Errorf("%w: profile pid %d: %v", ErrWorkloadFailed, pid, err)
	}
	defer s.Close()
	clockFrom, clockErr := readCPUClock(o.ProcRoot, pid, cpus)
	// Lines printed during warm-up are not the window's, however late
	// ctprof reads them.
	output.Sync(time.Second)
	if err := tp.Begin(ctx); err != nil {
		return Level{}, "", fmt.Errorf("%w: %v", ErrWorkloadFailed, err)
	}
	note(fmt.Sprintf("%s: measuring for %s", where, o.Measure))
	agg := analysis.New()
	mctx, cancel := context.WithTimeout(ctx, o.Measure+o.Interval)
	_, runErr := agg.Drain(mctx, s, nil)
	cancel()
	reason := s.StopReason()
	if ctx.Err() != nil {
		return Level{}, "", ctx.Err()
	}
	if reason == sample.StopTargetGone {
		return Level{}, "", fmt.Errorf("%w: it exited during the measurement; its last output:\n%s", ErrWorkloadFailed, out.String())
	}
	if runErr != nil {
		return Level{}, "", fmt.Errorf("%w: profiling: %v", ErrWorkloadFailed, runErr)
	}
	// The lines printed during the window are the window's, however late
	// ctprof reads them.
	output.Sync(time.Second)
	x, err := tp.End(ctx)
	if err != nil {
		return Level{}, "", fmt.Errorf("%w: %v", ErrWorkloadFailed, err)
	}
	lv := Level{N: n, Throughput: x, Summary: agg.Summary()}
	// Without /proc/stat the disturbance is unknown: counted as none, so
	// the measurement is kept as it is, as without retries.
	if clockErr == nil {
		if clockTo, err := readCPUClock(o.ProcRoot, pid, cpus); err == nil {
			lv.OtherCPUShare = otherShare(clockFrom, clockTo)
		}
	}
	queued := 0.0
	if lv.Summary != nil {
		queued = lv.Summary.RunQueueWaitShare
	}
	note(fmt.Sprintf("%s: throughput %.6g (other processes took %.0f %% of its CPUs; its threads queued for a CPU %.0f %% of their runnable time)",
		where, x, 100*lv.OtherCPUShare, 100*queued))
	return lv, tp.Describe(), nil
}

// levelName says where a level runs, for notes.
func levelName(o Options, n int) string {
	if o.Vary == VaryCPUs && n <= len(o.CPUs) {
		return fmt.Sprintf("%d CPU(s) %v", n, o.CPUs[:n])
	}
	return fmt.Sprintf("%d", n)
}

// stop ends the workload we started: SIGTERM, then SIGKILL after a grace
// period, by its pid, and reaps it.
func stop(cmd *exec.Cmd, exited chan error) {
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// tail keeps the workload's last lines for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 20 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return "  " + strings.Join(t.lines, "\n  ")
}

// lockTrends follows every lock contended at some level across all levels.
func lockTrends(levels []Level) []LockTrend {
	by := map[string]*LockTrend{}
	var order []string
	for i, lv := range levels {
		if lv.Summary == nil {
			continue
		}
		for _, l := range lv.Summary.Locks {
			// Each level is a new process, where a Java lock has a new
			// address: follow its contention site (class + wait site), and
			// sum the instances of one site.
			key := l.ID
			if l.Site != "" {
				key = l.Site
			}
			tr := by[key]
			if tr == nil {
				tr = &LockTrend{ID: key, Name: analysis.LockName(l), BlockedShare: make([]float64, len(levels)), AvgWaiters: make([]float64, len(levels))}
				if l.WaitFrame != nil {
					tr.Site = *l.WaitFrame
				}
				by[key] = tr
				order = append(order, key)
			}
			tr.BlockedShare[i] = max(tr.BlockedShare[i], l.BlockedShare)
			tr.AvgWaiters[i] += l.AvgWaiters
		}
	}
	out := make([]LockTrend, 0, len(order))
	for _, id := range order {
		out = append(out, *by[id])
	}
	growth := func(t LockTrend) float64 { return t.BlockedShare[len(t.BlockedShare)-1] - t.BlockedShare[0] }
	sort.SliceStable(out, func(i, j int) bool { return growth(out[i]) > growth(out[j]) })
	return out
}
