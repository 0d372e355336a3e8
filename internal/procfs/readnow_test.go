package procfs

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/testnative"
)

// TestReadNowSeesWhatAThreadDoesAfterTheSweep: a thread of this test
// blocks in read(2), the sweep sees it there, then it wakes and spins;
// ReadNow, through the sweep's descriptors, says what it does now, and the
// sweep's copy of another thread is not touched.
func TestReadNowSeesWhatAThreadDoesAfterTheSweep(t *testing.T) {
	var pipe [2]int
	require.NoError(t, unix.Pipe(pipe[:]))
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	var stop atomic.Bool
	defer stop.Store(true)
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tids <- unix.Gettid()
		var b [1]byte
		_, _ = unix.Read(pipe[0], b[:])
		for !stop.Load() {
		}
	}()
	tid := <-tids

	r, err := NewFS("/proc").NewThreadReader(os.Getpid())
	require.NoError(t, err)
	defer r.Close()
	var blocked Thread
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		for _, th := range threads {
			if th.TID == tid && th.Syscall == unix.SYS_READ {
				blocked = th
				return nil
			}
		}
		return errors.New("the reader thread is not in read(2) yet")
	}))
	assert.Equal(t, pipe[0], int(blocked.SyscallArgs[0]), "blocked on the pipe")

	_, err = unix.Write(pipe[1], []byte{1})
	require.NoError(t, err)
	now := blocked
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		now = blocked
		if !r.ReadNow(&now) {
			return errors.New("ReadNow failed")
		}
		if now.State != 'R' || now.Syscall != SyscallRunning {
			return fmt.Errorf("state %c, syscall %d", now.State, now.Syscall)
		}
		return nil
	}))
	assert.Zero(t, now.SyscallSP, "no system call: no stack pointer")
	assert.Equal(t, blocked.StartTime, now.StartTime)
	assert.Equal(t, blocked.Voluntary, now.Voluntary, "the counters stay the sweep's")
	assert.GreaterOrEqual(t, now.Timeslices, blocked.Timeslices)

	gone := blocked
	gone.TID = 1 << 30
	assert.False(t, r.ReadNow(&gone), "a thread the sweep did not see")
	var nilReader *ThreadReader
	assert.False(t, nilReader.ReadNow(&now))
}
