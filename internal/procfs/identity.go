package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Identity tells one program run under a pid from another: a pid the
// kernel hands to a new process after the first exits, or a process that
// replaced its program with exec(2).
type Identity struct {
	// StartTime is when the process started, in clock ticks after boot
	// (stat field 22): a reused pid has a new one. exec keeps it.
	StartTime uint64
	// Comm is the kernel's name for the process (stat field 2), which
	// exec sets to the new program's file name; the program may also
	// rename itself (prctl PR_SET_NAME), so it alone proves no exec.
	Comm string
	// Exe is where /proc/<pid>/exe points ("" when ctprof may not read
	// it). The link is only read, never followed.
	Exe string
	// StartStack and StartCode are where exec placed the stack and the
	// program's text (stat fields 28 and 26; zero, or 1 for StartCode,
	// when ctprof may not read the process's memory layout). With address
	// space randomization they differ after an exec of the same binary.
	StartStack, StartCode uint64
}

// Identity reads pid's Identity: its leader thread's stat line and the
// exe link. The thread's line has the process's fields (the same start
// time, which exec keeps, and the same memory layout) without the
// process-wide sums of /proc/<pid>/stat, which the kernel adds up over
// every thread at each read (2.4 ms for a JVM of 10,000 threads: 5 % of
// ctprof's CPU in a 20 s attach of it).
func (f FS) Identity(pid int) (Identity, error) {
	b, err := f.readFile(f.pidPath(pid, "task", strconv.Itoa(pid), "stat"))
	if err != nil {
		b, err = f.readFile(f.pidPath(pid, "stat")) // a /proc without task/
	}
	if err != nil {
		return Identity{}, err
	}
	id, ok := parseIdentity(b)
	if !ok {
		return Identity{}, ErrProcessGone
	}
	// Readlink answers with the link's text; nothing is opened through it.
	// A binary replaced on disk (an upgrade) reads " (deleted)" without
	// an exec: the suffix is no change of program.
	if exe, err := os.Readlink(filepath.Join(f.pidPath(pid), "exe")); err == nil {
		id.Exe = strings.TrimSuffix(exe, " (deleted)")
	}
	return id, nil
}

// parseIdentity reads the Identity fields of a stat line; the name may hold
// spaces and ')', so fields are counted from the last ')'.
func parseIdentity(b []byte) (Identity, bool) {
	var t Thread
	comm, ok := parseStat(b, &t)
	if !ok {
		return Identity{}, false
	}
	id := Identity{StartTime: t.StartTime, Comm: string(comm)}
	closing := -1
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			closing = i
			break
		}
	}
	field, i, rest := 3, 0, b[closing+2:]
	for i < len(rest) && field <= 28 {
		j := i
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		switch field {
		case 26:
			id.StartCode = atou(rest[i:j])
		case 28:
			id.StartStack = atou(rest[i:j])
		}
		field++
		i = j + 1
	}
	return id, true
}

// Exec reports whether the process now runs another program than it did
// when it was read (was): another executable, or the same one loaded again.
// It needs the fields ctprof could read both times; with none of the
// memory layout and no exe link (another user's process without
// privileges), a new name is all it has to go by.
func (id Identity) Exec(was Identity) bool {
	layout := false
	if id.Exe != "" && was.Exe != "" {
		if id.Exe != was.Exe {
			return true
		}
		layout = true
	}
	if id.StartStack != 0 && was.StartStack != 0 {
		if id.StartStack != was.StartStack {
			return true
		}
		layout = true
	}
	if id.StartCode > 1 && was.StartCode > 1 {
		if id.StartCode != was.StartCode {
			return true
		}
		layout = true
	}
	return !layout && id.Comm != was.Comm
}
