//go:build linux && amd64

package testservers

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// rocksdbWriters is db_bench's writer threads: enough, on two cores, that
// most of them queue in a write group behind the leader's WAL sync.
const rocksdbWriters = 16

// rocksdbSeconds bounds the benchmark: longer than any test samples it,
// and it is killed when the test ends anyway.
const rocksdbSeconds = 90

// rocksdbWriteGroupSite is where a follower waits for its write group's
// leader: WriteThread::AwaitState blocks in BlockingAwaitState on the
// writer's own condition variable (one per writer, on its stack: many
// addresses, one resource). librocksdb exports its C++ symbols, so the
// frames have names.
var rocksdbWriteGroupSite = regexp.MustCompile(`^rocksdb::WriteThread::(BlockingAwaitState|AwaitState|JoinBatchGroup)\b`)

// StartRocksDB runs RocksDB's own benchmark, db_bench from Debian's
// rocksdb-tools, on a database in a temporary directory: fillrandom with
// 16 threads of synced writes, so that writers queue in RocksDB's write
// groups (one leader appends the group's batches to the WAL and
// fdatasyncs it, the followers wait for it in WriteThread::AwaitState),
// and small memtables and levels, so that the background pools flush and
// compact while it runs. The engine runs inside db_bench: its pid is the
// server. It returns once the writers write, and kills db_bench by pid
// when the test ends.
func StartRocksDB(t testing.TB) *Server {
	t.Helper()
	bin := findRocksDBBench(t)
	dir := t.TempDir()
	outPath := filepath.Join(dir, "db_bench.out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatalf("create %s: %v", outPath, err)
	}
	defer out.Close()
	cmd := exec.Command(bin,
		"--db="+filepath.Join(dir, "db"), "--benchmarks=fillrandom",
		"--threads="+strconv.Itoa(rocksdbWriters), "--sync=true",
		"--num=100000000", "--duration="+strconv.Itoa(rocksdbSeconds), "--value_size=100",
		"--compression_type=none",
		// Two background jobs (one flush, one compaction thread) and
		// memtables of 256 KB with small levels: a flush every second or
		// so and compactions behind it, so the pools are seen at work
		// (their I/O) as well as waiting for a job.
		"--max_background_jobs=2", "--disable_auto_compactions=false",
		"--write_buffer_size=262144", "--target_file_size_base=1048576",
		"--max_bytes_for_level_base=4194304",
		// The library's default write path (db_bench's flag defaults to
		// the pipelined one): the leader writes and syncs the WAL, then
		// the group's writers insert into the memtable in parallel.
		"--enable_pipelined_write=false")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our child: its pid is ours until reaped
		<-done
	})
	waitRocksDBWriting(t, outPath, done)
	return &Server{
		Name:    "rocksdb",
		PID:     pid,
		Lang:    "C++",
		Shape:   "thread pool (background jobs) and writer threads in write groups",
		Label:   rocksdbLabel(pid),
		TopSite: rocksdbWriteGroupSite,
		TopRole: regexp.MustCompile(`^write-group `),
		Notes: "Writers are db_bench's 16 benchmark threads in DBImpl::WriteImpl (non-pipelined writes). " +
			"A writer blocked in WriteThread::AwaitState waits for another writer: a follower in " +
			"JoinBatchGroup for its leader's WAL write and fdatasync, a parallel memtable writer in " +
			"CompleteParallelMemTableWriter for the group's last writer; so is a writer queued on a mutex " +
			"or stalled in DelayWrite for a flush: all contention. The leader in fdatasync/write of the " +
			"WAL is io; a writer in a timed sleep (DelayWrite's throttle) is sleep. The flush and " +
			"compaction pools (rocksdb:high, rocksdb:low) in ThreadPoolImpl::BGThread's condition wait " +
			"with only the waiting machinery above the loop are idle; inside a job, file I/O is io and a " +
			"futex wait contention. The Timer thread waiting for its next periodic task is idle. " +
			"db_bench's main thread waits on a condition until its benchmark threads finish: a join, so " +
			"contention at its own site (never the top one). A stack with no frame outside the C " +
			"library (not unwound, or cut short because the thread moved) is labelled from the system " +
			"call only where that is certain: file I/O is io (db_bench touches files only inside work), " +
			"FUTEX_WAIT on a word set to 2 a mutex queue, the main thread's futex its join, and a futex " +
			"on the thread's own stack a writer's Writer (the engine's other conditions live in the " +
			"heap). TopWaiters is nil: RocksDB keeps no live count of waiting writers (--statistics " +
			"gives write-group and stall totals printed at the end), so the labels are the truth.",
	}
}

// findRocksDBBench finds db_bench (Debian names it so; some builds call it
// rocksdb_db_bench).
func findRocksDBBench(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"db_bench", "rocksdb_db_bench"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("db_bench is not installed: apt-get install rocksdb-tools (scripts/deps.sh installs it)")
	return ""
}

// waitRocksDBWriting waits until db_bench reports writes done ("...
// finished 100 ops"): the threads have passed the benchmark's start
// latch and write. Opening the database takes well under a second, much
// longer on a loaded machine.
func waitRocksDBWriting(t testing.TB, outPath string, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(outPath)
		if strings.Count(string(b), "... finished") >= rocksdbWriters/2 {
			return
		}
		select {
		case <-done:
			t.Fatalf("db_bench exited before writing: %s", rocksdbTail(b, 2000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("db_bench wrote nothing within 60 s: %s", rocksdbTail(b, 2000))
		}
	}
}

// rocksdbTail is the last n bytes of b, for messages.
func rocksdbTail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// rocksdbLabel labels db_bench's threads by role (see Notes); pid is the
// main thread's tid.
func rocksdbLabel(pid int) func(t *procfs.Thread) Label {
	return func(t *procfs.Thread) Label {
		if t.State == 'R' {
			return Label{Verdict: Running, Role: "running"}
		}
		if !slices.ContainsFunc(t.Stack, func(f symbolize.StackFrame) bool { return !rocksdbWaitMachinery(f) }) {
			// Not unwound, or cut short inside the C library (the thread
			// moved while its stack was read): no frame tells its role.
			return rocksdbLabelNoStack(pid, t)
		}
		switch {
		case rhFrameWithPrefix(t.Stack, "rocksdb::DBImpl::WriteImpl(", "rocksdb::DBImpl::PipelinedWriteImpl("):
			return rocksdbWriterLabel(t)
		case rhFrameWithPrefix(t.Stack, "rocksdb::ThreadPoolImpl::Impl::BGThread("):
			return rocksdbLoopLabel(t, "rocksdb::ThreadPoolImpl::Impl::BGThread(",
				"flush/compaction pool worker waiting for a job", "background job")
		case rhFrameWithPrefix(t.Stack, "rocksdb::Timer::Run("):
			return rocksdbLoopLabel(t, "rocksdb::Timer::Run(",
				"timer thread waiting for its next periodic task", "periodic task")
		case t.TID == pid && t.Syscall == unix.SYS_FUTEX:
			return Label{Verdict: Contention, Role: "db_bench main waiting for its benchmark threads (a join)"}
		case t.Syscall == unix.SYS_FUTEX && rhFrameWithPrefix(t.Stack, "rocksdb::port::CondVar::Wait("):
			// A benchmark thread outside the engine waits on db_bench's
			// shared condition: the start latch, before the run.
			return Label{Verdict: Contention, Role: "benchmark thread at db_bench's start latch"}
		}
		// A stack that names no role (cut short or misread past a frame)
		// still has its system call.
		return rocksdbLabelNoStack(pid, t)
	}
}

// rocksdbWriterLabel labels a writer (a benchmark thread inside
// DBImpl::WriteImpl) by what it is blocked in.
func rocksdbWriterLabel(t *procfs.Thread) Label {
	switch {
	case t.Syscall == unix.SYS_FUTEX || t.Syscall == unix.SYS_SCHED_YIELD:
		// Every wait of the write path is for another thread: the group's
		// leader, the group's memtable writers, the DB mutex's holder, or
		// the flush that ends a write stall.
		switch {
		case rhFrameWithPrefix(t.Stack, "rocksdb::WriteThread::JoinBatchGroup("):
			return Label{Verdict: Contention, Role: "write-group follower waiting for its leader's WAL sync (JoinBatchGroup)"}
		case rhFrameWithPrefix(t.Stack, "rocksdb::WriteThread::CompleteParallelMemTableWriter("):
			return Label{Verdict: Contention, Role: "write-group member waiting for the group's other memtable writers"}
		case rhFrameWithPrefix(t.Stack, "rocksdb::WriteThread::ExitAsBatchGroupLeader("):
			return Label{Verdict: Contention, Role: "write-group leader waiting for the group's memtable writers"}
		case rhFrameWithPrefix(t.Stack, "rocksdb::DBImpl::DelayWrite("):
			return Label{Verdict: Contention, Role: "writer stalled until a flush or compaction ends"}
		}
		return Label{Verdict: Contention, Role: "writer waiting for another thread (mutex or condition)"}
	case t.Syscall == unix.SYS_NANOSLEEP || t.Syscall == unix.SYS_CLOCK_NANOSLEEP:
		return Label{Verdict: Sleep, Role: "writer throttled by a timed sleep (DelayWrite)"}
	case rocksdbFileIO(t.Syscall):
		if rhFrameWithPrefix(t.Stack, "rocksdb::DBImpl::WriteToWAL(") {
			return Label{Verdict: IO, Role: "WAL leader writing or syncing the WAL"}
		}
		return Label{Verdict: IO, Role: "writer doing file I/O (new WAL, memtable switch)"}
	}
	return Label{}
}

// rocksdbLoopLabel labels a thread of a run loop (loop is the loop's frame,
// a prefix of its symbol): idle when it waits right in the loop, with only
// the waiting machinery (the C library, the C++ runtime, RocksDB's own
// condition wrappers) above it; otherwise it is inside a unit of work.
func rocksdbLoopLabel(t *procfs.Thread, loop, idleRole, work string) Label {
	inLoop := true
	for _, f := range t.Stack {
		if strings.HasPrefix(f.Function, loop) {
			break
		}
		if !rocksdbWaitMachinery(f) {
			inLoop = false
			break
		}
	}
	switch {
	case t.Syscall == unix.SYS_FUTEX && rhQueuedOnMutex(t):
		// Woken from the loop's condition, or inside the job, it queues
		// for a mutex another thread holds.
		return Label{Verdict: Contention, Role: work + " thread queued on a mutex"}
	case inLoop && t.Syscall == unix.SYS_FUTEX:
		return Label{Verdict: Idle, Role: idleRole}
	case t.Syscall == unix.SYS_FUTEX:
		return Label{Verdict: Contention, Role: work + " waiting for another thread (DB mutex or condition)"}
	case t.Syscall == unix.SYS_NANOSLEEP || t.Syscall == unix.SYS_CLOCK_NANOSLEEP:
		return Label{Verdict: Sleep, Role: work + " in a timed sleep"}
	case rocksdbFileIO(t.Syscall):
		return Label{Verdict: IO, Role: work + " doing file I/O (flush or compaction)"}
	}
	return Label{}
}

// rocksdbWaitMachinery tells the frames of waiting itself: the C library's
// and the C++ runtime's, and RocksDB's thin wrappers of a condition.
func rocksdbWaitMachinery(f symbolize.StackFrame) bool {
	for _, m := range []string{"libc.so", "libpthread", "libstdc++", "ld-linux", "libgcc_s"} {
		if strings.HasPrefix(f.Module, m) {
			return true
		}
	}
	fn := f.Function
	return strings.HasPrefix(fn, "__") || strings.HasPrefix(fn, "pthread_") || strings.HasPrefix(fn, "std::") ||
		strings.HasPrefix(fn, "rocksdb::port::CondVar::") || strings.HasPrefix(fn, "rocksdb::InstrumentedCondVar::")
}

// rocksdbLabelNoStack labels a thread whose stack was not unwound, only
// where the system call alone tells its role for certain.
func rocksdbLabelNoStack(pid int, t *procfs.Thread) Label {
	switch {
	case rocksdbFileIO(t.Syscall):
		// db_bench touches files only inside work: the WAL, flushes,
		// compactions.
		return Label{Verdict: IO, Role: "file I/O (no stack)"}
	case t.Syscall == unix.SYS_NANOSLEEP || t.Syscall == unix.SYS_CLOCK_NANOSLEEP:
		return Label{Verdict: Sleep, Role: "timed sleep (no stack)"}
	case t.Syscall == unix.SYS_FUTEX && t.TID == pid:
		return Label{Verdict: Contention, Role: "db_bench main waiting for its benchmark threads (no stack)"}
	case t.Syscall == unix.SYS_FUTEX && rhQueuedOnMutex(t):
		return Label{Verdict: Contention, Role: "queued on a mutex (no stack)"}
	case t.Syscall == unix.SYS_FUTEX && t.SyscallArgs[0] >= t.SyscallSP && t.SyscallArgs[0]-t.SyscallSP < 64<<10:
		// A condition on the thread's own stack: in db_bench only a
		// writer's WriteThread::Writer lives there (the engine's other
		// conditions are in the heap; the start latch is on the main
		// thread's stack), waited on in AwaitState.
		return Label{Verdict: Contention, Role: "write-group follower on its own Writer's condition (no stack)"}
	}
	return Label{}
}

// rocksdbFileIO tells the system calls of file I/O RocksDB makes.
func rocksdbFileIO(nr int) bool {
	switch nr {
	case unix.SYS_FDATASYNC, unix.SYS_FSYNC, unix.SYS_SYNC_FILE_RANGE, unix.SYS_WRITE, unix.SYS_PWRITE64,
		unix.SYS_WRITEV, unix.SYS_PWRITEV, unix.SYS_READ, unix.SYS_PREAD64, unix.SYS_READV, unix.SYS_PREADV,
		unix.SYS_FALLOCATE, unix.SYS_FTRUNCATE, unix.SYS_OPENAT, unix.SYS_CLOSE, unix.SYS_UNLINK,
		unix.SYS_UNLINKAT, unix.SYS_RENAME, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2:
		return true
	}
	return false
}

// rhQueuedOnMutex tells a thread blocked on a glibc mutex (also the one a
// condition wait takes back on waking): glibc sleeps with FUTEX_WAIT on the
// lock word set to 2 (locked, with waiters), in __lll_lock_wait, while its
// conditions use FUTEX_WAIT_BITSET.
func rhQueuedOnMutex(t *procfs.Thread) bool {
	if t.Syscall != unix.SYS_FUTEX {
		return false
	}
	if rhFutexCmd(t.SyscallArgs[1]) == rhFutexWait && t.SyscallArgs[2] == 2 {
		return true
	}
	for _, f := range t.Stack {
		if strings.Contains(f.Function, "lll_lock_wait") {
			return true
		}
	}
	return false
}

// The futex(2) operations the rules read (linux/futex.h).
const (
	rhFutexWait          = 0
	rhFutexPrivateFlag   = 128
	rhFutexClockRealtime = 256
)

// rhFutexCmd is a futex operation without its private and clock flags.
func rhFutexCmd(op uint64) uint64 {
	return op &^ (rhFutexPrivateFlag | rhFutexClockRealtime)
}

// rhFrameWithPrefix tells whether a frame's function begins with one of prefixes
// (a C++ symbol with its parameters, so "ns::Class::Method(" names one
// function and no other with that prefix). A template's symbol starts
// with its return type; none of the functions asked for is one.
func rhFrameWithPrefix(stack []symbolize.StackFrame, prefixes ...string) bool {
	for _, f := range stack {
		for _, p := range prefixes {
			if strings.HasPrefix(f.Function, p) {
				return true
			}
		}
	}
	return false
}
