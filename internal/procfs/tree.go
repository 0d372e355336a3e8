package procfs

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// MaxTreeProcesses bounds the descendants a tree of processes is sampled
// with: each costs a sweep of its own (a few system calls per thread), and
// a tree of more is a host, not a server.
const MaxTreeProcesses = 1000

// Descendants lists pid's descendants, nearest first (children, then their
// children), at most max of them (MaxTreeProcesses when max <= 0). It reads
// each task's children file (/proc/<pid>/task/<tid>/children, Linux 3.5+
// with CONFIG_PROC_CHILDREN) and, where the kernel has none, the parent
// pids of every process. A process that exits while it is read is left
// out. truncated says more were there.
func (f FS) Descendants(pid, max int) (out []int, truncated bool, err error) {
	return f.DescendantsOf(pid, max, nil)
}

// DescendantsOf is Descendants for a caller that knows which processes
// have a single thread (single, nil for none): of those only the main
// thread's children file is read, not their task directory (half the
// system calls of a tree of single-threaded workers).
func (f FS) DescendantsOf(pid, max int, single func(pid int) bool) (out []int, truncated bool, err error) {
	if max <= 0 {
		max = MaxTreeProcesses
	}
	if !f.Exists(pid) {
		return nil, false, ErrProcessGone
	}
	if _, err := os.Stat(f.pidPath(pid, "task", strconv.Itoa(pid), "children")); err != nil {
		return f.descendantsByParent(pid, max)
	}
	out, truncated = walkTree(pid, max, func(p int) []int { return f.childrenOf(p, single != nil && single(p)) })
	return out, truncated, nil
}

// walkTree lists pid's descendants breadth first, nearest first, by
// children (sorted), at most max of them.
func walkTree(pid, max int, children func(int) []int) (out []int, truncated bool) {
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children(p) {
			if seen[c] {
				continue
			}
			if len(out) >= max {
				return out, true
			}
			seen[c] = true
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out, false
}

// childrenOf reads the children of every task of process p (of its main
// thread alone when single), sorted.
func (f FS) childrenOf(p int, single bool) []int {
	dir := f.pidPath(p, "task")
	tids := []string{strconv.Itoa(p)}
	if !single {
		d, err := os.Open(dir)
		if err != nil {
			return nil
		}
		tids, _ = d.Readdirnames(-1)
		d.Close()
	}
	var kids []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/children")
		if err != nil {
			continue
		}
		for _, w := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(w)); err == nil && c > 0 {
				kids = append(kids, c)
			}
		}
	}
	sort.Ints(kids)
	return kids
}

// descendantsByParent finds pid's descendants by the parent pid in every
// process's stat.
func (f FS) descendantsByParent(pid, max int) ([]int, bool, error) {
	d, err := os.Open(f.root)
	if err != nil {
		return nil, false, classify(f.root, err)
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	kids := map[int][]int{}
	for _, n := range names {
		p, err := strconv.Atoi(n)
		if err != nil || p <= 0 {
			continue
		}
		b, err := os.ReadFile(f.pidPath(p, "stat"))
		if err != nil {
			continue
		}
		if pp, ok := parentOfStat(b); ok {
			kids[pp] = append(kids[pp], p)
		}
	}
	out, truncated := walkTree(pid, max, func(p int) []int {
		k := kids[p]
		sort.Ints(k)
		return k
	})
	return out, truncated, nil
}

// Parent reads pid's parent pid.
func (f FS) Parent(pid int) (int, error) {
	b, err := f.readFile(f.pidPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	pp, ok := parentOfStat(b)
	if !ok {
		return 0, fmt.Errorf("%s: no parent pid", f.pidPath(pid, "stat"))
	}
	return pp, nil
}

// parentOfStat reads the parent pid of a /proc/<pid>/stat text: the
// second field after the name, which ends at the last ')' (a name may
// hold spaces and parentheses).
func parentOfStat(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(string(f[1]))
	return pp, err == nil
}

// Executable is the path of the program pid runs, as its exe link names
// it (read as a link, never followed), without the kernel's " (deleted)"
// for a replaced file; "" when unreadable.
func (f FS) Executable(pid int) string {
	l, err := os.Readlink(f.pidPath(pid, "exe"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(l, " (deleted)")
}

// maxRoleBytes bounds a role taken from a command line.
const maxRoleBytes = 64

// ProcessRole is the role a process of a server's tree writes into its
// own command line, by the convention of setproctitle ("postgres:
// checkpointer", "nginx: worker process"): the title up to its first word
// that holds a digit, a slash or a parenthesis, which name one instance (a
// client's address and port, a path, a pid) rather than the role:
// "postgres: app shop 10.0.0.7(54104) UPDATE" is "postgres: app shop".
// "" when the command line is not such a title (a program's own path and
// arguments). The text is the target's: bytes outside printable ASCII
// become '?', and it is at most 64 bytes.
func ProcessRole(cmdline []byte) string {
	c := bytes.TrimRight(cmdline, "\x00 ")
	name, rest, ok := bytes.Cut(c, []byte(": "))
	if !ok || len(name) == 0 || len(name) >= maxRoleBytes || bytes.ContainsAny(name, "/ \x00") {
		return ""
	}
	var b strings.Builder
	b.Write(name)
	b.WriteByte(':')
	for _, w := range bytes.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == 0 || r == '\t' }) {
		if bytes.ContainsAny(w, "0123456789/()[]") {
			break
		}
		if b.Len()+1+len(w) > maxRoleBytes {
			break
		}
		b.WriteByte(' ')
		b.Write(w)
	}
	out := []byte(b.String())
	for i, ch := range out {
		if ch < 0x20 || ch > 0x7e {
			out[i] = '?'
		}
	}
	return string(out)
}

// Role reads pid's command line and returns its role (ProcessRole); ""
// when it has none or cannot be read.
func (f FS) Role(pid int) string {
	b, err := f.readFile(f.pidPath(pid, "cmdline"))
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[:4096]
	}
	return ProcessRole(b)
}
