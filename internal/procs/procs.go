// Package procs is ctprof's one way to find processes under a /proc root:
// it lists them (what `ctprof ps` shows), picks the one process a --name
// pattern matches, and names ctprof's own pid and its ancestors, whose
// command lines hold that pattern.
//
// The root is "/proc" on a live system; tests point it at a tree of their
// own. gopsutil is told the same root through its context, so the
// processes it reads are those of the root and never the host's.
//
// A process's name and command line are whatever whoever started it chose:
// they are matched and shown (escaped, through termtext.Safe), never used
// as paths. Only regular files of a numbered entry are read (status,
// cmdline, stat, and comm for a cut name); no link in the tree is
// followed.
package procs

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/termtext"
)

// Process is one process as ctprof lists it.
type Process struct {
	PID int
	// Name is the kernel's name for the process (comm, as
	// /proc/<pid>/status shows it). The kernel cuts it at 15 bytes; a cut
	// name is completed with argv[0]'s base name when that starts with it,
	// as gopsutil does, so a pattern may name the whole program.
	Name string
	// UID is the effective user id, User its name ("" when it has none).
	UID  int
	User string
	// Threads is the number of threads.
	Threads int
	// Cmdline is the command line, arguments separated by spaces; empty for
	// kernel threads and zombies.
	Cmdline string
}

// commCut is the length at which the kernel cuts a process name
// (TASK_COMM_LEN less its NUL).
const commCut = 15

// Lister reads the processes under one /proc root. Its methods may be
// called from several goroutines.
type Lister struct {
	fs procfs.FS
	// ctx carries the root to gopsutil (HostProcEnvKey); it also overrides
	// a HOST_PROC variable, which the rest of ctprof does not read either.
	ctx context.Context
	// users caches user names by uid: looking one up reads the user
	// database, and a listing asks for the same few uids again and again.
	users *sync.Map
}

// New returns the Lister of the /proc tree mounted at root ("/proc" when
// empty).
func New(root string) Lister {
	fs := procfs.NewFS(root)
	ctx := context.WithValue(context.Background(), common.EnvKey, common.EnvMap{common.HostProcEnvKey: fs.Root()})
	return Lister{fs: fs, ctx: ctx, users: &sync.Map{}}
}

// Root is the mount point the Lister reads.
func (l Lister) Root() string { return l.fs.Root() }

// PIDs lists the processes under the root, lowest pid first.
func (l Lister) PIDs() ([]int, error) {
	pids, err := process.PidsWithContext(l.ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", l.fs.Root(), err)
	}
	out := make([]int, 0, len(pids))
	for _, pid := range pids {
		if pid > 0 {
			out = append(out, int(pid))
		}
	}
	return out, nil
}

// Get reads one process. A process that does not exist (any more) gives
// an error wrapping procfs.ErrProcessGone.
//
// It reads status and cmdline through procfs, two reads a process, rather
// than through gopsutil's accessors, which read status again for each
// field they return, stat for a start time, and the user database for
// every process: listing a shared 2-core machine's 79 processes took 8 ms
// this way against 32 ms through them, as `ctprof ps` did before
// (BenchmarkList, BenchmarkListGopsutil).
func (l Lister) Get(pid int) (Process, error) {
	p, err := l.fs.Process(pid)
	if err != nil {
		return Process{}, err
	}
	out := Process{PID: pid, Name: p.Name, UID: p.UID, Threads: p.Threads, Cmdline: p.Cmdline, User: l.user(p.UID)}
	if len(p.Name) >= commCut && p.Cmdline != "" {
		// gopsutil's name completes a cut one from argv[0] (its arguments
		// unjoined). Only a name this long may be cut, and only a process
		// with a command line has an argv[0]: kernel threads, whose
		// workqueue names run longer, are spared the reads.
		if n, err := handle(pid).NameWithContext(l.ctx); err == nil && n != "" {
			out.Name = n
		}
	}
	return out, nil
}

// handle is pid's gopsutil handle. It is built directly rather than by
// process.NewProcess, which checks that the pid exists by signalling it
// unless the root is a mount point: the host's process of that pid, not
// the one under a test's root.
func handle(pid int) *process.Process {
	return &process.Process{Pid: int32(pid)}
}

func (l Lister) user(uid int) string {
	if name, ok := l.users.Load(uid); ok {
		return name.(string)
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	l.users.Store(uid, name)
	return name
}

// List reads every process under the root, lowest pid first. Processes
// that exit meanwhile, or whose status may not be read, are left out.
func (l Lister) List() ([]Process, error) {
	pids, err := l.PIDs()
	if err != nil {
		return nil, err
	}
	out := make([]Process, 0, len(pids))
	for _, pid := range pids {
		p, err := l.Get(pid)
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// SelfAndAncestors is ctprof's pid and those of its parent chain. ctprof's
// own command line holds a --name pattern, and so do those of whatever
// started it (sudo, runuser, timeout, a shell's -c): none of them is ever
// a target.
func (l Lister) SelfAndAncestors() map[int]bool { return l.ancestors(os.Getpid()) }

// ancestors is pid and its parent chain up to the first process whose
// parent is outside the pid namespace (0), read from <root>/<pid>/stat. A
// parent that cannot be read ends the chain, and so does a loop.
func (l Lister) ancestors(pid int) map[int]bool {
	pids := map[int]bool{}
	for pid > 0 && !pids[pid] {
		pids[pid] = true
		ppid, err := handle(pid).PpidWithContext(l.ctx)
		if err != nil {
			break
		}
		pid = int(ppid)
	}
	return pids
}

// Find picks the one process whose name or command line re matches,
// never ctprof or its ancestors. No match, or more than one, is an error
// that says so; it lists up to 10 of the matches with their names
// escaped.
func (l Lister) Find(re *regexp.Regexp) (int, error) {
	procs, err := l.List()
	if err != nil {
		return 0, err
	}
	self := l.SelfAndAncestors()
	var matches []Process
	for _, p := range procs {
		if self[p.PID] {
			continue
		}
		if re.MatchString(p.Name) || re.MatchString(p.Cmdline) {
			matches = append(matches, p)
		}
	}
	expr := re.String()
	switch len(matches) {
	case 0:
		return 0, fmt.Errorf("no process matches --name %q (ctprof ps lists candidates)", expr)
	case 1:
		return matches[0].PID, nil
	}
	var lines []string
	for i, m := range matches {
		if i == 10 {
			lines = append(lines, fmt.Sprintf("… %d more", len(matches)-10))
			break
		}
		lines = append(lines, fmt.Sprintf("  %d %s", m.PID, termtext.Safe(m.Name)))
	}
	return 0, fmt.Errorf("--name %q matches %d processes; give a PID or a narrower pattern:\n%s", expr, len(matches), strings.Join(lines, "\n"))
}
