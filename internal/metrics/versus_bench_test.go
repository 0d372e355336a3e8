package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// BenchmarkVersusProcessExporter runs ctprof and process-exporter (Debian's
// prometheus-process-exporter, which make deps installs; with -threads, its
// per-thread-name metrics) as exporters of the same 2,000-thread JVM in one
// run: `ctprof serve --pid` at its defaults (a sample every second: a /proc
// sweep, and a thread dump when the pause budget allows) and
// process-exporter, which reads /proc when it is scraped. Both are scraped
// once a second, as Prometheus would, and each one's CPU (user and system,
// from /proc/<pid>/stat, so its runtime and garbage collector count) is
// divided by the intervals. The budget: ctprof at most 1/20 of
// process-exporter.
//
//	go test ./internal/metrics -run '^$' -bench VersusProcessExporter -benchtime 20x
func BenchmarkVersusProcessExporter(b *testing.B) {
	exe, err := exec.LookPath("prometheus-process-exporter")
	if err != nil {
		if exe, err = exec.LookPath("process-exporter"); err != nil {
			b.Fatalf("process-exporter not found: make deps installs Debian's prometheus-process-exporter")
		}
	}
	bin := filepath.Join(b.TempDir(), "ctprof")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ctprof").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	p := testjvm.Start(b, testjvm.JDK17(b), "ManyThreads", "2000")

	peAddr, ctAddr := freePort(b), freePort(b)
	pe := startExporter(b, exe, "-web.listen-address", peAddr, "-procnames", "java", "-threads=true")
	ct := startExporter(b, bin, "serve", "--pid", strconv.Itoa(p.PID), "--listen", ctAddr)
	peURL, ctURL := "http://"+peAddr+"/metrics", "http://"+ctAddr+"/metrics"

	// Both answer, and ctprof has taken its first samples (the first opens
	// every thread's files); then one more interval, as a warm-up.
	err = poll(60*time.Second, func() error {
		if _, err := scrapeURL(peURL); err != nil {
			return fmt.Errorf("process-exporter: %w", err)
		}
		body, err := scrapeURL(ctURL)
		if err != nil {
			return fmt.Errorf("ctprof: %w", err)
		}
		if n := sumOf(parseExposition(b, string(body)), "ctprof_samples_total", nil); n < 2 {
			return fmt.Errorf("ctprof has taken %v samples", n)
		}
		return nil
	})
	if err != nil {
		b.Fatalf("exporters not ready in 60 s: %v", err)
	}
	time.Sleep(time.Second)

	var peSeries, ctSeries int
	var ctBody []byte
	peBefore, ctBefore := processCPU(b, pe), processCPU(b, ct)
	body, err := scrapeURL(ctURL)
	if err != nil {
		b.Fatal(err)
	}
	before := parseExposition(b, string(body))
	samplesBefore, pauseBefore := sumOf(before, "ctprof_samples_total", nil), sumOf(before, "ctprof_target_pause_seconds_total", nil)
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		peBody, err := scrapeURL(peURL)
		if err != nil {
			b.Fatal(err)
		}
		if ctBody, err = scrapeURL(ctURL); err != nil {
			b.Fatal(err)
		}
		peSeries, ctSeries = countSeries(peBody), countSeries(ctBody)
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * time.Second)))
	}
	b.StopTimer()
	peCPU, ctCPU := processCPU(b, pe)-peBefore, processCPU(b, ct)-ctBefore
	after := parseExposition(b, string(ctBody))
	n := float64(b.N)
	b.ReportMetric(float64(peCPU.Milliseconds())/n, "pe-cpu-ms")
	b.ReportMetric(float64(ctCPU.Milliseconds())/n, "ctprof-cpu-ms")
	b.ReportMetric(float64(peSeries), "pe-series")
	b.ReportMetric(float64(ctSeries), "ctprof-series")
	b.ReportMetric(sumOf(after, "ctprof_samples_total", nil)-samplesBefore, "ctprof-samples")
	b.ReportMetric((sumOf(after, "ctprof_target_pause_seconds_total", nil)-pauseBefore)*1000/n, "jvm-pause-ms")
	if ctCPU > 0 {
		b.ReportMetric(float64(peCPU)/float64(ctCPU), "pe/ctprof")
	}
}

// startExporter starts an exporter process and kills it, by its pid, when
// the benchmark ends (or the benchmark process dies: Pdeathsig).
func startExporter(b *testing.B, exe string, args ...string) int {
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if strings.HasSuffix(exe, "ctprof") && os.Getenv("CTGOGC") != "" {
		cmd.Env = append(os.Environ(), "GOGC="+os.Getenv("CTGOGC"), "GODEBUG="+os.Getenv("CTGODEBUG"))
		cmd.Stderr = os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// scrapeURL fetches an exposition as Prometheus would (gzip accepted).
func scrapeURL(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// countSeries counts the sample lines of a text exposition.
func countSeries(body []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Bytes(); len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

// processCPU is a process's user+system CPU from /proc/<pid>/stat.
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}
