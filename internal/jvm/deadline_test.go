package jvm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// A JVM that cannot reach a safepoint (SafepointStall, its attach
// listener started with the JVM) takes a request and never answers it: the
// request ends at its deadline with ErrTimeout and no jcmd fallback, or at
// once when its context is cancelled (Ctrl-C), and leaves no trigger file.
func TestRequestDeadlineOnAStalledJVM(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p := testjvm.StartWith(t, jdk, "SafepointStall", testjvm.Options{JVMFlags: []string{"-XX:+StartAttachListener"}}, "40")
			p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("STALL begin")) })
			p.WaitForSafepointStall(t, time.Second, 60*time.Second)
			info := inspect(t, p.PID)
			require.NoError(t, info.listenerRunning(), "-XX:+StartAttachListener opened the socket at start")
			info.Timeout = time.Second

			start := time.Now()
			_, err := ThreadDump(context.Background(), info, DumpOptions{AllowJcmd: true})
			took := time.Since(start)
			require.ErrorIs(t, err, ErrTimeout)
			assert.NotErrorIs(t, err, ErrAttachFailed, "a timeout is not an attach failure: no jcmd fallback")
			assert.Less(t, took, 3*time.Second)

			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			info.Timeout = time.Minute
			start = time.Now()
			_, err = Jcmd(ctx, info, "VM.version")
			took = time.Since(start)
			require.Error(t, err)
			assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded), "%v", err)
			assert.NotErrorIs(t, err, ErrTimeout, "cancelled, not timed out")
			assert.Less(t, took, 2*time.Second, "cancelling ends a blocked read at once")

			for _, dir := range []string{filepath.Join("/proc", strconv.Itoa(p.PID), "cwd"), filepath.Join("/proc", strconv.Itoa(p.PID), "root", "tmp")} {
				m, _ := filepath.Glob(filepath.Join(dir, ".attach_pid*"))
				assert.Empty(t, m)
			}
		})
	}
}

// A stopped JVM is sent nothing: not even a SIGQUIT to start its
// listener, which it would handle only once continued.
func TestRequestToAStoppedJVM(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	info := inspect(t, p.PID)
	require.NoError(t, syscall.Kill(p.PID, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(p.PID, syscall.SIGCONT) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		stopped, err := info.fs.LeaderStopped(p.PID)
		require.NoError(t, err)
		if stopped {
			break
		}
		require.True(t, time.Now().Before(deadline))
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	_, err := ThreadDump(context.Background(), info, DumpOptions{AllowJcmd: true})
	require.ErrorIs(t, err, ErrTargetStopped)
	assert.Less(t, time.Since(start), time.Second)
	_, err = StartRecording(context.Background(), info, RecordingOptions{Duration: time.Minute})
	require.ErrorIs(t, err, ErrTargetStopped)

	require.NoError(t, syscall.Kill(p.PID, syscall.SIGCONT))
	res, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.NoError(t, err, "a dump works once the JVM runs again")
	assert.Contains(t, string(res.Text), "request-1")
	assert.NotContains(t, string(p.Log()), "Full thread dump", "no SIGQUIT reached it while it was stopped")
}

// The jcmd fallback killed at its deadline leaves no trigger: jcmd makes
// its own .attach_pid and, killed before the listener answered, cannot
// remove it; ctprof removes the one that was not there before.
func TestJcmdKilledLeavesNoTrigger(t *testing.T) {
	if _, err := findJcmd(); err != nil {
		t.Fatalf("the test needs jcmd on PATH (JDK 17): %v", err)
	}
	p := testjvm.Start(t, testjvm.JDK17(t), "SafepointStall", "60")
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("STALL begin")) })
	p.WaitForSafepointStall(t, time.Second, 60*time.Second)
	info := inspect(t, p.PID)
	cwd := filepath.Join("/proc", strconv.Itoa(p.PID), "cwd")
	trigger := filepath.Join(cwd, ".attach_pid"+strconv.Itoa(info.NSPID))
	seen := make(chan bool, 1)
	go func() {
		// jcmd's trigger appears while it waits for the listener.
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(trigger); err == nil {
				seen <- true
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen <- false
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, err := jcmdDump(ctx, info, DumpOptions{})
	require.Error(t, err, "jcmd cannot answer during the stall")
	if !<-seen {
		t.Skip("jcmd did not get as far as its trigger file within 8 s on this machine")
	}
	_, err = os.Stat(trigger)
	assert.True(t, os.IsNotExist(err), "jcmd's trigger was removed: %v", err)
}
