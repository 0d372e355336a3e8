package scale

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// workloadOutput reads what the workload prints (its standard output and
// error share one pipe) and feeds it to sink. A measurement window counts
// the throughput lines printed while it is open, but ctprof reads them
// when it gets a CPU: on a machine the workload keeps busy, a line the
// workload printed during warm-up could be read after the window opened,
// and the lines of the window after it closed. Sync closes that gap.
type workloadOutput struct {
	r    *os.File
	sink io.Writer

	// read counts the bytes taken from the pipe, delivered those sink has
	// had (the lines of a read are handled after it).
	mu        sync.Mutex
	read      int64
	delivered int64
	done      bool
	progress  chan struct{} // a send (dropped when full) after every delivery
}

// readOutput feeds sink from r until r ends or is closed.
func readOutput(r *os.File, sink io.Writer) *workloadOutput {
	o := &workloadOutput{r: r, sink: sink, progress: make(chan struct{}, 1)}
	go o.copy()
	return o
}

func (o *workloadOutput) copy() {
	buf := make([]byte, 32<<10)
	rc, err := o.r.SyscallConn()
	for err == nil {
		var n int
		n, err = o.readCounted(rc, buf)
		if n > 0 {
			o.sink.Write(buf[:n])
		}
		o.mu.Lock()
		o.delivered += int64(n)
		o.done = err != nil
		o.mu.Unlock()
		select {
		case o.progress <- struct{}{}:
		default:
		}
	}
	if rc == nil { // no descriptor to read: nothing will come
		o.mu.Lock()
		o.done = true
		o.mu.Unlock()
	}
}

// readCounted reads what the pipe holds and counts it in o.read under the
// same lock Sync holds while it asks the pipe what it holds. With a plain
// Read, bytes taken from the pipe but not yet counted (the reader
// descheduled between the system call and the count) were in neither
// figure, and Sync returned before they reached sink. The pipe from
// os.Pipe is non-blocking and known to the poller, so the read never
// blocks under the lock: an empty pipe returns EAGAIN and the poller waits.
func (o *workloadOutput) readCounted(rc syscall.RawConn, buf []byte) (int, error) {
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for {
			n, rerr = unix.Read(int(fd), buf)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN {
			return false
		}
		if n > 0 {
			o.read += int64(n)
		} else {
			n = 0
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case rerr != nil:
		return n, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Sync returns once everything the workload had written to the pipe when
// Sync was called has reached sink, the output has ended, or timeout has
// passed.
func (o *workloadOutput) Sync(timeout time.Duration) {
	rc, err := o.r.SyscallConn()
	if err != nil {
		return
	}
	// What the pipe holds (FIONREAD, which Linux also names TIOCINQ), asked
	// through the raw descriptor (File.Fd would switch the pipe to blocking
	// mode under the reader) and under the lock the reader counts under:
	// every byte is either in the pipe or in o.read, and the target is all
	// of them. Bytes read but not yet delivered are waited for too.
	var target int64
	if rc.Control(func(fd uintptr) {
		o.mu.Lock()
		defer o.mu.Unlock()
		pending, ierr := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		if ierr != nil || pending < 0 {
			pending = 0
		}
		target = o.read + int64(pending)
	}) != nil {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		caughtUp := o.delivered >= target || o.done
		o.mu.Unlock()
		if caughtUp {
			return
		}
		select {
		case <-o.progress:
		case <-deadline.C:
			return
		}
	}
}

// Close stops the reader (once the workload is gone: what it printed last
// is read first when the pipe is closed by its end).
func (o *workloadOutput) Close() error { return o.r.Close() }
