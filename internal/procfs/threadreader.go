package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ThreadReader sweeps /proc/<pid>/task/* once per tick. It keeps the task
// directory and each thread's files open between sweeps and re-reads them
// with pread (the kernel regenerates a /proc file read from offset 0), so a
// file costs one system call instead of three; names and affinity strings
// are reused while unchanged. A sweep allocates nothing once the thread set
// is stable. Budget: 10 µs per thread per file on a small machine (see
// BenchmarkThreadSweep and docs/PERFORMANCE.md).
//
// Per tick it reads stat, status and schedstat of every thread; wchan and
// syscall only of sleeping threads (a running thread has neither, and
// reading syscall of a running thread makes the kernel wait for it to stop).
// Open descriptors are capped below the process's file limit; files
// beyond the cap are opened and closed each time.
type ThreadReader struct {
	fs     FS
	pid    int
	taskFD int

	dirBuf  []byte
	buf     []byte
	pathBuf []byte
	tids    []int

	// threads remembers, by tid, each thread's open files, name and
	// affinity, so an unchanged name costs a comparison, not an allocation.
	threads map[int]*threadFiles
	// interned holds wchan values, which repeat across threads.
	interned map[string]string
	// open counts cached descriptors; maxOpen caps them.
	open, maxOpen int

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
}

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

var threadFileNames = [numThreadFiles]string{"stat", "status", "schedstat", "wchan", "syscall"}

type threadFiles struct {
	start uint64
	name  string
	cpus  string
	seen  uint64
	fds   [numThreadFiles]int32 // -1: not open

	// last is what the previous read of a sleeping thread found; valid
	// says it may be reused (see readThread).
	last  Thread
	valid bool
}

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
	return &ThreadReader{
		fs: f, pid: pid, taskFD: fd,
		dirBuf:      make([]byte, 32<<10),
		buf:         make([]byte, 4<<10),
		pathBuf:     make([]byte, 0, 64),
		threads:     map[int]*threadFiles{},
		interned:    map[string]string{},
		maxOpen:     maxOpen,
		ReadSyscall: true,
		ReadWChan:   true,
	}, nil
}

// Close releases the task directory and every cached descriptor.
func (r *ThreadReader) Close() error {
	for tid, tf := range r.threads {
		r.closeFiles(tf)
		delete(r.threads, tid)
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
func (r *ThreadReader) Read(dst []Thread) ([]Thread, error) {
	if r.taskFD < 0 {
		return dst, fmt.Errorf("thread reader for pid %d is closed", r.pid)
	}
	tids, err := r.listTIDs()
	if err != nil {
		return dst, err
	}
	start := len(dst)
	r.seq++
	zombies := 0
	for _, tid := range tids {
		dst = append(dst, Thread{TID: tid, Syscall: SyscallUnknown})
		t := &dst[len(dst)-1]
		if err := r.readThread(t); err != nil {
			dst = dst[:len(dst)-1]
			continue
		}
		if t.State == 'Z' || t.State == 'X' {
			zombies++
		}
	}
	// Close the files of threads that exited, so descriptors and memory
	// follow the live set.
	for tid, tf := range r.threads {
		if tf.seen != r.seq {
			r.closeFiles(tf)
			delete(r.threads, tid)
		}
	}
	n := len(dst) - start
	if n == 0 && !r.fs.Exists(r.pid) || n > 0 && zombies == n {
		return dst[:start], fmt.Errorf("pid %d: %w", r.pid, ErrProcessGone)
	}
	return dst, nil
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
func (r *ThreadReader) readThread(t *Thread) error {
	tf := r.threads[t.TID]
	if tf == nil {
		tf = &threadFiles{fds: [numThreadFiles]int32{-1, -1, -1, -1, -1}}
		r.threads[t.TID] = tf
	}
	tf.seen = r.seq
	b, err := r.read(t.TID, tf, fileStat)
	if err != nil {
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
	if b, err = r.read(t.TID, tf, fileStatus); err == nil {
		if cpus := parseStatus(b, t); string(cpus) != tf.cpus {
			tf.cpus = string(cpus)
		}
		t.CPUsAllowed = tf.cpus
		statusRead = true
	} else if err == errVanished {
		return err
	}
	// A thread that slept at the last read, sleeps now, and has not been
	// switched in or out since (same context-switch counts, same CPU
	// time) has not run in between: it is in the same system call, on
	// the same wait channel, with the same schedstat. Most threads of a
	// big server are such, and skipping their three other files cuts a
	// tick's reads by more than half, exactly.
	if statusRead && tf.valid && !r.readAll && t.Sleeping() && t.State == tf.last.State && t.StartTime == tf.last.StartTime &&
		t.Voluntary == tf.last.Voluntary && t.Involuntary == tf.last.Involuntary &&
		t.UserCPU == tf.last.UserCPU && t.SystemCPU == tf.last.SystemCPU {
		t.RunTime, t.RunQueueWait, t.Timeslices = tf.last.RunTime, tf.last.RunQueueWait, tf.last.Timeslices
		t.WChan, t.Syscall, t.SyscallArgs = tf.last.WChan, tf.last.Syscall, tf.last.SyscallArgs
		r.reused++
		return nil
	}
	tf.valid = false
	if b, err = r.read(t.TID, tf, fileSchedstat); err == nil {
		parseSchedstat(b, t)
	} else if err == errVanished {
		return err
	}
	if !t.Sleeping() {
		t.Syscall = SyscallRunning
		return nil
	}
	if r.ReadWChan {
		if b, err = r.read(t.TID, tf, fileWChan); err == nil {
			t.WChan = r.intern(b)
		}
	}
	if r.ReadSyscall {
		if b, err = r.read(t.TID, tf, fileSyscall); err == nil {
			parseSyscall(b, t)
		}
	}
	if statusRead {
		tf.last, tf.valid = *t, true
	}
	return nil
}

// Reused is how many thread reads since the reader was opened skipped
// schedstat, wchan and syscall because the thread had not run since the
// previous read (their values were carried over).
func (r *ThreadReader) Reused() int { return r.reused }

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
		// reused by a new thread, which a fresh open finds.
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
	if r.open < r.maxOpen {
		tf.fds[file] = int32(fd)
		r.open++
	} else {
		unix.Close(fd)
	}
	return b, nil
}

// pread reads a whole /proc file from offset 0, growing the buffer when
// the file does not fit. An empty file counts as vanished (ESRCH).
func (r *ThreadReader) pread(fd int) ([]byte, error) {
	for {
		n, err := unix.Pread(fd, r.buf, 0)
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

func (r *ThreadReader) closeFiles(tf *threadFiles) {
	for i, fd := range tf.fds {
		if fd >= 0 {
			unix.Close(int(fd))
			tf.fds[i] = -1
			r.open--
		}
	}
}

// openat opens a NUL-terminated path relative to dirfd without the
// allocation unix.Openat makes to convert a string.
func openat(dirfd int, path []byte) (int, error) {
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
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
