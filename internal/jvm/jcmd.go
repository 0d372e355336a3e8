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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// ErrNoJcmd means no jcmd tool could be found for the fallback.
var ErrNoJcmd = errors.New("no jcmd found (neither on PATH nor in the target's JDK)")

// findJcmd looks on PATH, then in the target's own JDK seen through its
// root (which works when ctprof and the target share libraries).
func findJcmd(i *Info) (string, error) {
	if p, err := exec.LookPath("jcmd"); err == nil {
		return p, nil
	}
	if i.JavaHome != "" {
		for _, rel := range []string{"bin/jcmd", "../bin/jcmd"} {
			p := filepath.Join(i.fs.Path(strconv.Itoa(i.PID), "root"), i.JavaHome, rel)
			if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", ErrNoJcmd
}

// jcmdDump runs `jcmd <pid> Thread.print [-l]`.
func jcmdDump(ctx context.Context, i *Info, o DumpOptions) (*DumpResult, error) {
	tool, err := findJcmd(i)
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
