package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
)

// fake is one process of a fixture /proc tree.
type fake struct {
	pid, ppid int
	// comm is the kernel's name; status shows it as given (fixtures hold
	// no characters the kernel would escape).
	comm    string
	args    []string // cmdline; none for a kernel thread
	uid     int
	threads int
}

// fakeRoot writes a /proc tree holding procs, plus the non-process
// entries a real one has, and returns its root.
func fakeRoot(t *testing.T, procs ...fake) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range procs {
		writeFake(t, root, p)
	}
	for _, name := range []string{"sys", "net", "1a"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, name), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  1 2 3 4\nbtime 1700000000\n"), 0o644))
	require.NoError(t, os.Symlink("1", filepath.Join(root, "self")))
	return root
}

func writeFake(t *testing.T, root string, p fake) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	threads := max(p.threads, 1)
	status := fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n"+
		"Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nGroups:\t\nNSpid:\t%d\nThreads:\t%d\nCpus_allowed_list:\t0-1\n",
		p.comm, p.pid, p.pid, p.ppid, p.uid, p.uid, p.uid, p.uid, p.uid, p.uid, p.uid, p.uid, p.pid, threads)
	// The fields gopsutil parses for the parent: state, ppid, ... up to
	// starttime (the 22nd).
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 %d 0 4242 10000000 300 18446744073709551615\n",
		p.pid, p.comm, p.ppid, p.pid, p.pid, threads)
	cmdline := ""
	if len(p.args) > 0 {
		cmdline = strings.Join(p.args, "\x00") + "\x00"
	}
	for name, content := range map[string]string{"status": status, "stat": stat, "comm": p.comm + "\n", "cmdline": cmdline} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o444))
	}
}

func TestList(t *testing.T) {
	tests := []struct {
		name string
		proc fake
		want Process
	}{
		{
			name: "a program",
			proc: fake{pid: 4242, ppid: 1, comm: "many_threads", args: []string{"/opt/bin/many_threads", "8"}, uid: 0, threads: 9},
			want: Process{PID: 4242, Name: "many_threads", UID: 0, User: "root", Threads: 9, Cmdline: "/opt/bin/many_threads 8"},
		},
		{
			name: "a kernel thread has no command line",
			proc: fake{pid: 2, comm: "kthreadd"},
			want: Process{PID: 2, Name: "kthreadd", User: "root", Threads: 1},
		},
		{
			name: "a cut name is completed from argv[0]",
			proc: fake{pid: 300, ppid: 1, comm: "elasticsearch-n", args: []string{"/usr/share/es bin/elasticsearch-node", "-d"}, threads: 40},
			want: Process{PID: 300, Name: "elasticsearch-node", User: "root", Threads: 40, Cmdline: "/usr/share/es bin/elasticsearch-node -d"},
		},
		{
			name: "but not from an argv[0] that is another name",
			proc: fake{pid: 301, ppid: 1, comm: "worker-pool-gat", args: []string{"/usr/bin/python3", "gateway.py"}},
			want: Process{PID: 301, Name: "worker-pool-gat", User: "root", Threads: 1, Cmdline: "/usr/bin/python3 gateway.py"},
		},
		{
			name: "a hostile name is kept as read",
			proc: fake{pid: 302, ppid: 1, comm: "x) R 1 (y", args: []string{"\x1b[2J", "--name", "java"}},
			want: Process{PID: 302, Name: "x) R 1 (y", User: "root", Threads: 1, Cmdline: "\x1b[2J --name java"},
		},
		{
			name: "a user without a name",
			proc: fake{pid: 303, ppid: 1, comm: "app", args: []string{"app"}, uid: 4000321},
			want: Process{PID: 303, Name: "app", UID: 4000321, Threads: 1, Cmdline: "app"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(fakeRoot(t, tc.proc))
			got, err := l.List()
			require.NoError(t, err)
			assert.Equal(t, []Process{tc.want}, got)
			one, err := l.Get(tc.proc.pid)
			require.NoError(t, err)
			assert.Equal(t, tc.want, one)
		})
	}
}

// The listing is of the root's processes alone, in pid order, and leaves
// out the entries that are no processes, and one that vanished.
func TestListReadsTheRootOnly(t *testing.T) {
	root := fakeRoot(t,
		fake{pid: 77, ppid: 1, comm: "b", args: []string{"b"}},
		fake{pid: 5, ppid: 1, comm: "a", args: []string{"a"}},
		fake{pid: 1000, ppid: 1, comm: "c", args: []string{"c"}},
	)
	require.NoError(t, os.Remove(filepath.Join(root, "1000", "status"))) // exited between the listing and the read
	l := New(root)
	assert.Equal(t, root, l.Root())

	pids, err := l.PIDs()
	require.NoError(t, err)
	assert.Equal(t, []int{5, 77, 1000}, pids)

	procs, err := l.List()
	require.NoError(t, err)
	var got []int
	for _, p := range procs {
		got = append(got, p.PID)
	}
	assert.Equal(t, []int{5, 77}, got)

	_, err = l.Get(1000)
	assert.True(t, errors.Is(err, procfs.ErrProcessGone), "%v", err)
	_, err = l.Get(6)
	assert.True(t, errors.Is(err, procfs.ErrProcessGone), "%v", err)

	_, err = New(filepath.Join(root, "missing")).PIDs()
	assert.ErrorContains(t, err, "list processes in "+filepath.Join(root, "missing"))
}

func TestAncestors(t *testing.T) {
	tests := []struct {
		name  string
		procs []fake
		from  int
		want  []int
	}{
		{
			name:  "up to the parent outside the namespace",
			procs: []fake{{pid: 900, ppid: 800, comm: "ctprof"}, {pid: 800, ppid: 700, comm: "timeout"}, {pid: 700, ppid: 0, comm: "sh"}, {pid: 1, comm: "init"}},
			from:  900, want: []int{700, 800, 900},
		},
		{
			name:  "a parent that cannot be read ends the chain",
			procs: []fake{{pid: 900, ppid: 800, comm: "ctprof"}},
			from:  900, want: []int{800, 900},
		},
		{
			name:  "a name with parentheses and fields does not move the parent",
			procs: []fake{{pid: 900, ppid: 800, comm: "a) S 1 1 (b"}, {pid: 800, ppid: 0, comm: "sudo"}},
			from:  900, want: []int{800, 900},
		},
		{
			name:  "a loop ends",
			procs: []fake{{pid: 900, ppid: 800, comm: "a"}, {pid: 800, ppid: 900, comm: "b"}},
			from:  900, want: []int{800, 900},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := New(fakeRoot(t, tc.procs...)).ancestors(tc.from)
			var pids []int
			for pid := range got {
				pids = append(pids, pid)
			}
			assert.ElementsMatch(t, tc.want, pids)
		})
	}
}

// On the live /proc, ctprof (here the test binary) and the go command or
// shell that started it are its ancestors.
func TestSelfAndAncestorsLive(t *testing.T) {
	self := New("").SelfAndAncestors()
	assert.True(t, self[os.Getpid()])
	assert.True(t, self[os.Getppid()])
}

func TestFind(t *testing.T) {
	self := os.Getpid()
	// ctprof and what started it hold the pattern in their command lines.
	base := []fake{
		{pid: self, ppid: 20, comm: "ctprof", args: []string{"ctprof", "attach", "--name", "market"}},
		{pid: 20, ppid: 0, comm: "sh", args: []string{"sh", "-c", "ctprof attach --name market"}},
		{pid: 2, comm: "kthreadd"},
	}
	many := append([]fake(nil), base...)
	for i := range 12 {
		many = append(many, fake{pid: 100 + i, ppid: 1, comm: "worker", args: []string{"worker", strconv.Itoa(i)}})
	}
	tests := []struct {
		name    string
		procs   []fake
		pattern string
		pid     int
		err     string
	}{
		{
			name:    "by name",
			procs:   append(base, fake{pid: 4242, ppid: 1, comm: "marketdata", args: []string{"/opt/md", "-p", "9000"}}),
			pattern: "^marketdata$", pid: 4242,
		},
		{
			name:    "by command line, never ctprof or its ancestors",
			procs:   append(base, fake{pid: 4242, ppid: 1, comm: "java", args: []string{"java", "-jar", "market.jar"}}),
			pattern: "market", pid: 4242,
		},
		{
			name:    "a kernel thread by its name",
			procs:   base,
			pattern: "^kthreadd$", pid: 2,
		},
		{
			name:    "by a cut name's whole",
			procs:   append(base, fake{pid: 4242, ppid: 1, comm: "elasticsearch-n", args: []string{"/opt/elasticsearch-node"}}),
			pattern: "^elasticsearch-node$", pid: 4242,
		},
		{
			name:    "none",
			procs:   base,
			pattern: "market",
			err:     `no process matches --name "market" (ctprof ps lists candidates)`,
		},
		{
			name: "two, their names escaped",
			procs: append(base,
				fake{pid: 4242, ppid: 1, comm: "market\x1b[31m", args: []string{"a", "market"}},
				fake{pid: 4343, ppid: 1, comm: "marketdata", args: []string{"b"}}),
			pattern: "market",
			err:     "--name \"market\" matches 2 processes; give a PID or a narrower pattern:\n  4242 market\\x1b[31m\n  4343 marketdata",
		},
		{
			name:    "many, ten of them shown",
			procs:   many,
			pattern: "^worker$",
			err: "--name \"^worker$\" matches 12 processes; give a PID or a narrower pattern:\n" +
				"  100 worker\n  101 worker\n  102 worker\n  103 worker\n  104 worker\n  105 worker\n  106 worker\n  107 worker\n  108 worker\n  109 worker\n… 2 more",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := New(fakeRoot(t, tc.procs...)).Find(regexp.MustCompile(tc.pattern))
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pid, pid)
		})
	}
}

// A server made of processes is one row: a shell whose children run the
// shell too is listed once, with its tree's processes and threads, and
// its children are not listed on their own; a child running another
// program (sleep) is a process of its own.
func TestCandidatesFoldTrees(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'sleep 30; true' & sh -c 'sleep 30; true' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group we made
		_ = cmd.Wait()
	}()
	l := New("/proc")
	fs := procfs.NewFS("/proc")
	var row *Candidate
	var rows []Candidate
	var kids []int
	// Until both shells have started their sleep, and one listing saw them.
	require.Eventually(t, func() bool {
		rows, _, _ = l.Candidates(CandidateFilter{All: true})
		row = nil
		listed := map[int]bool{}
		for i := range rows {
			listed[rows[i].PID] = true
			if rows[i].PID == cmd.Process.Pid {
				row = &rows[i]
			}
		}
		kids, _, _ = fs.Descendants(cmd.Process.Pid, 0)
		sleeping := 0
		for _, k := range kids {
			if fs.Executable(k) == "/usr/bin/sleep" && listed[k] {
				sleeping++
			}
		}
		return row != nil && row.Processes == 3 && sleeping == 2
	}, 10*time.Second, 20*time.Millisecond, "the shell and its two shells as one row, each sleep a row of its own")
	assert.Equal(t, 3, row.Threads)
	listed := map[int]bool{}
	for _, r := range rows {
		listed[r.PID] = true
	}
	sleeps := 0
	for _, k := range kids {
		if fs.Executable(k) == "/usr/bin/sleep" {
			sleeps++
			assert.True(t, listed[k], "sleep %d runs another program: a row of its own", k)
		} else {
			assert.False(t, listed[k], "shell %d is in its parent's row", k)
		}
	}
	assert.Equal(t, 2, sleeps)
}
