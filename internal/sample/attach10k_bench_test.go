package sample

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// BenchmarkAttach10kThreads runs `ctprof attach PID --duration 20s` (the
// binary, built by the benchmark, at the default interval and pause
// budget) against a real JVM running testdata/java/ManyThreads.java with
// 10,000 idle threads about 30 frames deep, on JDK 17 and 25, b.N times
// one after the other; figures are medians over the rounds.
//
// "cpu-s" is the run's user+system time in all, start and final summary
// included, and "maxrss-MB" its peak resident set, both from wait4's
// rusage. "steady-pct" is the CPU of the sampling in the run's second half
// as a percentage of one core: /proc/<ctprof pid>/stat utime+stime read
// 10 s after the start and again 19 s after it (before the final summary,
// which is not steady state), over the wall time between the two reads.
//
// A round fails when a ManyThreads thread is called contention.
//
// Goals (issue 16): at most 0.8 s of CPU, at most 120 MB resident, steady
// state at most 2 % of one core.
//
//	go test -run '^$' -bench Attach10kThreads -benchtime 3x -timeout 30m ./internal/sample/
func BenchmarkAttach10kThreads(b *testing.B) {
	bin := buildCtprof(b)
	for _, jdk := range testjvm.All(b) {
		b.Run(jdk.Name+"/threads=10000", func(b *testing.B) {
			p := testjvm.Start(b, jdk, "ManyThreads", "10000", "21")
			defer p.Stop()
			pid := strconv.Itoa(p.PID)
			var cpu, rss, steady, dumps []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := attachFor20s(b, bin, pid)
				cpu, rss, steady = append(cpu, r.cpuSeconds), append(rss, r.maxRSSMB), append(steady, r.steadyPct)
				dumps = append(dumps, float64(r.dumps))
				b.Logf("round %d: cpu %.2f s, maxrss %.0f MB, steady %.2f %%, %d dumps, %d samples",
					i+1, r.cpuSeconds, r.maxRSSMB, r.steadyPct, r.dumps, r.samples)
			}
			b.StopTimer()
			b.ReportMetric(median(cpu), "cpu-s")
			b.ReportMetric(median(rss), "maxrss-MB")
			b.ReportMetric(median(steady), "steady-pct")
			b.ReportMetric(median(dumps), "dumps")
		})
	}
}

type attachRun struct {
	cpuSeconds, maxRSSMB, steadyPct float64
	dumps, samples                  int
}

// attachFor20s runs one 20 s attach and measures it.
func attachFor20s(b *testing.B, bin, pid string) attachRun {
	b.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "attach", pid, "--duration", "20s", "--format", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("start ctprof: %v", err)
	}
	// If a read below fails the benchmark stops; the child must not
	// outlive it.
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	cpuAt := func(at time.Duration) (float64, time.Duration) {
		time.Sleep(time.Until(start.Add(at)))
		s, err := processCPUSeconds(cmd.Process.Pid)
		if err != nil {
			b.Fatalf("ctprof's CPU at %v: %v (stderr: %.300s)", at, err, stderr.Bytes())
		}
		return s, time.Since(start)
	}
	cpu10, t10 := cpuAt(10 * time.Second)
	cpu19, t19 := cpuAt(19 * time.Second)
	err := cmd.Wait()
	exited = true
	if err != nil {
		b.Fatalf("ctprof attach: %v\n%s", err, stderr.Bytes())
	}
	var sum struct {
		Samples int `json:"samples"`
		Dumps   int `json:"dumps"`
		Waits   []struct {
			Thread  string `json:"thread"`
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		} `json:"waits"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || sum.Dumps < 1 {
		b.Fatalf("ctprof attach summary: %v, %d dumps: %.300s", err, sum.Dumps, stdout.Bytes())
	}
	// The figures count only with the right answer: ManyThreads' threads
	// each wait on an object of their own, none inside work (they were
	// once 6,667 "contention" verdicts, and the cost of their locks).
	for _, w := range sum.Waits {
		if strings.HasPrefix(w.Thread, "conn-") && w.Verdict == "contention" {
			b.Fatalf("%s: contention (%s): its loop waits for its next item", w.Thread, w.Reason)
		}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return attachRun{
		cpuSeconds: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
		maxRSSMB:   float64(ru.Maxrss) / 1024, // Linux reports kB
		steadyPct:  100 * (cpu19 - cpu10) / (t19 - t10).Seconds(),
		dumps:      sum.Dumps,
		samples:    sum.Samples,
	}
}

// processCPUSeconds reads utime+stime of a live process (all its threads)
// from /proc/<pid>/stat.
func processCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: the fields start
	// after the last ')'. utime and stime are fields 14 and 15, so 12 and
	// 13 counting from the state (field 3) as 1.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, os.ErrInvalid
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, os.ErrInvalid
	}
	// USER_HZ is 100 on every Linux ABI Go supports.
	return float64(utime+stime) / 100, nil
}
