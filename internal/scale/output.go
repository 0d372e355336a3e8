package scale

import (
	"io"
	"os"
	"sync"
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
	for {
		n, err := o.r.Read(buf)
		o.mu.Lock()
		o.read += int64(n)
		o.mu.Unlock()
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
		if err != nil {
			return
		}
	}
}

// Sync returns once everything the workload had written to the pipe when
// Sync was called has reached sink, the output has ended, or timeout has
// passed.
func (o *workloadOutput) Sync(timeout time.Duration) {
	// Bytes already read but not yet handled are waited for too.
	o.mu.Lock()
	inFlight := o.read > o.delivered
	o.mu.Unlock()
	pending := 0
	rc, err := o.r.SyscallConn()
	if err != nil {
		return
	}
	// The bytes waiting in the pipe (FIONREAD, which Linux also names
	// TIOCINQ), through the raw descriptor: File.Fd would switch the pipe
	// to blocking mode under the reader.
	if rc.Control(func(fd uintptr) { pending, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) != nil || err != nil {
		pending = 0
	}
	if pending <= 0 && !inFlight {
		return
	}
	// Counted after the pipe: a read in between is counted twice (Sync
	// waits longer), never left out.
	o.mu.Lock()
	target := o.read + int64(pending)
	o.mu.Unlock()
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
