package metrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// BenchmarkVersusProcessExporter runs ctprof and process-exporter (Debian's
// prometheus-process-exporter, which make deps installs; with -threads, its
// per-thread-name metrics) on the same 2,000-thread JVM in one run, and
// compares what one collection interval costs each in CPU: for
// process-exporter one scrape of /metrics (it reads /proc when scraped);
// for ctprof one sample at attach's defaults (a /proc sweep, a thread dump
// when the pause budget allows) plus one scrape. The budget: ctprof at most
// 1/20 of process-exporter.
//
//	go test ./internal/metrics -run '^$' -bench VersusProcessExporter -benchtime 10x
func BenchmarkVersusProcessExporter(b *testing.B) {
	exe, err := exec.LookPath("prometheus-process-exporter")
	if err != nil {
		if exe, err = exec.LookPath("process-exporter"); err != nil {
			b.Fatalf("process-exporter not found: make deps installs Debian's prometheus-process-exporter")
		}
	}
	p := testjvm.Start(b, testjvm.JDK17(b), "ManyThreads", "2000")

	// process-exporter, on loopback, watching processes named java.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	pe := exec.Command(exe, "-web.listen-address", addr, "-procnames", "java", "-threads=true")
	pe.Stdout, pe.Stderr = io.Discard, io.Discard
	if err := pe.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pe.Process.Kill(); _ = pe.Wait() })
	url := "http://" + addr + "/metrics"
	scrapePE := func() int {
		resp, err := http.Get(url)
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		n := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line := sc.Bytes(); len(line) > 0 && line[0] != '#' {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); scrapePE() < 0; {
		if time.Now().After(deadline) {
			b.Fatal("process-exporter did not answer in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// ctprof, at attach's defaults.
	s, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: time.Second, JVM: sample.JVMOptions{PauseBudget: sample.DefaultPauseBudget}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	agg := analysis.New()
	c := NewCollector(CollectorOptions{})
	c.Register(TargetInfoOf(s.Target()), agg)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	var peCPU, ctCPU time.Duration
	peSeries, ctSeries, dumps := 0, 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := processCPU(b, pe.Process.Pid)
		peSeries = scrapePE()
		peCPU += processCPU(b, pe.Process.Pid) - before

		self := selfCPU()
		snap, err := s.Take(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if snap.Dump != nil {
			dumps++
		}
		agg.Add(snap)
		ctSeries = scrape(b, reg)
		ctCPU += selfCPU() - self
		time.Sleep(time.Second) // a collection interval, as both would run
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(peCPU.Milliseconds())/n, "pe-cpu-ms")
	b.ReportMetric(float64(ctCPU.Milliseconds())/n, "ctprof-cpu-ms")
	b.ReportMetric(float64(peSeries), "pe-series")
	b.ReportMetric(float64(ctSeries), "ctprof-series")
	b.ReportMetric(float64(dumps), "ctprof-dumps")
	if ctCPU > 0 {
		b.ReportMetric(float64(peCPU)/float64(ctCPU), "pe/ctprof")
	}
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

// selfCPU is this process's user+system CPU.
func selfCPU() time.Duration {
	var r unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
