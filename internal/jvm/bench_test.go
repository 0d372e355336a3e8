package jvm

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// BenchmarkDumpVersusJcmd takes dumps of a real 4,000-thread JVM (started
// by the benchmark) three ways in one run: over the attach protocol and
// parsed (ctprof's way), Thread.dump_to_file over attach (JDK 25), and
// `jcmd <pid> Thread.print` alone (the JDK tool, which starts a JVM each
// time). "pause-µs" is the safepoint time the target accumulated per dump;
// "cpu-ms" is the CPU the dumping side used per dump: ctprof's own process
// for its ways, the jcmd processes for jcmd's (the target's share is the
// same either way: it prints the same dump).
//
//	go test -run '^$' -bench DumpVersusJcmd -benchtime 10x -count 3 ./internal/jvm/
func BenchmarkDumpVersusJcmd(b *testing.B) {
	for _, jdk := range []testjvm.JDK{testjvm.JDK17(b), testjvm.JDK25(b)} {
		p := testjvm.Start(b, jdk, "ManyThreads", "4000")
		info, err := Inspect("/proc", p.PID)
		if err != nil {
			b.Fatal(err)
		}
		pause := func(b *testing.B, fn func()) {
			before, _ := info.ReadPerfData()
			cpuBefore := cpuUsed()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fn()
			}
			b.StopTimer()
			cpu := cpuUsed() - cpuBefore
			after, _ := info.ReadPerfData()
			d := after.Counters().SafepointTime - before.Counters().SafepointTime
			b.ReportMetric(float64(d.Microseconds())/float64(b.N), "pause-µs/op")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
		b.Run(jdk.Name+"/ctprof-attach+parse", func(b *testing.B) {
			pause(b, func() {
				res, err := ThreadDump(context.Background(), info, DumpOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := threaddump.ParseBytes(res.Text); err != nil {
					b.Fatal(err)
				}
			})
		})
		if jdk.Major >= 21 {
			b.Run(jdk.Name+"/ctprof-dump_to_file+parse", func(b *testing.B) {
				pause(b, func() {
					res, err := ThreadDump(context.Background(), info, DumpOptions{Mode: ModeDumpToFile})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := threaddump.ParseBytes(res.Text); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
		b.Run(jdk.Name+"/jcmd-Thread.print", func(b *testing.B) {
			pause(b, func() {
				out, err := exec.Command(jdk.Bin("jcmd"), strconv.Itoa(p.PID), "Thread.print").Output()
				if err != nil || len(out) < 1000 {
					b.Fatalf("jcmd: %v", err)
				}
			})
		})
		p.Stop()
		time.Sleep(100 * time.Millisecond)
	}
}

// cpuUsed is the user+system CPU of this process and of its waited-for
// children (the jcmd runs) so far.
func cpuUsed() time.Duration {
	var self, children unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &children)
	tv := func(t unix.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}
