package symbolize_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/require"
)

// manyBlockedThreads starts many_threads with n sleepers and returns its
// threads once all of them sleep in a system call.
func manyBlockedThreads(b *testing.B, n int) (*testnative.Process, []procfs.Thread) {
	b.Helper()
	p := testnative.Start(b, "many_threads", "1000")
	r, err := procfs.NewFS("/proc").NewThreadReader(p.PID)
	require.NoError(b, err)
	defer r.Close()
	var threads []procfs.Thread
	require.NoError(b, testnative.PollUntil(60*time.Second, func() error {
		threads, err = r.Read(nil)
		if err != nil {
			return err
		}
		blocked := 0
		for _, t := range threads {
			if t.Syscall >= 0 && t.SyscallPC != 0 {
				blocked++
			}
		}
		if blocked < n+1 {
			return errNotYet
		}
		return nil
	}))
	return p, threads
}

var errNotYet = errorString("not yet")

type errorString string

func (e errorString) Error() string { return string(e) }

func reportUnwind(b *testing.B, u *symbolize.Unwinder, threads []procfs.Thread) {
	st := u.Stats()
	frames := 0
	for _, t := range threads {
		frames += len(t.Stack)
		if len(t.Stack) < 4 {
			b.Fatalf("thread %d: short stack %v", t.TID, frameNames(t.Stack))
		}
	}
	b.ReportMetric(float64(len(threads))*float64(b.N)/b.Elapsed().Seconds(), "stacks/s")
	b.ReportMetric(float64(frames)/float64(len(threads)), "frames/stack")
	b.ReportMetric(float64(st.TableBytes), "table-bytes")
	if st.Modules > 0 {
		b.ReportMetric(float64(st.TableBytes)/float64(st.Modules), "table-bytes/module")
	}
	b.ReportMetric(float64(st.Reads)/float64(st.Stacks), "reads/stack")
	for name, n := range st.ModuleBytes {
		if strings.HasPrefix(name, "libc.so") {
			b.ReportMetric(float64(n), "libc-table-bytes")
		}
	}
	b.Logf("table bytes by module: %v", st.ModuleBytes)
}

// BenchmarkUnwind1000ThreadsWarm unwinds the 1,001 blocked threads of
// many_threads with the tables read and the program counters cached: one
// op is the whole sweep (UnwindBlocked, its read of the maps included).
func BenchmarkUnwind1000ThreadsWarm(b *testing.B) {
	p, threads := manyBlockedThreads(b, 1000)
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	procfs.UnwindBlocked(u, threads, mem)
	b.ResetTimer()
	for b.Loop() {
		procfs.UnwindBlocked(u, threads, mem)
	}
	b.StopTimer()
	reportUnwind(b, u, threads)
}

// BenchmarkUnwind1000ThreadsCold is the same sweep with nothing cached:
// a new Unwinder, and the shared tables dropped, so each op reads the
// binaries' .eh_frame and symbols again (libc's from its debug file).
func BenchmarkUnwind1000ThreadsCold(b *testing.B) {
	p, threads := manyBlockedThreads(b, 1000)
	fs := procfs.NewFS("/proc")
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var u *symbolize.Unwinder
	for b.Loop() {
		symbolize.ClearTableCache()
		u = symbolize.NewUnwinder(fs.Target(p.PID))
		procfs.UnwindBlocked(u, threads, mem)
	}
	b.StopTimer()
	reportUnwind(b, u, threads)
}

// TestUnwindTableBytes logs what libc's tables hold, part by part.
func TestUnwindTableBytesLibc(t *testing.T) {
	p := testnative.Start(t, "many_threads", "2")
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	threads, err := r.Read(nil)
	require.NoError(t, err)
	procfs.UnwindBlocked(u, threads, fs.NewMemReader(p.PID))
	tables := u.TableSizes()
	require.NotEmpty(t, tables, "no module's tables were loaded")
	for _, line := range tables {
		t.Log(line)
	}
}

// BenchmarkUnwindFirstStackCold is the first unwind of one blocked thread
// with nothing cached: the binaries' tables read (libc's .eh_frame, its
// debug file's symbols), then one stack.
func BenchmarkUnwindFirstStackCold(b *testing.B) {
	p := testnative.Start(b, "many_threads", "1")
	fs := procfs.NewFS("/proc")
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var th procfs.Thread
	require.NoError(b, testnative.PollUntil(30*time.Second, func() error {
		r, err := fs.NewThreadReader(p.PID)
		if err != nil {
			return err
		}
		defer r.Close()
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		for _, t := range threads {
			if t.Name == "sleeper-0" && t.Syscall >= 0 && t.SyscallPC != 0 {
				th = t
				return nil
			}
		}
		return errNotYet
	}))
	var u *symbolize.Unwinder
	var st []symbolize.StackFrame
	for b.Loop() {
		symbolize.ClearTableCache()
		u = symbolize.NewUnwinder(fs.Target(p.PID))
		st = u.Unwind(symbolize.Regs{PC: th.SyscallPC, SP: th.SyscallSP}, mem, symbolize.MaxStackFrames)
	}
	b.StopTimer()
	if len(st) < 4 {
		b.Fatalf("short stack %v", frameNames(st))
	}
	b.ReportMetric(float64(u.Stats().TableBytes), "table-bytes")
}
