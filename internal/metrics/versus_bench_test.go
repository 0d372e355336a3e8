package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
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

	peAddr, ctAddr := freeLoopback(b), freeLoopback(b)
	pe := startExporter(b, exe, "-web.listen-address", peAddr, "-procnames", "java", "-threads=true")
	ct := startExporter(b, bin, "serve", "--pid", strconv.Itoa(p.PID), "--listen", ctAddr)
	peURL, ctURL := "http://"+peAddr+"/metrics", "http://"+ctAddr+"/metrics"

	// Both answer, and ctprof has taken its first samples (the first opens
	// every thread's files); then one more interval, as a warm-up.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, peErr := scrapeURL(peURL)
		ctBody, ctErr := scrapeURL(ctURL)
		if peErr == nil && ctErr == nil && exposedValue(ctBody, "ctprof_samples_total") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("exporters not ready in 60 s: process-exporter %v, ctprof %v", peErr, ctErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)

	var peSeries, ctSeries int
	var ctBody []byte
	peBefore, ctBefore := processCPU(b, pe), processCPU(b, ct)
	body, _ := scrapeURL(ctURL)
	samplesBefore, pauseBefore := exposedValue(body, "ctprof_samples_total"), exposedValue(body, "ctprof_target_pause_seconds_total")
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
	n := float64(b.N)
	b.ReportMetric(float64(peCPU.Milliseconds())/n, "pe-cpu-ms")
	b.ReportMetric(float64(ctCPU.Milliseconds())/n, "ctprof-cpu-ms")
	b.ReportMetric(float64(peSeries), "pe-series")
	b.ReportMetric(float64(ctSeries), "ctprof-series")
	b.ReportMetric(exposedValue(ctBody, "ctprof_samples_total")-samplesBefore, "ctprof-samples")
	b.ReportMetric((exposedValue(ctBody, "ctprof_target_pause_seconds_total")-pauseBefore)*1000/n, "jvm-pause-ms")
	if ctCPU > 0 {
		b.ReportMetric(float64(peCPU)/float64(ctCPU), "pe/ctprof")
	}
}

// freeLoopback is a loopback address with a port free a moment ago.
func freeLoopback(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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

// exposedValue sums the samples of one metric in a text exposition (-1
// when there are none).
func exposedValue(body []byte, name string) float64 {
	sum, found := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
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
