package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A target that execs another program: its sampler stops there, the event
// says so, and the pid is exported as down rather than sampled on as
// another program.
func TestRunStopsAtATargetsExec(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "go")
	cmd := exec.Command("sh", "-c", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; exec sleep 60", flag))
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})

	exp := &exporter{}
	events := make(chan Event, 100)
	ctx, cancel := context.WithCancel(context.Background())
	ts := New(Options{PIDs: []int{pid}, Interval: 50 * time.Millisecond, Discovery: 100 * time.Millisecond, Exporter: exp,
		Report: func(ev Event) { events <- ev }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	next := func(what string) Event {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == Noted {
					continue
				}
				return ev
			case <-time.After(30 * time.Second):
				t.Fatalf("no event: %s", what)
			}
		}
	}
	ev := next("started")
	require.Equal(t, Started, ev.Kind, "%+v", ev)
	assert.Equal(t, "sh", ev.Target.Name)
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	ev = next("exec")
	assert.Equal(t, Event{Kind: Exited, PID: pid, Explicit: true, Target: ev.Target, Exec: true}, ev)
	assert.Contains(t, ev.Message(time.Second), fmt.Sprintf("pid %d (sh) exec'd another program; exporting ctprof_up 0 for it", pid))
	exp.mu.Lock()
	defer exp.mu.Unlock()
	assert.Equal(t, map[int]bool{pid: false}, exp.up)
}
