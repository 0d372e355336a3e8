//go:build linux && amd64

package testservers

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startOwned starts cmd, a server the test owns (it dies with the test's
// process: Pdeathsig), its output gathered in out, and when the test ends
// stops it by its pid: with stop, then, after 10 s, with SIGKILL. done is
// closed once it exited.
func startOwned(t testing.TB, cmd *exec.Cmd, stop syscall.Signal) (out *syncBuffer, done <-chan struct{}) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(stop) // our child: its pid is ours until reaped
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return out, exited
}
