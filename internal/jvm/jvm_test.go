package jvm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

func inspect(t testing.TB, pid int) *Info {
	t.Helper()
	info, err := Inspect("/proc", pid)
	require.NoError(t, err)
	return info
}

func names(t testing.TB, text []byte) map[string]bool {
	t.Helper()
	ds, err := threaddump.ParseBytes(text)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, th := range ds[len(ds)-1].Threads {
		out[th.Name] = true
	}
	return out
}

// DumpOptions.Sent comes once per dump: before the caller would wait for a
// JVM's attach listener to start (the sampler's /proc sweep need not wait
// for it), and on a running listener once the request is written, before
// the reply.
func TestThreadDumpSaysWhenTheRequestIsSent(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	info := inspect(t, p.PID)
	require.Error(t, info.listenerRunning(), "a fresh JVM has no attach listener yet")
	calls, listening := 0, true
	res, err := ThreadDump(context.Background(), info, DumpOptions{Sent: func() {
		calls++
		listening = info.listenerRunning() == nil
	}})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.False(t, listening, "called before the listener started")

	calls = 0
	var sentAt time.Time
	start := time.Now()
	res, err = ThreadDump(context.Background(), info, DumpOptions{Sent: func() {
		calls++
		sentAt = time.Now()
	}})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Less(t, sentAt.Sub(start), res.Wall, "called before the reply came")
}

// A first dump is read into one buffer sized from the JVM's thread count:
// reading it in growing chunks and joining them copied the whole reply (a
// joined reply fills its buffer exactly).
func TestFirstDumpIsReadIntoOneBuffer(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "300", "21")
	info := inspect(t, p.PID)
	res, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.NoError(t, err)
	require.Greater(t, len(res.Text), 256<<10, "bigger than the first chunk of a reply of unknown size")
	assert.Greater(t, cap(res.Text), len(res.Text), "read into the buffer sized ahead, not joined")
	assert.Less(t, cap(res.Text), 4*len(res.Text))
}

// A JVM whose hsperfdata names a release before 24 is spoken to in attach
// v1 without the "getversion" probe (a round trip a one-shot waits for).
// A JDK 25 JVM whose Info says 17 shows it: no probe, so protocol 1, which
// it still understands.
func TestOlderJVMsAreNotProbedForTheProtocol(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "SyncSingleton", "2")
	info := inspect(t, p.PID)
	require.Equal(t, 25, info.Version)
	info.Version = 17
	res, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Protocol)
	assert.True(t, names(t, res.Text)["request-1"])

	probed := inspect(t, p.PID)
	res, err = ThreadDump(context.Background(), probed, DumpOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Protocol, "its own version: probed, and v2")
}

// A dump taken over the attach protocol is the dump jcmd prints: same
// threads, parsed by the same parser.
func TestThreadDumpMatchesJcmd(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "SyncSingleton", "4")
			info := inspect(t, p.PID)
			assert.Equal(t, jdk.Major, info.Version)
			assert.Equal(t, "SyncSingleton", info.MainClass)
			assert.True(t, info.AttachSupported)
			assert.True(t, info.CatchesQuit)
			assert.Contains(t, info.VM, "OpenJDK")

			before, err := info.ReadPerfData()
			require.NoError(t, err)
			res, err := ThreadDump(context.Background(), info, DumpOptions{})
			require.NoError(t, err)
			assert.Equal(t, MethodAttach, res.Method)
			assert.Positive(t, res.Wall)
			assert.True(t, res.PauseKnown, "hsperfdata gives the pause")
			if jdk.Major >= 24 {
				assert.Equal(t, 2, res.Protocol, "JDK 24+ speak attach v2")
				assert.True(t, info.streaming, "and offer buffered output")
			} else {
				assert.Equal(t, 1, res.Protocol)
			}
			assert.NotContains(t, string(res.Text), "Locked ownable synchronizers", "no -l unless asked")
			got := names(t, res.Text)
			want := names(t, p.ThreadPrint(t))
			for _, n := range []string{"main", "request-1", "request-2", "request-3", "request-4", "Finalizer", "Reference Handler"} {
				assert.True(t, got[n], "thread %q in the attach dump", n)
				assert.True(t, want[n], "thread %q in jcmd's dump", n)
			}
			after, err := info.ReadPerfData()
			require.NoError(t, err)
			assert.Greater(t, after.Counters().Safepoints, before.Counters().Safepoints, "the dump ran at a safepoint")

			withLocks, err := ThreadDump(context.Background(), info, DumpOptions{Locks: true})
			require.NoError(t, err)
			assert.Contains(t, string(withLocks.Text), "Locked ownable synchronizers")

			out, err := Jcmd(context.Background(), info, "VM.version")
			require.NoError(t, err)
			assert.Contains(t, string(out), "JDK "+strings.TrimPrefix(jdk.Name, "jdk"))

			_, err = Jcmd(context.Background(), info, "No.such.command")
			var refused *CommandError
			assert.True(t, errors.As(err, &refused), "%v", err)
		})
	}
}

func TestDumpToFileMode(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK25(t), "VirtualThreads")
	info := inspect(t, p.PID)
	res, err := ThreadDump(context.Background(), info, DumpOptions{Mode: ModeDumpToFile})
	require.NoError(t, err)
	assert.Equal(t, MethodDumpToFile, res.Method)
	ds, err := threaddump.ParseBytes(res.Text)
	require.NoError(t, err)
	assert.Equal(t, threaddump.FormatThreadDumpJSON, ds[0].Format)
	assert.Greater(t, len(ds[0].Threads), 100, "virtual threads included")
	leftovers, _ := os.ReadDir("/tmp")
	for _, e := range leftovers {
		assert.False(t, strings.HasPrefix(e.Name(), "ctprof-threads-"), "the JVM's file is removed: %s", e.Name())
	}

	old := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	_, err = ThreadDump(context.Background(), inspect(t, old.PID), DumpOptions{Mode: ModeDumpToFile})
	assert.ErrorContains(t, err, "needs JDK 21")
}

// With attach disabled ctprof must not signal the JVM at all (SIGQUIT would
// print a dump into the application's log, or kill a JVM started with -Xrs).
func TestAttachDisabledSendsNoSignal(t *testing.T) {
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{JVMFlags: []string{"-XX:+DisableAttachMechanism"}}, "2")
	info := inspect(t, p.PID)
	assert.False(t, info.AttachSupported)
	_, err := ThreadDump(context.Background(), info, DumpOptions{})
	assert.ErrorIs(t, err, ErrAttachDisabled)
	time.Sleep(300 * time.Millisecond) // a signal, had one been sent, would show by now
	assert.False(t, p.Exited())
	assert.NotContains(t, string(p.Log()), "Full thread dump", "no SIGQUIT reached the JVM")
}

func TestNotAJVM(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	_, err := Inspect("/proc", cmd.Process.Pid)
	assert.ErrorIs(t, err, ErrNotJVM)
	assert.NoError(t, cmd.Process.Signal(syscall.Signal(0)), "still alive")

	_, err = Inspect("/proc", 1<<22)
	assert.ErrorIs(t, err, procfs.ErrProcessGone)
}

// A JVM of another user: ctprof (root) connects with that user's
// credentials on one thread only.
func TestAttachAsTheTargetsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test starts a JVM as another user and needs root (CI runs as root)")
	}
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, "2")
	info := inspect(t, p.PID)
	assert.Equal(t, 65534, info.UID)
	res, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.NoError(t, err)
	assert.True(t, names(t, res.Text)["request-1"])
	assert.Equal(t, 0, os.Geteuid(), "ctprof's own credentials are untouched")
	assert.Equal(t, 0, os.Getegid())
	// Every thread of the process kept root.
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Uid:") {
				assert.Equal(t, []string{"0", "0", "0", "0"}, strings.Fields(line)[1:], "thread %s", task.Name())
			}
		}
	}
}

// Cleaners of /tmp delete a long-running JVM's attach socket. The JVM
// notices on the next SIGQUIT and opens a new one; ctprof must get there.
func TestAttachSocketDeleted(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "SyncSingleton", "2")
			info := inspect(t, p.PID)
			_, err := ThreadDump(context.Background(), info, DumpOptions{})
			require.NoError(t, err)
			sock := info.socketShown()
			require.FileExists(t, sock)
			require.NoError(t, os.Remove(sock))

			res, err := ThreadDump(context.Background(), info, DumpOptions{})
			require.NoError(t, err, "a dump after the socket file was deleted")
			assert.True(t, names(t, res.Text)["request-1"])
			assert.FileExists(t, sock, "the JVM opened a new socket")
			assert.False(t, p.Exited())
		})
	}
}

func TestTargetGone(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	info := inspect(t, p.PID)
	p.Stop()
	_, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, procfs.ErrProcessGone) || errors.Is(err, ErrAttachFailed), "%v", err)

	// Killed while answering: a clean error, in bounded time.
	p2 := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "2000")
	info2 := inspect(t, p2.PID)
	done := make(chan error, 1)
	go func() {
		_, err := ThreadDump(context.Background(), info2, DumpOptions{})
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	p2.Stop()
	select {
	case <-done: // success (it was quick) or a clean error: both fine
	case <-time.After(30 * time.Second):
		t.Fatal("ThreadDump hung after the target died")
	}
}

func TestPerfDataCounters(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.Start(t, jdk, "SyncSingleton", "4")
			pd, err := inspect(t, p.PID).ReadPerfData()
			require.NoError(t, err)
			c := pd.Counters()
			assert.GreaterOrEqual(t, c.LiveThreads, int64(5), "main and 4 request threads at least")
			assert.GreaterOrEqual(t, c.PeakThreads, c.LiveThreads)
			assert.GreaterOrEqual(t, c.StartedThreads, c.LiveThreads)
			assert.Positive(t, c.DaemonThreads)
			if jdk.Major <= 21 {
				assert.Contains(t, c.Sync, "ContendedLockAttempts", "JDK 8 to 21 count monitor contention")
			} else {
				assert.Empty(t, c.Sync, "gone in JDK 25")
			}
			home, ok := pd.String("java.property.java.home")
			assert.True(t, ok)
			assert.Equal(t, jdk.Home, home)
		})
	}
}

func TestParsePerfDataRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("short"), bytes.Repeat([]byte{0xff}, 64)} {
		_, err := ParsePerfData(b)
		assert.ErrorIs(t, err, ErrBadPerfData)
	}
}

// realPerfData returns a real hsperfdata file for the fuzz corpus, when one
// of this machine's JVMs is running; fuzzing also works without it.
func FuzzPerfData(f *testing.F) {
	head := []byte{0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0}
	entry := []byte{40, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 'J', 0, 1, 3, 32, 0, 0, 0, 'a', '.', 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}
	f.Add(append(append([]byte(nil), head...), entry...))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePerfData(b)
		if err != nil {
			return
		}
		_ = p.Counters()
		_ = p.AttachSupported()
	})
}

// A JVM inspected before it installed its SIGQUIT handler (serve --java
// finds new JVMs in their first milliseconds) is looked at again when a
// dump is due, not given up on for good.
func TestDumpPossibleLooksAgainAtAYoungJVM(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	info := inspect(t, p.PID)
	require.Error(t, info.listenerRunning(), "nobody attached yet: no listener")
	info.CatchesQuit = false // as Inspect saw it before the handler
	assert.True(t, info.DumpPossible())
	assert.True(t, info.CatchesQuit)
	res, err := ThreadDump(context.Background(), info, DumpOptions{Mode: ModeThreadPrint})
	require.NoError(t, err)
	assert.Contains(t, string(res.Text), "SyncSingleton")
}
