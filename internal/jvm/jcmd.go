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
	"strconv"

	"golang.org/x/sys/unix"
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
	absent := i.absentTriggers()
	err = cmd.Run()
	absent.done(ctx.Err() != nil)
	if err != nil {
		return nil, fmt.Errorf("%s %v: %v: %s", tool, args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return &DumpResult{Text: stdout.Bytes(), Method: MethodJcmd}, nil
}

// leftTriggers are the places of the attach trigger that had none before
// jcmd ran. jcmd creates its own trigger and removes it when the listener
// answers; killed at the request's deadline it cannot, and a trigger left
// there would start the listener at the JVM's next SIGQUIT (an operator's
// kill -3) instead of printing the dump that was asked for.
type leftTriggers struct {
	dirs []*targetDir
	name string
}

// absentTriggers notes where the trigger is absent now.
func (i *Info) absentTriggers() *leftTriggers {
	t := &leftTriggers{name: ".attach_pid" + strconv.Itoa(i.NSPID)}
	for _, open := range []func() (*targetDir, error){
		func() (*targetDir, error) { return openTargetCwd(i.fs, i.PID) },
		func() (*targetDir, error) { return openTargetRootDir(i.fs, i.PID, "tmp") },
	} {
		d, err := open()
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(d.fd, t.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			d.Close() // there already: not jcmd's
			continue
		}
		t.dirs = append(t.dirs, d)
	}
	return t
}

// done closes the directories; killed says jcmd was killed, and then the
// regular files of ctprof's own user (jcmd's) that appeared where
// absentTriggers found none are removed first.
func (t *leftTriggers) done(killed bool) {
	for _, d := range t.dirs {
		var st unix.Stat_t
		if killed && unix.Fstatat(d.fd, t.name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
			st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == os.Geteuid() {
			_ = d.removeIfSame(t.name, st, os.Geteuid(), os.Getegid())
		}
		d.Close()
	}
	t.dirs = nil
}
