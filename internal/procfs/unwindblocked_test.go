package procfs

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

// TestUnwindBlockedSetsOnlyBlockedThreads: UnwindBlocked unwinds the
// threads blocked in a system call and clears the Stack of the others
// (a stack left from an earlier sweep would be stale).
func TestUnwindBlockedSetsOnlyBlockedThreads(t *testing.T) {
	p := testnative.Start(t, "stacks")
	fs := NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	defer u.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	// stacks.c's "deep" and "holder" threads sleep in nanosleep (glibc's
	// clock_nanosleep) once started.
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	byName := map[string]Thread{}
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		for _, th := range threads {
			byName[th.Name] = th
		}
		for _, name := range []string{"deep", "holder"} {
			if th := byName[name]; th.Syscall != unix.SYS_NANOSLEEP && th.Syscall != unix.SYS_CLOCK_NANOSLEEP || th.SyscallPC == 0 {
				return fmt.Errorf("%s in system call %d", name, th.Syscall)
			}
		}
		return nil
	}))
	threads := []Thread{byName["deep"], byName["holder"]}
	threads[1].Syscall = SyscallRunning
	threads[1].Stack = []symbolize.StackFrame{{PC: 1}}
	UnwindBlocked(u, threads, mem)
	var names []string
	for _, f := range threads[0].Stack {
		names = append(names, f.Name())
	}
	assert.Contains(t, names, "level_a")
	assert.Nil(t, threads[1].Stack)
	p.Stop()
	// The process gone: no stack beyond the frame its PC names, no panic.
	threads[0].Stack = nil
	UnwindBlocked(u, threads, mem)
	assert.LessOrEqual(t, len(threads[0].Stack), 1)
}
