package threaddump_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Thread.dump_to_file exists from JDK 21; these tests take its output from
// real Temurin 25 JVMs, in both formats.

var dumpFormats = []struct {
	name   string
	format threaddump.Format
}{{"json", threaddump.FormatThreadDumpJSON}, {"text", threaddump.FormatThreadDumpText}}

// hotLock polls Thread.dump_to_file until cond accepts a parsed dump.
func pollDumpToFile(t *testing.T, p *testjvm.Process, format string, cond func(*threaddump.Dump) bool) *threaddump.Dump {
	t.Helper()
	deadline := time.Now().Add(dumpTimeout)
	var last *threaddump.Dump
	for {
		d := parseOne(t, p.DumpToFile(t, format))
		if cond(d) {
			return d
		}
		last = d
		if time.Now().After(deadline) {
			t.Fatalf("no %s dump met the condition within %s; last had %d threads", format, dumpTimeout, len(last.Threads))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lockOf(d *threaddump.Dump, class string) *threaddump.LockInfo {
	for _, l := range d.Locks() {
		if l.Lock.Class == class {
			return l
		}
	}
	return nil
}

// The monitor contention of SyncSingleton reads the same from
// Thread.dump_to_file (both formats) as from Thread.print of the same JVM.
func TestJVMDumpToFileMonitorContention(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "SyncSingleton", "6")
	contended := func(d *threaddump.Dump) bool {
		l := lockOf(d, "SyncSingleton")
		return l != nil && l.Owner != nil && len(l.Waiters) >= 2
	}
	fromPrint := parseOne(t, p.WaitForDump(t, dumpTimeout, func(b []byte) bool {
		d, err := threaddump.ParseBytes(b)
		return err == nil && contended(d[0])
	}))
	want := lockOf(fromPrint, "SyncSingleton")
	for _, f := range dumpFormats {
		t.Run(f.name, func(t *testing.T) {
			d := pollDumpToFile(t, p, f.name, contended)
			assert.Equal(t, f.format, d.Format)
			assert.Equal(t, p.PID, d.PID)
			assert.Contains(t, d.VM, "25")
			assert.False(t, d.Time.IsZero())
			assert.Zero(t, d.UnknownLines, "%v", d.UnknownSamples)
			assert.Empty(t, d.Warnings)
			l := lockOf(d, "SyncSingleton")
			assert.Equal(t, threaddump.KindMonitor, l.Kind)
			assert.True(t, strings.HasPrefix(l.Owner.Name, "request-"), l.Owner.Name)
			// Between dumps the queue changes; the place it forms does not.
			assert.Equal(t, want.Waiters[0].Thread.Frames[want.Waiters[0].Frame].Function(),
				l.Waiters[0].Thread.Frames[max(l.Waiters[0].Frame, 0)].Function())
			assert.Equal(t, "SyncSingleton.handle", l.Owner.Frames[max(l.OwnerFrame, 0)].Function())
			requests := 0
			for i := range d.Threads {
				if strings.HasPrefix(d.Threads[i].Name, "request-") {
					requests++
					assert.NotZero(t, d.Threads[i].ID)
				}
			}
			assert.Equal(t, 6, requests)
		})
	}
}

func TestJVMDumpToFileParkedOnReentrantLock(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "LockContention", "6")
	for _, f := range dumpFormats {
		t.Run(f.name, func(t *testing.T) {
			d := pollDumpToFile(t, p, f.name, func(d *threaddump.Dump) bool {
				l := lockOf(d, "java.util.concurrent.locks.ReentrantLock$NonfairSync")
				return l != nil && len(l.Waiters) >= 2
			})
			l := lockOf(d, "java.util.concurrent.locks.ReentrantLock$NonfairSync")
			assert.Equal(t, threaddump.KindSynchronizer, l.Kind)
			for _, w := range l.Waiters {
				assert.Equal(t, threaddump.LockParking, w.Action)
				assert.True(t, strings.HasPrefix(w.Thread.Name, "worker-"), w.Thread.Name)
			}
		})
	}
}

func TestJVMDumpToFileVirtualThreads(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "VirtualThreads")
	for _, f := range dumpFormats {
		t.Run(f.name, func(t *testing.T) {
			d := pollDumpToFile(t, p, f.name, func(d *threaddump.Dump) bool {
				l := lockOf(d, "java.util.concurrent.locks.ReentrantLock$NonfairSync")
				return l != nil && len(l.Waiters) >= 100
			})
			virtual := 0
			for i := range d.Threads {
				if d.Threads[i].Virtual {
					virtual++
				}
			}
			assert.GreaterOrEqual(t, virtual, 300, "virtual threads are listed")
			if f.format == threaddump.FormatThreadDumpJSON {
				// The pinned virtual threads name their carriers.
				carriers := 0
				for i := range d.Threads {
					if d.Threads[i].CarryingVirtual != 0 {
						carriers++
						assert.True(t, strings.HasPrefix(d.Threads[i].Name, "ForkJoinPool-"), d.Threads[i].Name)
					}
				}
				assert.GreaterOrEqual(t, carriers, 2)
				containers := map[string]bool{}
				for i := range d.Threads {
					containers[d.Threads[i].Container] = true
				}
				assert.True(t, containers["<root>"])
			}
		})
	}
}

func TestJVMDumpToFileHostileNames(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "HostileNames")
	for _, f := range dumpFormats {
		t.Run(f.name, func(t *testing.T) {
			d := pollDumpToFile(t, p, f.name, func(d *threaddump.Dump) bool {
				l := lockOf(d, "HostileNames$Gate")
				return l != nil && len(l.Waiters) == 5
			})
			names := map[string]bool{}
			for i := range d.Threads {
				names[d.Threads[i].Name] = true
			}
			for _, n := range hostileNames {
				assert.True(t, names[n], "thread %q not found", n)
			}
			assert.Equal(t, hostileNames[0], lockOf(d, "HostileNames$Gate").Owner.Name)
			cycles := d.FindDeadlocks()
			require.Len(t, cycles, 1, "the two-thread deadlock, found from the lock data")
		})
	}
}

var manyThreadsJSON struct {
	once sync.Once
	b    []byte
}

// BenchmarkParseDumpToFileJSON parses a real 4,000-thread JSON dump taken by
// the benchmark from a Temurin 25 JVM.
//
//	go test -run '^$' -bench DumpToFile -benchmem -cpu 1 -count 3 ./pkg/threaddump/
func BenchmarkParseDumpToFileJSON(b *testing.B) {
	manyThreadsJSON.once.Do(func() {
		p := testjvm.Start(b, testjvm.JDK25(b), "ManyThreads", "4000")
		manyThreadsJSON.b = p.DumpToFile(b, "json")
		p.Stop()
	})
	in := manyThreadsJSON.b
	require.Greater(b, len(in), 1<<20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := threaddump.ParseBytes(in); err != nil {
			b.Fatal(err)
		}
	}
}
