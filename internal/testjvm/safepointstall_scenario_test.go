package testjvm

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

func init() { scenarioChecks["SafepointStall"] = checkSafepointStall }

// checkSafepointStall: once a loop begins, /proc shows matcher-3 running
// and the allocators asleep, the JVM answers no jcmd while the loop runs
// (the stall is the JVM's, not a look of /proc), and the loop ends.
func checkSafepointStall(t *testing.T, p *Process) {
	p.WaitForLog(t, 60*time.Second, func(log []byte) bool { return bytes.Contains(log, []byte("STALL begin")) })
	p.WaitForSafepointStall(t, time.Second, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.JDK.Bin("jcmd"), append(toolJVMFlags("-J"), strconv.Itoa(p.PID), "Thread.print")...)
	cmd.Env = toolEnv(p.JDK)
	out, err := cmd.CombinedOutput()
	if ctx.Err() == nil {
		t.Fatalf("jcmd Thread.print answered during the stall (%v):\n%s", err, head(out, 2048))
	}
	// The loop ends (about 40 s on this machine, slower under load).
	p.WaitForLog(t, 3*time.Minute, func(log []byte) bool { return bytes.Contains(log, []byte("STALL end")) })
}
