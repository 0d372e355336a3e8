package jvm

// This file holds ctprof's only os/exec towards a target (internal/scale
// runs the user's own workload): the fallback to the JDK's jcmd tool when
// the attach protocol cannot be spoken directly. jcmd starts
// a JVM of its own (about a second and a core), so it is the last resort.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
)

// ErrNoJcmd means no jcmd tool could be found for the fallback.
var ErrNoJcmd = errors.New("no jcmd on ctprof's PATH (ctprof never runs a jcmd found in the target's own JDK)")

// findJcmd looks on ctprof's PATH only. The target's own JDK, seen through
// /proc/<pid>/root, is writable by whoever owns the target: running a
// binary from there as root would hand that user root.
func findJcmd() (string, error) {
	p, err := exec.LookPath("jcmd")
	if err != nil {
		return "", ErrNoJcmd
	}
	return p, nil
}

// jcmdDump runs `jcmd <pid> Thread.print [-l]`.
func jcmdDump(ctx context.Context, i *Info, o DumpOptions) (*DumpResult, error) {
	tool, err := findJcmd()
	if err != nil {
		return nil, err
	}
	args := []string{strconv.Itoa(i.PID), "Thread.print"}
	if o.Locks {
		args = append(args, "-l")
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %v: %s", tool, args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return &DumpResult{Text: stdout.Bytes(), Method: MethodJcmd}, nil
}
