package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Workers of a tree of processes queued on one file's lock, each through
// a descriptor of its own (another number in each process): one resource,
// one instance (the file), named by its path; a waiter whose stack was not
// read takes its verdict from a waiter on the same file; the holder
// /proc/locks names, a process of one thread, is what it does; and a
// finding speaks for the resource, which has no entry in the lock table.
func TestNativeFileLockAcrossProcesses(t *testing.T) {
	st := []symbolize.StackFrame{
		{PC: 0x7f0000001000, Module: "libc.so.6", Function: "flock", Offset: 0xb},
		{PC: 0x555500001200, Module: "srv", Function: "take_journal", Offset: 0x12},
		{PC: 0x555500001300, Module: "srv", Function: "append_entry", Offset: 0x20},
		{PC: 0x555500001400, Module: "srv", Function: "worker_main", Offset: 0x40},
		{PC: 0x7f0000002000, Module: "libc.so.6", Function: "__libc_start_call_main", Offset: 0x10},
		{PC: 0x7f0000003000, Module: "libc.so.6", Function: "__libc_start_main", Offset: 0x10},
		{PC: 0x555500000100, Module: "srv", Function: "_start", Offset: 0x20},
	}
	journal := procfs.LockedFile{Path: "/var/lib/srv/journal", ID: procfs.FileIDBit | 27<<40 | 4242, Holder: 200}
	a := New()
	for i := 0; i < 4; i++ {
		// The holder, a worker of one thread, sleeps in its work with
		// the file locked.
		holder := thread(200, "srv: worker", 'S', uint64(i), 0, 0)
		holder.PID, holder.Syscall, holder.WChan = 200, unix.SYS_CLOCK_NANOSLEEP, "hrtimer_nanosleep"
		threads := []procfs.Thread{holder}
		for w := 0; w < 4; w++ {
			th := thread(100+w, "srv: worker", 'S', uint64(i), 0, 0)
			th.PID = 100 + w
			th.Syscall, th.SyscallArgs, th.Locked = unix.SYS_FLOCK, [5]uint64{uint64(3 + w), unix.LOCK_EX}, journal
			if w < 3 {
				th.Stack = st
			}
			threads = append(threads, th)
		}
		a.Add(liveSnap(i, threads))
	}
	s := a.Summary()
	require.Len(t, s.ContentionSites, 1, "%+v", s.ContentionSites)
	cs := s.ContentionSites[0]
	assert.Equal(t, "filelock|srv|take_journal ← append_entry", cs.ID)
	assert.Equal(t, "filelock", cs.Kind)
	assert.Equal(t, 1, cs.Instances, "one file, whatever each process's descriptor")
	assert.Equal(t, 4, cs.Waiters, "the waiter without a stack queues on the same file")
	assert.Equal(t, []string{journal.Path}, cs.Files)
	var f *Finding
	for i := range s.Findings {
		if s.Findings[i].Subject == "resource "+cs.ID {
			f = &s.Findings[i]
		}
	}
	require.NotNil(t, f, "a finding for the file lock: %+v", s.Findings)
	assert.Contains(t, f.Summary, "on a file lock, held by a thread in clock_nanosleep (hrtimer_nanosleep)")
	assert.True(t, cs.WaiterProcesses)
	assert.Contains(t, f.Summary, "Up to 4 processes (", "the waiters are processes of one thread each")
	require.NotEmpty(t, cs.Holders)
	assert.Equal(t, FrameCount{Frame: "in clock_nanosleep (hrtimer_nanosleep)", Samples: 4}, cs.Holders[0], "once a sample for the one file")
	assert.Contains(t, f.Evidence, "files locked: "+journal.Path)
}

// A file lock held by a process of two threads: the kernel does not say
// which of them holds it, and the resource names no holder.
func TestNativeFileLockHolderOfManyThreads(t *testing.T) {
	journal := procfs.LockedFile{Path: "/var/lib/srv/journal", ID: procfs.FileIDBit | 27<<40 | 4242, Holder: 200}
	a := New()
	for i := 0; i < 3; i++ {
		threads := []procfs.Thread{}
		for tid := 200; tid < 202; tid++ {
			h := thread(tid, "srv", 'S', uint64(i), 0, 0)
			h.PID, h.Syscall = 200, unix.SYS_CLOCK_NANOSLEEP
			threads = append(threads, h)
		}
		for w := 0; w < 2; w++ {
			th := thread(100+w, "srv: worker", 'S', uint64(i), 0, 0)
			th.PID = 100 + w
			th.Syscall, th.SyscallArgs, th.Locked = unix.SYS_FLOCK, [5]uint64{3, unix.LOCK_EX}, journal
			threads = append(threads, th)
		}
		a.Add(liveSnap(i, threads))
	}
	s := a.Summary()
	require.Len(t, s.ContentionSites, 1, "%+v", s.ContentionSites)
	assert.Empty(t, s.ContentionSites[0].Holders)
	assert.Equal(t, 2, s.ContentionSites[0].Waiters)
}
