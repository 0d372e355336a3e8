package sample

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkOneShotVersusJcmd runs `ctprof attach PID --count 1` (the
// binary, built by the benchmark, as a new user runs it) and `jcmd PID
// Thread.print` alternately against real JVMs running
// testdata/java/ManyThreads.java with 2,000 and 10,000 idle threads about
// 30 frames deep (argument 21 adds 21 frames to its stacks), on JDK 17 and
// 25. Each of b.N rounds runs both once; the figures are medians over the
// rounds, so one noisy moment on a shared machine moves neither much.
// "cpu" is the user+system time of the process run (ctprof, or the jcmd
// launcher JVM). "bare-dump-ms" is the floor a one-shot cannot go under:
// the wall time of the same request (jvm.ThreadDump, as the one-shot asks
// it) taken alone, in this process, in each round after the other two.
// "dump-ms" is the dump's wall time as the one-shot's own sample reports
// it; it is longer than the bare dump by what ctprof's concurrent /proc
// sweep takes from the JVM's CPUs, which is why the goal's ratio is taken
// against the bare dump. "paired-wall/bare-dump" is the median over the
// rounds of each round's one-shot divided by its bare dump. Each round
// also runs the one-shot with CTPROF_NO_EARLY_DUMP=1 (the dump asked for
// after the command line is parsed, as before early dumps):
// "no-early-wall-ms", and "early-gain-ms", the median over the rounds of
// that run's wall time less the one-shot's.
//
// "bare-beside-spin-ms" is the bare dump taken while one thread of another
// process (testdata/c/spinners.c) computes without pause, and
// "cpu-sharing" that over the bare dump: about 1 when the machine's two
// CPUs run independently, up to 2 when one CPU's work slows the other's
// (virtual CPUs that share a core of the host, as this VM's do at busy
// times). It tells which state a run met: a one-shot's /proc sweep runs
// beside the dump, so its dump slows by the same factor.
//
// The "threads=10000-short" case runs ManyThreads without the 21 extra
// frames (argument 0): 10,000 threads of a few frames each, where the
// dump is cheap for the JVM and what ctprof does beside it weighs more.
//
// Goals (issue 16): on 2,000 threads, ctprof >= 3x faster than jcmd in
// wall time and >= 5x in CPU, and within 1.5x of the bare dump time; on
// 10,000 threads, at most half of jcmd's wall time, with short stacks too
// (issue 37).
//
//	go test -run '^$' -bench OneShotVersusJcmd -benchtime 7x -timeout 30m ./internal/sample/
func BenchmarkOneShotVersusJcmd(b *testing.B) {
	bin := buildCtprof(b)
	for _, c := range []struct {
		threads int
		depth   string
		suffix  string
	}{{2000, "21", ""}, {10000, "21", ""}, {10000, "0", "-short"}} {
		for _, jdk := range testjvm.All(b) {
			b.Run(jdk.Name+"/threads="+strconv.Itoa(c.threads)+c.suffix, func(b *testing.B) {
				p := testjvm.Start(b, jdk, "ManyThreads", strconv.Itoa(c.threads), c.depth)
				defer p.Stop()
				pid := strconv.Itoa(p.PID)
				// One run of each first: the JVM's attach listener
				// starts, and jcmd's classes come into the page cache.
				runTimed(b, bin, "attach", pid, "--count", "1", "--format", "json")
				runTimed(b, jdk.Bin("jcmd"), pid, "Thread.print")
				bareDump(b, p.PID)
				spin := testnative.Start(b, "spinners", "1")
				pauseSpinner(b, spin.PID, true)
				var ctWall, ctCPU, dump, bare, jWall, jCPU, lateWall, besideSpin []float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					out, wall, cpu := runTimed(b, bin, "attach", pid, "--count", "1", "--format", "json")
					sum := oneShotCost(b, out, true)
					ctWall, ctCPU, dump = append(ctWall, wall), append(ctCPU, cpu), append(dump, 1000*sum.SampleCost.DumpSeconds)
					out, wall, cpu = runTimed(b, jdk.Bin("jcmd"), pid, "Thread.print")
					if !bytes.Contains(out, []byte("conn-1-reader")) {
						b.Fatalf("jcmd Thread.print: %.300s", out)
					}
					jWall, jCPU = append(jWall, wall), append(jCPU, cpu)
					bare = append(bare, bareDump(b, p.PID))
					out, wall, _ = runTimedEnv(b, []string{"CTPROF_NO_EARLY_DUMP=1"}, bin, "attach", pid, "--count", "1", "--format", "json")
					oneShotCost(b, out, false)
					lateWall = append(lateWall, wall)
					pauseSpinner(b, spin.PID, false)
					time.Sleep(20 * time.Millisecond)
					besideSpin = append(besideSpin, bareDump(b, p.PID))
					pauseSpinner(b, spin.PID, true)
				}
				b.StopTimer()
				b.ReportMetric(median(ctWall), "ctprof-wall-ms")
				b.ReportMetric(median(ctCPU), "ctprof-cpu-ms")
				b.ReportMetric(median(dump), "dump-ms")
				b.ReportMetric(median(jWall), "jcmd-wall-ms")
				b.ReportMetric(median(jCPU), "jcmd-cpu-ms")
				b.ReportMetric(median(jWall)/median(ctWall), "wall-x")
				b.ReportMetric(median(jCPU)/median(ctCPU), "cpu-x")
				b.ReportMetric(median(bare), "bare-dump-ms")
				b.ReportMetric(median(ctWall)/median(dump), "wall/dump")
				b.ReportMetric(median(ctWall)/median(bare), "wall/bare-dump")
				// Each round's one-shot against the bare dump of the same
				// round: a slow spell of the machine moves both.
				paired := make([]float64, len(ctWall))
				for i := range ctWall {
					paired[i] = ctWall[i] / bare[i]
				}
				b.ReportMetric(median(paired), "paired-wall/bare-dump")
				gain := make([]float64, len(ctWall))
				for i := range ctWall {
					gain[i] = lateWall[i] - ctWall[i]
				}
				b.ReportMetric(median(besideSpin), "bare-beside-spin-ms")
				b.ReportMetric(median(besideSpin)/median(bare), "cpu-sharing")
				b.ReportMetric(median(lateWall), "no-early-wall-ms")
				b.ReportMetric(median(gain), "early-gain-ms")
			})
		}
	}
}

// bareDump takes one thread dump of pid the way a one-shot asks for it
// (a fresh jvm.Inspect, then jvm.ThreadDump with the one-shot's options)
// with nothing else running in ctprof, and returns its wall time in
// milliseconds.
func bareDump(b *testing.B, pid int) float64 {
	b.Helper()
	info, err := jvm.Inspect("/proc", pid)
	if err != nil {
		b.Fatal(err)
	}
	res, err := jvm.ThreadDump(context.Background(), info, jvm.DumpOptions{Mode: jvm.ModeThreadPrint})
	if err != nil {
		b.Fatal(err)
	}
	if res.Method != jvm.MethodAttach || !bytes.Contains(res.Text, []byte("conn-1-reader")) {
		b.Fatalf("bare dump by %s: %.300s", res.Method, res.Text)
	}
	return float64(res.Wall.Microseconds()) / 1000
}

// pauseSpinner stops (SIGSTOP) or resumes (SIGCONT) the spinner process
// the benchmark started.
func pauseSpinner(b *testing.B, pid int, stop bool) {
	b.Helper()
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(pid, sig); err != nil {
		b.Fatalf("signal the spinner: %v", err)
	}
}

// buildCtprof builds the ctprof binary as `make build` does (without the
// version stamp) into a temporary directory.
func buildCtprof(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ctprof")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/ctprof/ctprof/cmd/ctprof")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// oneShotSample is what the benchmarks read of a one-shot's summary.
type oneShotSample struct {
	SampleCost struct {
		DumpSeconds float64 `json:"dump_seconds"`
		Dumps       int     `json:"dumps"`
		EarlyDumps  int     `json:"early_dumps"`
	} `json:"sample_cost"`
}

// oneShotCost decodes a one-shot's JSON summary and checks it took one
// dump, asked for early or not as early says.
func oneShotCost(b *testing.B, out []byte, early bool) oneShotSample {
	b.Helper()
	var sum oneShotSample
	if err := json.Unmarshal(out, &sum); err != nil || sum.SampleCost.Dumps != 1 || (sum.SampleCost.EarlyDumps == 1) != early {
		b.Fatalf("ctprof one-shot (early dump expected: %v): %v, %+v: %.300s", early, err, sum.SampleCost, out)
	}
	return sum
}

// runTimed runs a command to its end and returns its standard output, its
// wall time and its CPU time (user + system), in milliseconds.
func runTimed(b *testing.B, name string, args ...string) ([]byte, float64, float64) {
	b.Helper()
	return runTimedEnv(b, nil, name, args...)
}

// runTimedEnv is runTimed with env added to the environment.
func runTimedEnv(b *testing.B, env []string, name string, args ...string) ([]byte, float64, float64) {
	b.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Env = append(cmd.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v\n%s", name, args, err, stderr.Bytes())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return stdout.Bytes(), float64(wall.Microseconds()) / 1000, float64(cpu.Microseconds()) / 1000
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
