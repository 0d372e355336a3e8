package procfs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ThreadReader sweeps /proc/<pid>/task/* once per tick. It keeps the task
// directory, each thread's schedstat and the other files of threads that
// run open between sweeps and re-reads them with pread (the kernel
// regenerates a /proc file read from offset 0), so a file costs one system
// call instead of three. An open /proc file holds a page of kernel memory
// (its seq_file buffer), so an idle thread keeps one open, not five. Names and affinity strings
// are reused while unchanged. A sweep allocates nothing once the thread set
// is stable. Budget: 10 µs per thread per file on a small machine (see
// BenchmarkThreadSweep and docs/PERFORMANCE.md).
//
// Per tick it reads schedstat of every thread, and stat and status of those
// that ran since the last tick (see readThread); wchan and syscall only of
// sleeping threads that ran (a running thread has neither, and reading
// syscall of a running thread makes the kernel wait for it to stop).
// Open descriptors are capped below the process's file limit; files
// beyond the cap are opened and closed each time. schedstat, which every
// tick reads of every thread, comes first: the other files are kept open
// only with what the cap leaves once each known thread has its schedstat
// (see keepOpen). A first sweep of many threads, which opens every file,
// runs on every CPU (see sweepParallel).
//
// In a process of idleSkipThreads threads or more, a thread found idle on
// idleSkipAfter reads in a row is read only every idleStride-th sweep
// (see readThread): reading schedstat costs about 2 µs of kernel time, and
// a server with 10,000 threads has mostly idle ones.
type ThreadReader struct {
	fs     FS
	pid    int
	taskFD int

	dirBuf  []byte
	buf     []byte
	pathBuf []byte
	tids    []int
	// known are the threads the last sweep found, in listing order, and
	// knownFiles their entries of threads (nil where unknown), so that a
	// sweep of the known threads looks none up; lists counts the times
	// the directory was listed (see Read).
	known      []int
	knownFiles []*threadFiles
	lists      int
	// marked counts the threads this sweep has read (their seen set), so
	// that a sweep in which none exited skips the walk over threads.
	marked int
	// statusFD is /proc/<pid>/status, for the thread count.
	statusFD int

	// threads remembers, by tid, each thread's open files, name and
	// affinity, so an unchanged name costs a comparison, not an allocation.
	threads map[int]*threadFiles
	// interned holds wchan values and affinity lists, which repeat across
	// threads.
	interned map[string]string
	// open counts cached descriptors, schedOpen those of schedstat;
	// maxOpen caps them. sweepThreads is the larger of the thread count
	// and the known threads when the sweep began (see keepOpen).
	open, schedOpen, maxOpen int
	sweepThreads             int
	// allOpen caps the descriptors all the process's readers keep
	// (heldFDs): serve samples several targets at once, a reader each,
	// under one file limit.
	allOpen int

	// ReadSyscall and ReadWChan switch the per-sleeping-thread files; both
	// on by default.
	ReadSyscall bool
	ReadWChan   bool

	missing [numThreadFiles]bool
	reused  int
	// readAll turns off carrying idle threads over (the benchmark's
	// every-file baseline).
	readAll bool
	// seq numbers the sweeps, to tell which remembered threads are gone.
	seq uint64

	// DeferWaits leaves wchan and syscall of the sleeping threads a sweep
	// reads in full to ReadWaits, which the caller calls with Read's
	// result once it knows which threads need them (a thread dump taken
	// at the same time says which threads wait in Java, where the futex
	// is the JVM's own per-thread one). pending indexes those threads in
	// the slice Read returned.
	DeferWaits bool
	pending    []int32
	// EagerWaits are threads whose waits a sweep with DeferWaits reads at
	// once when they sleep: a JVM's threads that the previous dump showed
	// in a library's native code keep running through the dump's
	// safepoint until they come back from it, and their waits are the
	// library's, read before the safepoint drains them.
	EagerWaits map[int]bool
	// OneSample makes the next sweep read what a sample without a
	// successor can use: no rates come of it, so only stat (state, CPU
	// time, policy, nice) and the affinity (sched_getaffinity, no file),
	// not schedstat's and status's counters, which only a later sweep
	// would turn into rates. That sweep's threads are not carried over,
	// and it keeps no descriptor open (see keepOpen); Read turns the
	// switch off.
	OneSample bool
	// LeaveCPU says the target works for ctprof during the sweep (a
	// thread dump: the JVM's VM thread prints at a safepoint): a first
	// sweep split over goroutines then leaves it one CPU. With every CPU
	// taken, a 2,000-thread dump on two CPUs took 39-42 ms against 34-36
	// alone (BenchmarkOneShotVersusJcmd's dump-ms and bare-dump-ms).
	LeaveCPU bool
	// affinity interns the affinity lists sched_getaffinity gives.
	affinity map[unix.CPUSet]string
	// ts, when the kernel answers ctprof's taskstats queries, gives the
	// context switches a full read would take from status (see
	// taskStats); nil: status.
	ts *taskStats
	// Final makes the next sweep read every thread, idle ones included:
	// the run's last sample, whose cumulative counters the summary's
	// totals come from. Read turns it off.
	Final bool
	// wchanSeen says the kernel named some thread's wait channel: one
	// that reads 0 is then on a CPU (readWaits).
	wchanSeen bool
	// skipIdle says this sweep may leave idle threads unread (see
	// readThread); skipped counts the threads so left.
	skipIdle bool
	skipped  int
	// slab hands out the first sweep's threadFiles from one block, so
	// reading thousands of threads the first time does not allocate per
	// thread. Later threads get their own (a block outlives the last of
	// its threads, so churn must not pin blocks).
	slab []threadFiles
}

// WaitRead says what ReadWaits reads of one sleeping thread.
type WaitRead int

// What ReadWaits reads.
const (
	// WaitsSkip reads nothing more: what the thread waits for is known
	// otherwise. Its Syscall stays SyscallUnknown.
	WaitsSkip WaitRead = iota
	// WaitsRead reads wchan and syscall.
	WaitsRead
	// WaitsRecheck reads stat again first: the thread may have looked
	// asleep only while something stopped it (a JVM safepoint during the
	// sweep); wchan and syscall follow if it still sleeps.
	WaitsRecheck
)

// The per-thread files, in the order they are read.
const (
	fileStat = iota
	fileStatus
	fileSchedstat
	fileWChan
	fileSyscall
	numThreadFiles
)

// fdReserve is how many descriptors the sweep leaves to the rest of ctprof.
const fdReserve = 512

// heldFDs counts the descriptors every ThreadReader of the process keeps
// open. Each reader's own cap is the file limit less fdReserve; without a
// count over all of them, serve sampling two 10,000-thread JVMs would
// take every descriptor, and the next accept or open would fail.
var heldFDs atomic.Int64

var threadFileNames = [numThreadFiles]string{"stat", "status", "schedstat", "wchan", "syscall"}

type threadFiles struct {
	// tid is the thread's; gone says the entry left the table (the
	// thread exited), so that a stale knownFiles entry is not used.
	tid   int
	gone  bool
	start uint64
	name  string
	cpus  string
	seen  uint64
	fds   [numThreadFiles]int32 // -1: not open

	// last is what the previous full read of a sleeping thread found;
	// valid says it may be carried over (see readThread). idle counts the
	// reads in a row since then that found the thread had not run.
	last  Thread
	valid bool
	idle  uint8
}

// Reading idle threads less often (see readThread).
const (
	// idleSkipThreads is the fewest threads a process has before its idle
	// threads are read less often: below it a sweep costs little.
	idleSkipThreads = 1000
	// idleSkipAfter is how many reads in a row must find a thread idle.
	idleSkipAfter = 2
	// idleStride: such a thread is read on one sweep in idleStride.
	idleStride = 4
)

// NewThreadReader opens /proc/<pid>/task. It returns ErrProcessGone when the
// process does not exist and ErrPermission when it may not be listed.
func (f FS) NewThreadReader(pid int) (*ThreadReader, error) {
	path := f.pidPath(pid, "task")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, classify(path, err)
	}
	// Go raises the soft file limit to the hard one at start-up; leave a
	// reserve for everything else ctprof opens (sockets, the HTTP server).
	maxOpen := 0
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur > 1024 {
		maxOpen = int(min(lim.Cur-fdReserve, 1<<20))
	}
	r := &ThreadReader{
		fs: f, pid: pid, taskFD: fd,
		dirBuf:      make([]byte, 32<<10),
		buf:         make([]byte, 4<<10),
		pathBuf:     make([]byte, 0, 64),
		threads:     map[int]*threadFiles{},
		interned:    map[string]string{},
		maxOpen:     maxOpen,
		allOpen:     maxOpen,
		statusFD:    -1,
		ReadSyscall: true,
		ReadWChan:   true,
	}
	if n := r.threadCount(); n > 0 && maxOpen > 0 {
		go growFDTable(fd, min(3*n+16, maxOpen))
	}
	if f.ownPIDNamespace() {
		if ts, err := openTaskStats(); err == nil {
			r.ts = ts
		}
	}
	return r, nil
}

// growFDTable grows ctprof's descriptor table to hold n descriptors in
// one step. The kernel grows the table by doubling as descriptors are
// opened, and in a process with several threads (every Go program) each
// growth waits for an RCU grace period, milliseconds on a small VM: a
// first sweep of 2,000 threads, opening a file each, waited through six
// of them (43-55 ms against 15-17 once the table was grown beforehand).
// F_DUPFD takes the lowest free descriptor at or above its argument, so
// it never touches a descriptor in use; the copy is closed at once. It
// runs in a goroutine from NewThreadReader, beside the rest of the
// set-up; an open that needs the table meanwhile waits for this growth
// rather than starting its own.
func growFDTable(fd, n int) {
	if dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, n-1); err == nil {
		unix.Close(dup)
	}
}

// Close releases the task directory and every cached descriptor.
func (r *ThreadReader) Close() error {
	if r.ts != nil {
		r.ts.Close()
		r.ts = nil
	}
	// A sweep that kept no descriptor (a one-shot's) leaves nothing to
	// close: its thousands of entries are not walked on the way out.
	if r.open > 0 {
		for _, tf := range r.threads {
			r.closeFiles(tf)
		}
	}
	clear(r.threads)
	if r.statusFD >= 0 {
		unix.Close(r.statusFD)
		r.statusFD = -1
	}
	if r.taskFD < 0 {
		return nil
	}
	err := unix.Close(r.taskFD)
	r.taskFD = -1
	return err
}

// Missing names the per-thread files ctprof lacked permission to read
// ("syscall", "wchan"), in a fixed order; the summary says once what is
// missing.
func (r *ThreadReader) Missing() []string {
	var out []string
	for f, m := range r.missing {
		if m {
			out = append(out, threadFileNames[f])
		}
	}
	return out
}

// errVanished means the thread exited while it was read.
var errVanished = errors.New("thread vanished")

// Read appends a sample of every live thread to dst and returns it. A
// thread that exits during the sweep is left out. ErrProcessGone means the
// whole process is gone (or is a zombie waiting to be reaped).
//
// Listing the task directory costs about a microsecond per thread (the
// kernel looks up a dentry for each), as much as reading an idle thread.
// So the sweep reads the threads it already knows, and lists the directory
// only when the process's thread count (one read of /proc/<pid>/status) says
// there are threads it has not seen: if the count taken before the sweep
// equals the known threads found alive, no other thread existed when it
// was taken. A thread started after that shows in the next sweep.
func (r *ThreadReader) Read(dst []Thread) ([]Thread, error) {
	if r.taskFD < 0 {
		return dst, fmt.Errorf("thread reader for pid %d is closed", r.pid)
	}
	start := len(dst)
	r.seq++
	r.pending = r.pending[:0]
	want := r.threadCount()
	// dst takes every thread: grown once here, not doubled step by step
	// (a first sample of 2,000 threads copied 0.8 MB on the way).
	if want > 0 {
		dst = slices.Grow(dst, want+16)
	}
	r.sweepThreads = max(want, len(r.threads))
	if len(r.threads) == 0 && want > 0 {
		// The first sweep: size the table once rather than growing it.
		r.threads = make(map[int]*threadFiles, want+want/8)
		r.slab = make([]threadFiles, want)
	}
	zombies := 0
	firstSweep := len(r.threads) == 0
	// Idle threads may be left unread only when the thread count says no
	// thread started or exited since the last sweep: a thread that exits
	// while unread stays in the result until its next read (at most
	// idleStride-1 sweeps), since a count that moved makes every thread
	// read, its read fails, and the directory is listed.
	r.skipIdle = !r.readAll && !r.Final && !r.OneSample && !firstSweep &&
		want >= idleSkipThreads && want == len(r.known)
	r.marked = 0
	if dst, r.known, r.knownFiles, zombies = r.sweep(dst, start, r.known, r.knownFiles); want < 0 || len(r.known) != want || r.readAll {
		tids, err := r.listTIDs()
		if err != nil {
			return dst[:start], err
		}
		// The listing is what the next sweep reads (a thread that exits
		// meanwhile fails its read then); sweep compacts tids in place.
		listed := append(r.known[:0], tids...)
		z := 0
		if workers := min(sweepCPUs(r.LeaveCPU), len(tids)/parallelSweepPart); firstSweep && workers > 1 {
			dst, z = r.sweepParallel(dst, start, tids, workers)
			r.marked += len(tids)
		} else {
			dst, _, _, z = r.sweep(dst, start, tids, nil)
		}
		zombies += z
		r.known = listed
		r.knownFiles = slices.Grow(r.knownFiles[:0], len(listed))[:len(listed)]
		for i, tid := range listed {
			r.knownFiles[i] = r.threads[tid]
		}
		r.lists++
	}
	// Close the files of threads that exited, so descriptors and memory
	// follow the live set.
	if r.marked != len(r.threads) {
		for tid, tf := range r.threads {
			if tf.seen != r.seq {
				r.closeFiles(tf)
				tf.gone = true
				delete(r.threads, tid)
			}
		}
	}
	r.OneSample, r.Final = false, false
	n := len(dst) - start
	if n == 0 && !r.fs.Exists(r.pid) || n > 0 && zombies == n {
		return dst[:start], fmt.Errorf("pid %d: %w", r.pid, ErrProcessGone)
	}
	return dst, nil
}

// sweep reads the threads of tids that this sweep has not read yet,
// appending them to dst; start is where Read's result begins in dst (the
// base of the pending indexes). files, when not nil, holds the threads'
// entries in the place of tids (see knownFiles). It returns dst, the
// threads read and their entries (in the place of tids and files), and
// how many of them are zombies.
func (r *ThreadReader) sweep(dst []Thread, start int, tids []int, files []*threadFiles) ([]Thread, []int, []*threadFiles, int) {
	alive := tids[:0]
	aliveFiles := files[:0]
	zombies := 0
	for i, tid := range tids {
		var tf *threadFiles
		if files != nil {
			tf = files[i]
		}
		if tf == nil || tf.gone || tf.tid != tid {
			tf = r.threads[tid]
		}
		if tf != nil && tf.seen == r.seq {
			continue // read in this sweep already
		}
		dst = append(dst, Thread{TID: tid, Syscall: SyscallUnknown})
		t := &dst[len(dst)-1]
		np := len(r.pending)
		if tf == nil {
			tf = r.newThreadFiles()
			tf.tid = tid
			r.threads[tid] = tf
		}
		tf.seen = r.seq
		r.marked++
		if err := r.readThread(t, tf); err != nil {
			dst = dst[:len(dst)-1]
			r.pending = r.pending[:np]
			continue
		}
		if len(r.pending) > np {
			r.pending[np] = int32(len(dst) - 1 - start)
		}
		alive = append(alive, tid)
		if files != nil {
			aliveFiles = append(aliveFiles, tf)
		}
		if t.State == 'Z' || t.State == 'X' {
			zombies++
		}
	}
	return dst, alive, aliveFiles, zombies
}

// sweepCPUs is how many goroutines a first sweep may keep busy: every
// CPU ctprof may use, one fewer when the target needs one meanwhile.
func sweepCPUs(leaveCPU bool) int {
	n := runtime.GOMAXPROCS(0)
	if leaveCPU {
		n--
	}
	return max(n, 1)
}

// parallelSweepPart is the fewest threads worth a goroutine of their own
// in a first sweep, and the size of the pieces the goroutines take.
const parallelSweepPart = 512

// sweepParallel is the first sweep of a process with many threads, split
// over workers goroutines. A first sweep opens every file of every thread,
// the path lookup and the seq_file set-up of each open costing tens of
// microseconds in the kernel (BenchmarkColdSweep): that work runs on every
// CPU at once. The goroutines take pieces of parallelSweepPart threads in
// turn rather than a fixed share each, so that one the scheduler leaves
// waiting (the CPUs are shared with the target) does not hold up the
// sweep. Each has its own buffers, table and share of the descriptor cap;
// the threadFiles come from the block and the results go to dst, so
// nothing is allocated per thread. Results are merged in listing order.
// Later sweeps read mostly open descriptors and stay on one goroutine.
func (r *ThreadReader) sweepParallel(dst []Thread, start int, tids []int, workers int) ([]Thread, int) {
	type piece struct {
		worker, n, zombies int
		pending            [2]int // w.pending[pending[0]:pending[1]]
	}
	pieces := make([]piece, (len(tids)+parallelSweepPart-1)/parallelSweepPart)
	// The pieces are read into their places in dst, then moved down over
	// the threads that vanished.
	first := len(dst)
	dst = slices.Grow(dst, len(tids))[:first+len(tids)]
	all := dst[first:]
	if len(r.slab) < len(tids) {
		r.slab = append(r.slab, make([]threadFiles, len(tids)-len(r.slab))...)
	}
	parts := make([]ThreadReader, workers)
	free := max(r.maxOpen-r.open, 0)
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range parts {
		w := &parts[k]
		*w = *r
		w.threads = make(map[int]*threadFiles, len(tids)/workers+len(tids)/8)
		w.interned = map[string]string{}
		w.affinity = nil
		w.buf = make([]byte, len(r.buf))
		w.pathBuf = make([]byte, 0, cap(r.pathBuf))
		w.pending = nil
		w.open, w.schedOpen, w.reused = 0, 0, 0
		// A netlink socket answers one request at a time: each
		// goroutine asks on its own.
		if r.ts != nil {
			w.ts, _ = openTaskStats()
		}
		// The descriptor cap and the thread count keepOpen weighs it
		// against, both divided evenly: the split of the cap between
		// schedstat and the other files stays that of one sweep.
		w.maxOpen = free / workers
		w.sweepThreads = (len(tids) + workers - 1) / workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= len(pieces) {
					return
				}
				lo, hi := c*parallelSweepPart, min((c+1)*parallelSweepPart, len(tids))
				w.slab = r.slab[lo:hi:hi]
				p := &pieces[c]
				p.worker, p.pending[0] = k, len(w.pending)
				out, _, _, z := w.sweep(all[lo:lo:hi], 0, tids[lo:hi], nil)
				p.n, p.zombies, p.pending[1] = len(out), z, len(w.pending)
			}
		}()
	}
	wg.Wait()
	for k := range parts {
		if parts[k].ts != nil {
			parts[k].ts.Close()
		}
	}
	r.slab = r.slab[len(tids):]
	zombies := 0
	end := first
	for c, p := range pieces {
		base := int32(end - start)
		for _, i := range parts[p.worker].pending[p.pending[0]:p.pending[1]] {
			r.pending = append(r.pending, base+i)
		}
		lo := c * parallelSweepPart
		end += copy(dst[end:], all[lo:lo+p.n])
		zombies += p.zombies
	}
	dst = dst[:end]
	for k := range parts {
		w := &parts[k]
		for tid, tf := range w.threads {
			r.threads[tid] = tf
		}
		for _, s := range w.interned {
			if len(r.interned) > 4096 {
				break
			}
			r.interned[s] = s
		}
		for set, s := range w.affinity {
			if r.affinity == nil {
				r.affinity = map[unix.CPUSet]string{}
			}
			if len(r.affinity) < 256 {
				r.affinity[set] = s
			}
		}
		for f, m := range w.missing {
			r.missing[f] = r.missing[f] || m
		}
		r.open += w.open
		r.schedOpen += w.schedOpen
		r.reused += w.reused
	}
	return dst, zombies
}

// threadCount is the process's thread count, the Threads line of
// /proc/<pid>/status, or -1 when it cannot be read. (stat has it too, but
// the kernel walks every thread to sum the process's CPU time for stat:
// 70 µs for 2,000 threads against 9 µs for status.)
func (r *ThreadReader) threadCount() int {
	if r.statusFD < 0 {
		fd, err := unix.Open(r.fs.pidPath(r.pid, "status"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1
		}
		r.statusFD = fd
	}
	b, err := r.pread(r.statusFD)
	if err != nil {
		return -1
	}
	return parseStatusThreads(b)
}

// listTIDs reads the task directory from its start with getdents64 into a
// reused buffer.
func (r *ThreadReader) listTIDs() ([]int, error) {
	if _, err := unix.Seek(r.taskFD, 0, 0); err != nil {
		return nil, r.goneOr(err)
	}
	r.tids = r.tids[:0]
	for {
		n, err := unix.Getdents(r.taskFD, r.dirBuf)
		if err != nil {
			if err == unix.EINVAL { // buffer too small for one entry
				r.dirBuf = make([]byte, 2*len(r.dirBuf))
				continue
			}
			return nil, r.goneOr(err)
		}
		if n <= 0 {
			break
		}
		b := r.dirBuf[:n]
		// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
		for len(b) >= 19 {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen <= 19 || reclen > len(b) {
				break
			}
			tid, ok := 0, false
			for _, c := range b[19:reclen] {
				if c == 0 {
					break
				}
				if c < '0' || c > '9' {
					ok = false
					break
				}
				tid = tid*10 + int(c-'0')
				ok = true
			}
			if ok {
				r.tids = append(r.tids, tid)
			}
			b = b[reclen:]
		}
	}
	return r.tids, nil
}

func (r *ThreadReader) goneOr(err error) error {
	if err == unix.ENOENT || err == unix.ESRCH || !r.fs.Exists(r.pid) {
		return fmt.Errorf("pid %d: %w", r.pid, ErrProcessGone)
	}
	return fmt.Errorf("list threads of pid %d: %w", r.pid, err)
}

// readThread fills t from the thread's files.
//
// schedstat comes first: it is the cheapest file (about a quarter of stat,
// an eighth of status) and it tells whether the thread has run since the
// last full read. Its third field counts the times the thread was switched
// onto a CPU, and its first the CPU time, which the kernel brings up to
// date whenever the thread is switched out or interrupted by the tick. A
// thread that slept at the last full read and whose schedstat has not
// moved since has not run in between: its state, CPU time, context-switch
// counts, system call and wait channel are those of the last read, which
// are carried over instead of reading the other four files. Most threads
// of a big server are such. Read in this order, anything that happened
// after the remembered schedstat shows in the next one.
//
// What this can miss: a thread woken after the last full read that has
// not been given a CPU yet still shows its sleeping state (it becomes R
// one scheduling latency later), and a name, nice value or affinity
// another thread set on a sleeping thread shows once it runs.
func (r *ThreadReader) readThread(t *Thread, tf *threadFiles) error {
	if r.OneSample {
		return r.readOneSample(t, tf)
	}
	// A thread that did not run on its last idleSkipAfter reads is read on
	// one sweep in idleStride (which one depends on the tid, so each sweep
	// reads a quarter of them) and carried over in between. What it did
	// meanwhile shows at its next read: a rate of its context switches
	// lands up to idleStride-1 sweeps late, cumulative counters and the
	// totals of a run (its last sweep reads every thread, see Final) are
	// exact. A thread that runs is read on every sweep.
	if r.skipIdle && tf.valid && tf.idle >= idleSkipAfter && (r.seq+uint64(t.TID))%idleStride != 0 {
		*t = tf.last
		r.skipped++
		return nil
	}
	if tf.fds[fileSchedstat] < 0 && r.open-r.schedOpen > r.otherBudget() {
		// The threads outgrew the cap: this thread's other files give
		// way to its schedstat.
		r.closeFiles(tf, fileSchedstat)
	}
	b, err := r.read(t.TID, tf, fileSchedstat)
	if err == errVanished {
		return err
	}
	schedRead := err == nil
	if schedRead {
		parseSchedstat(b, t)
	}
	// It is the same thread, not a new one under a reused tid: either
	// the schedstat descriptor has stayed open since the last full read
	// (a descriptor of an exited thread fails, and closeFiles forgets the
	// read), or, for a thread beyond the descriptor cap whose schedstat
	// is opened afresh, all three counters equal the remembered ones: a
	// new thread would have to match the old one's CPU time and run-queue
	// wait to the nanosecond. Timeslices is zero when the kernel keeps no
	// scheduler statistics ("0 0 0"), which would make every thread look
	// idle.
	if schedRead && tf.valid && !r.readAll && t.Timeslices != 0 &&
		t.Timeslices == tf.last.Timeslices && t.RunTime == tf.last.RunTime && t.RunQueueWait == tf.last.RunQueueWait {
		*t = tf.last
		r.reused++
		if tf.idle < idleSkipAfter {
			tf.idle++
		}
		// An idle thread keeps only schedstat open: each open /proc file
		// holds a page of kernel memory (its seq_file buffer), charged to
		// ctprof, and the other files are read only once it runs.
		r.closeFiles(tf, fileSchedstat)
		return nil
	}
	tf.valid, tf.idle = false, 0
	if b, err = r.read(t.TID, tf, fileStat); err != nil {
		return err
	}
	comm, ok := parseStat(b, t)
	if !ok {
		return errVanished
	}
	if tf.start != t.StartTime {
		// A new thread under a reused tid: forget the old one's strings.
		tf.start, tf.name, tf.cpus = t.StartTime, "", ""
	}
	if string(comm) != tf.name {
		tf.name = string(comm)
	}
	t.Name = tf.name

	statusRead := false
	if r.ts != nil {
		// taskstats has the context switches and sched_getaffinity the
		// affinity: status, the costliest file, is not opened.
		vol, invol, err := r.ts.switches(t.TID)
		switch {
		case err == nil:
			t.Voluntary, t.Involuntary = vol, invol
			t.CPUsAllowed = r.affinityOf(t.TID)
			statusRead = true
		case errors.Is(err, unix.ESRCH):
			return errVanished
		default:
			// The kernel stopped answering: status from now on.
			r.ts.Close()
			r.ts = nil
		}
	}
	if !statusRead {
		if b, err = r.read(t.TID, tf, fileStatus); err == nil {
			if cpus := parseStatus(b, t); string(cpus) != tf.cpus {
				tf.cpus = r.internCPUs(cpus)
			}
			t.CPUsAllowed = tf.cpus
			statusRead = true
		} else if err == errVanished {
			return err
		}
	}
	if !t.Sleeping() {
		t.Syscall = SyscallRunning
		if r.DeferWaits {
			r.pending = append(r.pending, -1) // may run only for the dump
		}
		return nil
	}
	if r.DeferWaits && !r.EagerWaits[t.TID] {
		// ReadWaits reads wchan and syscall, or not, and brings the
		// carried-over copy up to date.
		r.pending = append(r.pending, -1) // Read sets the index
		if schedRead && statusRead {
			tf.last, tf.valid = *t, true
		}
		return nil
	}
	if r.readWaits(t, tf) && schedRead && statusRead {
		tf.last, tf.valid = *t, true
	}
	return nil
}

// readOneSample fills t from stat and the affinity mask alone (see
// OneSample).
func (r *ThreadReader) readOneSample(t *Thread, tf *threadFiles) error {
	tf.valid = false
	b, err := r.read(t.TID, tf, fileStat)
	if err != nil {
		return err
	}
	comm, ok := parseStat(b, t)
	if !ok {
		return errVanished
	}
	if tf.start != t.StartTime {
		tf.start, tf.name, tf.cpus = t.StartTime, "", ""
	}
	if string(comm) != tf.name {
		tf.name = string(comm)
	}
	t.Name = tf.name
	t.CPUsAllowed = r.affinityOf(t.TID)
	if !t.Sleeping() {
		t.Syscall = SyscallRunning
		if r.DeferWaits {
			r.pending = append(r.pending, -1) // may run only for the dump
		}
		return nil
	}
	if r.DeferWaits {
		r.pending = append(r.pending, -1) // Read sets the index
		return nil
	}
	r.readWaits(t, tf)
	return nil
}

// affinityOf is a thread's affinity as the kernel lists it in status
// ("0-3,8"), from sched_getaffinity; "" when it cannot be read.
func (r *ThreadReader) affinityOf(tid int) string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return ""
	}
	if s, ok := r.affinity[set]; ok {
		return s
	}
	s := cpuList(&set)
	if r.affinity == nil {
		r.affinity = map[unix.CPUSet]string{}
	}
	if len(r.affinity) < 256 { // masks repeat; stay bounded all the same
		r.affinity[set] = s
	}
	return s
}

// cpuList formats a CPU mask the way the kernel's Cpus_allowed_list does:
// runs of two or more as "lo-hi", separated by commas.
func cpuList(set *unix.CPUSet) string {
	n := len(set) * 64
	var out []byte
	for i := 0; i < n; {
		if !set.IsSet(i) {
			i++
			continue
		}
		j := i
		for j+1 < n && set.IsSet(j+1) {
			j++
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, int64(i), 10)
		if j > i {
			out = append(out, '-')
			out = strconv.AppendInt(out, int64(j), 10)
		}
		i = j + 1
	}
	return string(out)
}

// internCPUs returns an affinity list from status as a string shared by
// the threads that have the same one (most have the process's), so a first
// sweep does not allocate one per thread.
func (r *ThreadReader) internCPUs(b []byte) string {
	if s, ok := r.interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.interned) <= 4096 {
		r.interned[s] = s
	}
	return s
}

// readWaits reads a sleeping thread's wait channel and system call.
//
// settled is false for a thread read on its way to sleep: in state S
// while its wait channel reads 0, which the kernel says of a task still on
// a CPU. Such a read is not carried over to the next sweeps (its counters
// move once the thread is off the CPU, but not always before the next
// read of schedstat), so the next sweep reads it in full again. A kernel
// that names no wait channel at all (wchanSeen never set) settles every
// thread.
func (r *ThreadReader) readWaits(t *Thread, tf *threadFiles) (settled bool) {
	var b []byte
	var err error
	settled = true
	if r.ReadWChan {
		if b, err = r.read(t.TID, tf, fileWChan); err == nil {
			t.WChan = r.intern(b)
			r.wchanSeen = r.wchanSeen || t.WChan != ""
			settled = t.WChan != "" || !r.wchanSeen
		}
	}
	if r.ReadSyscall {
		if b, err = r.read(t.TID, tf, fileSyscall); err == nil {
			parseSyscall(b, t)
		}
	}
	return settled
}

// ReadWaits finishes a sweep taken with DeferWaits: for each thread the
// sweep found sleeping (its wchan and syscall left out) or running (it may
// have run only for what was done at the same time, such as the JVM
// thread that takes a dump), need says what to read (nil: WaitsRead for
// the sleeping ones). threads must be the slice Read returned. A thread
// that exited since keeps what the sweep read.
func (r *ThreadReader) ReadWaits(threads []Thread, need func(*Thread) WaitRead) {
	pending := r.pending
	r.pending = r.pending[:0]
	for _, i := range pending {
		if int(i) >= len(threads) || i < 0 {
			continue
		}
		t := &threads[i]
		tf := r.threads[t.TID]
		if tf == nil {
			continue
		}
		what := WaitsRead
		if need != nil {
			what = need(t)
		} else if !t.Sleeping() {
			what = WaitsSkip
		}
		switch what {
		case WaitsSkip:
			continue
		case WaitsRecheck:
			b, err := r.read(t.TID, tf, fileStat)
			if err != nil {
				continue
			}
			if _, ok := parseStat(b, t); !ok || t.StartTime != tf.start {
				continue
			}
			if !t.Sleeping() {
				// Running now: not carried over, as a thread read
				// running is not (see readThread).
				t.Syscall = SyscallRunning
				tf.valid = false
				continue
			}
		case WaitsRead:
			if !t.Sleeping() {
				continue
			}
		}
		if !r.readWaits(t, tf) {
			tf.valid = false
		}
		if tf.valid {
			tf.last = *t
		}
	}
}

// newThreadFiles returns a thread's state with no file open, from a block.
func (r *ThreadReader) newThreadFiles() *threadFiles {
	var tf *threadFiles
	if len(r.slab) > 0 {
		tf, r.slab = &r.slab[0], r.slab[1:]
	} else {
		tf = new(threadFiles)
	}
	tf.fds = [numThreadFiles]int32{-1, -1, -1, -1, -1}
	return tf
}

// Reused is how many thread reads since the reader was opened read only
// schedstat, because the thread had not run since the previous full read
// (the other files' values were carried over).
func (r *ThreadReader) Reused() int { return r.reused }

// Skipped is how many thread reads since the reader was opened were left
// out because the thread had been idle (see readThread); their values
// were carried over.
func (r *ThreadReader) Skipped() int { return r.skipped }

func (r *ThreadReader) intern(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) == 1 && b[0] == '0' {
		return ""
	}
	if s, ok := r.interned[string(b)]; ok {
		return s
	}
	if len(r.interned) > 4096 { // hostile or odd kernels: stay bounded
		return string(b)
	}
	s := string(b)
	r.interned[s] = s
	return s
}

// read returns the content of task/<tid>/<file> in the reused buffer,
// through the thread's cached descriptor when it has one. It returns
// errVanished when the thread is gone, and os.ErrPermission (remembering
// it, so the file is not tried again) when the file may not be read.
func (r *ThreadReader) read(tid int, tf *threadFiles, file int) ([]byte, error) {
	if r.missing[file] {
		return nil, os.ErrPermission
	}
	if fd := tf.fds[file]; fd >= 0 {
		if b, err := r.pread(int(fd)); err == nil {
			return b, nil
		}
		// The thread behind the descriptor is gone; the tid may have been
		// reused by a new thread, which a fresh open finds (and whose
		// files are read in full: closeFiles forgets the last read).
		r.closeFiles(tf)
	}
	p := r.pathBuf[:0]
	p = strconv.AppendInt(p, int64(tid), 10)
	p = append(p, '/')
	p = append(p, threadFileNames[file]...)
	p = append(p, 0)
	r.pathBuf = p
	fd, err := openat(r.taskFD, p)
	if err != nil {
		if err == unix.EACCES || err == unix.EPERM {
			r.missing[file] = true
			return nil, os.ErrPermission
		}
		return nil, errVanished
	}
	b, err := r.pread(fd)
	if err != nil {
		unix.Close(fd)
		// syscall and wchan check ptrace rights at read time, not open.
		if err == unix.EACCES || err == unix.EPERM {
			r.missing[file] = true
			return nil, os.ErrPermission
		}
		return nil, errVanished
	}
	if r.keepOpen(file) {
		tf.fds[file] = int32(fd)
		r.open++
		heldFDs.Add(1)
		if file == fileSchedstat {
			r.schedOpen++
		}
	} else {
		unix.Close(fd)
	}
	return b, nil
}

// keepOpen says whether a descriptor of file just opened may stay open.
// schedstat is read of every thread on every tick, the others only of
// threads that ran: a descriptor spent on another file while some thread's
// schedstat has none would cost that thread an open and a close on every
// tick. So the other files share only what the cap leaves once each
// thread the sweep expects has its schedstat open.
func (r *ThreadReader) keepOpen(file int) bool {
	if r.OneSample {
		// A one-shot's process exits after its summary, and closing
		// thousands of /proc files at exit (a few milliseconds per
		// thousand) would delay the result; closed during the sweep, the
		// cost overlaps the thread dump it waits for anyway.
		return false
	}
	if r.open >= r.maxOpen || heldFDs.Load() >= int64(r.allOpen) {
		return false
	}
	return file == fileSchedstat || r.open-r.schedOpen < r.otherBudget()
}

// otherBudget is how many descriptors files other than schedstat may hold.
func (r *ThreadReader) otherBudget() int {
	return r.maxOpen - min(r.sweepThreads, r.maxOpen)
}

// pread reads a whole /proc file from offset 0, growing the buffer when
// the file does not fit. An empty file counts as vanished (ESRCH).
func (r *ThreadReader) pread(fd int) ([]byte, error) {
	for {
		n, err := preadRaw(fd, r.buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, unix.ESRCH
		}
		if n == len(r.buf) && len(r.buf) < 1<<20 {
			r.buf = make([]byte, 2*len(r.buf))
			continue
		}
		return r.buf[:n], nil
	}
}

// closeFiles closes a thread's cached descriptors but those of keep. Unless
// schedstat is kept it forgets the last read: a failed read of an open
// descriptor (the thread exited) comes here.
func (r *ThreadReader) closeFiles(tf *threadFiles, keep ...int) {
	if !slices.Contains(keep, fileSchedstat) {
		tf.valid = false
	}
	for i, fd := range tf.fds {
		if fd >= 0 && !slices.Contains(keep, i) {
			unix.Close(int(fd))
			tf.fds[i] = -1
			r.open--
			heldFDs.Add(-1)
			if i == fileSchedstat {
				r.schedOpen--
			}
		}
	}
}

// preadRaw reads from offset 0 with a raw system call: a /proc read
// returns in microseconds, and the runtime's bookkeeping around a blocking
// call (handing the P off, waking sysmon) would cost as much again.
func preadRaw(fd int, b []byte) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// openat opens a NUL-terminated path relative to dirfd without the
// allocation unix.Openat makes to convert a string (and, like preadRaw,
// without the runtime's bookkeeping for blocking calls).
func openat(dirfd int, path []byte) (int, error) {
	fd, _, errno := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// userHZ is the unit of the CPU times in stat: USER_HZ, which the kernel
// fixes at 100 on every architecture Linux exports to user space.
const userHZ = 100

func ticks(n uint64) time.Duration { return time.Duration(n) * (time.Second / userHZ) }

// StillBlocked reads t's system call again and reports whether it is still
// blocked where the sweep saw it: the same call and arguments, at the same
// stack pointer and program counter, and not scheduled since (schedstat's
// count of times it ran: a waiter on a hot lock wakes, runs and blocks
// again at the very same place between two reads). An unwinder reads a
// blocked thread's stack after the sweep; a thread that ran in between may
// have written over it, and its stack would be a mix of two moments.
func (r *ThreadReader) StillBlocked(t *Thread) bool {
	tf := r.threads[t.TID]
	if tf == nil || t.Syscall < 0 {
		return false
	}
	if t.Timeslices != 0 {
		b, err := r.read(t.TID, tf, fileSchedstat)
		if err != nil {
			return false
		}
		var now Thread
		parseSchedstat(b, &now)
		if now.Timeslices != t.Timeslices {
			return false
		}
	}
	b, err := r.read(t.TID, tf, fileSyscall)
	if err != nil {
		return false
	}
	now := Thread{Syscall: SyscallUnknown}
	parseSyscall(b, &now)
	return now.Syscall == t.Syscall && now.SyscallArgs == t.SyscallArgs && now.SyscallSP == t.SyscallSP && now.SyscallPC == t.SyscallPC
}

// ReadSyscallOf reads the system call thread tid of the sweep is in, into
// t's Syscall, SyscallArgs, SyscallSP and SyscallPC, through the
// descriptor the sweep keeps open; false when it cannot (a thread gone,
// not in the last sweep). Fast repeated reads of a few threads between
// sweeps catch waits too short for the sweep.
func (r *ThreadReader) ReadSyscallOf(tid int, t *Thread) bool {
	tf := r.threads[tid]
	if tf == nil {
		return false
	}
	b, err := r.read(tid, tf, fileSyscall)
	if err != nil {
		return false
	}
	t.Syscall = SyscallUnknown
	parseSyscall(b, t)
	return true
}

// ReadNow reads a thread of the last sweep again, as it is now: its state,
// CPU, run count and, when it sleeps, its wait channel and system call,
// through the descriptors the sweep keeps. Its other counters stay the
// sweep's. The sampler reads a lock holder so: the lock's memory named it
// after the sweep, and what the sweep saw it do may be from before it
// took the lock. False (t unchanged) when the thread is gone, or the tid
// is another thread's now.
func (r *ThreadReader) ReadNow(t *Thread) bool {
	if r == nil {
		return false
	}
	tf := r.threads[t.TID]
	if tf == nil {
		return false
	}
	now := Thread{TID: t.TID, Syscall: SyscallUnknown}
	if t.Timeslices != 0 {
		// First, so that a run after it shows in what follows (as in
		// readThread).
		b, err := r.read(t.TID, tf, fileSchedstat)
		if err != nil {
			return false
		}
		parseSchedstat(b, &now)
	}
	b, err := r.read(t.TID, tf, fileStat)
	if err != nil {
		return false
	}
	if _, ok := parseStat(b, &now); !ok || now.StartTime != t.StartTime {
		return false
	}
	if now.Sleeping() {
		r.readWaits(&now, tf)
	} else {
		now.Syscall = SyscallRunning
	}
	t.State, t.Processor, t.WChan = now.State, now.Processor, now.WChan
	t.Syscall, t.SyscallArgs, t.SyscallSP, t.SyscallPC = now.Syscall, now.SyscallArgs, now.SyscallSP, now.SyscallPC
	if now.Timeslices != 0 {
		t.Timeslices = now.Timeslices
	}
	return true
}

// BlockingFutex reports whether t is blocked in a futex(2) call that
// waits (not a wake or a requeue), and returns its address, operation and
// the value it expected.
func BlockingFutex(t *Thread) (addr, op, val uint64, ok bool) {
	if t.Syscall != sysFutex {
		return 0, 0, 0, false
	}
	op = t.SyscallArgs[1]
	switch op & futexCmdMask {
	case futexWait, futexWaitBitset, futexLockPI, futexLockPI2, futexWaitRequeuePI:
		return t.SyscallArgs[0], op, t.SyscallArgs[2], true
	}
	return 0, 0, 0, false
}
