package procs

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/termtext"
)

// Candidate is one process worth profiling, as `ctprof ps` lists it.
type Candidate struct {
	PID     int    `json:"pid"`
	Name    string `json:"name"`
	User    string `json:"user"`
	Threads int    `json:"threads"`
	// Processes counts the processes of a server made of processes (the
	// process and its descendants that run its executable, as attach
	// samples them by default); Threads and Established are then the
	// tree's. 1 for a process alone.
	Processes int `json:"processes"`
	// Established is the number of established TCP connections plus the
	// clients on the Unix sockets the process listens on
	// (procfs.Connections); -1 when the process's fds cannot be read.
	Established int  `json:"established"`
	JVM         bool `json:"jvm"`
	// JVMUnknown: ctprof may not read the process's memory maps (another
	// user's process), so whether it is a JVM is unknown; JVM is false.
	JVMUnknown bool   `json:"jvm_unknown,omitempty"`
	Cmdline    string `json:"cmdline"`
}

// CandidateFilter says which processes Candidates keeps.
type CandidateFilter struct {
	// JavaOnly keeps the JVMs; All keeps single-threaded processes too.
	JavaOnly, All bool
}

// Candidates lists the processes worth profiling, most threads first, each
// with its connections and whether it is a JVM. uninspected counts those
// whose JVM-ness could not be told (another user's process), to say once.
func (l Lister) Candidates(f CandidateFilter) (rows []Candidate, uninspected int, err error) {
	all, err := l.List()
	if err != nil {
		return nil, 0, err
	}
	rows = make([]Candidate, 0, len(all))
	trees := l.trees(all)
	for _, proc := range all {
		members, inTree := trees[proc.PID]
		if inTree && members == nil {
			continue // listed with its tree's root
		}
		threads := proc.Threads
		for _, m := range members {
			threads += m.Threads
		}
		if threads < 2 && !f.All {
			continue
		}
		p := Candidate{PID: proc.PID, Name: proc.Name, User: proc.User, Threads: threads, Processes: 1 + len(members), Cmdline: proc.Cmdline, Established: -1}
		jvm, err := l.fs.CheckJVM(p.PID)
		if errors.Is(err, procfs.ErrProcessGone) {
			continue // gone since the listing: normal
		}
		p.JVM = jvm
		if errors.Is(err, procfs.ErrPermission) {
			p.JVMUnknown = true
			uninspected++
		}
		if f.JavaOnly && !p.JVM {
			continue
		}
		pids := []int{p.PID}
		for _, m := range members {
			pids = append(pids, m.PID)
		}
		if c, err := l.fs.TreeConnections(pids, 0); err == nil {
			p.Established = c.Established
		}
		rows = append(rows, p)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Threads != rows[j].Threads {
			return rows[i].Threads > rows[j].Threads
		}
		return rows[i].PID < rows[j].PID
	})
	return rows, uninspected, nil
}

// trees finds the servers made of processes among all: a process whose
// parent runs the same executable belongs to its parent's tree, up to the
// first ancestor whose own parent runs another program. The result maps
// each tree's root to its other processes (a root with none is not in the
// map) and every member to nil.
func (l Lister) trees(all []Process) map[int][]Process {
	exe := make(map[int]string, len(all))
	parent := make(map[int]int, len(all))
	for _, p := range all {
		if p.Cmdline == "" {
			continue // a kernel thread or a zombie
		}
		exe[p.PID] = l.fs.Executable(p.PID)
		if pp, err := l.fs.Parent(p.PID); err == nil {
			parent[p.PID] = pp
		}
	}
	rootOf := func(pid int) int {
		for i := 0; i < procfs.MaxTreeProcesses; i++ {
			pp, ok := parent[pid]
			if !ok || exe[pid] == "" || exe[pp] != exe[pid] {
				return pid
			}
			pid = pp
		}
		return pid
	}
	out := map[int][]Process{}
	for _, p := range all {
		if r := rootOf(p.PID); r != p.PID {
			out[r] = append(out[r], p)
			if _, ok := out[p.PID]; !ok {
				out[p.PID] = nil
			}
		}
	}
	return out
}

// WriteTable writes the candidates as `ctprof ps` shows them: a "-" for
// connections ctprof may not count, a "?" for a JVM it may not tell, the
// command line cut at 100 bytes and escaped for the terminal.
func WriteTable(w io.Writer, rows []Candidate) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPROCS\tTHREADS\tCONNS\tJVM\tUSER\tCOMMAND")
	for _, r := range rows {
		conns := "-"
		if r.Established >= 0 {
			conns = fmt.Sprint(r.Established)
		}
		jvm := ""
		switch {
		case r.JVM:
			jvm = "yes"
		case r.JVMUnknown:
			jvm = "?"
		}
		cmdline := r.Cmdline
		if cmdline == "" {
			cmdline = r.Name
		}
		if len(cmdline) > 100 {
			cmdline = cmdline[:100] + "…"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.PID, max(r.Processes, 1), r.Threads, conns, jvm, termtext.Safe(r.User), termtext.Safe(strings.TrimSpace(cmdline)))
	}
	return tw.Flush()
}

// UninspectedMessage says why some processes could not be told JVM or not:
// their memory maps were refused. To another user, because they are
// another user's; to root, because the kernel still refuses them (a
// process that made itself undumpable in a user namespace root's
// capabilities do not reach, such as a container's or a VM's init).
func UninspectedMessage(n int, root bool) string {
	what := "processes"
	if n == 1 {
		what = "process"
	}
	if root {
		return fmt.Sprintf("ctprof: %d %s could not be inspected (JVM or not): the kernel refused their memory maps even to root (an undumpable process in a user namespace ctprof's capabilities do not reach)", n, what)
	}
	return fmt.Sprintf("ctprof: %d %s could not be inspected (JVM or not): they belong to other users; run as root or as their user", n, what)
}
