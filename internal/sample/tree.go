package sample

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Servers made of processes. PostgreSQL forks a backend per client, nginx
// and Apache's prefork a worker per slot: the work, and the waits, are in
// the target's descendants. A tree is sampled as one target: every tick
// each process of it is swept by a Sampler of its own, and the samples are
// merged into the root's snapshot, whose threads then carry their
// process's pid (procfs.Thread.PID). Futex words are keyed as the kernel
// keys futexes (treewords.go): a process's own word by the process and its
// address, a word of shared memory by the object and its offset, so the
// waits of processes that map one segment, at one address or at their
// own, are on one word.

// TreeMode says whether a target's descendants are sampled with it.
type TreeMode int

// The tree modes.
const (
	// TreeAuto samples the tree of a native target that has a child
	// running its own executable (a server's forked workers), from the
	// first sample that finds one.
	TreeAuto TreeMode = iota
	// TreeOn samples every descendant of the target.
	TreeOn
	// TreeOff samples the target alone.
	TreeOff
)

// privateTagShift is where a descendant's index goes in the address of
// its private futex words.
const privateTagShift = 48

// treeState is a tree's members and what the run's end says of them.
type treeState struct {
	mode TreeMode
	// on says the tree is sampled (TreeOn, or TreeAuto once a child ran
	// the target's executable); exe is the target's.
	on  bool
	exe string
	// members are the sampled descendants by pid.
	members map[int]*treeMember
	// nextIndex is the index the next new member gets (1 onwards; the
	// target's own words keep theirs).
	nextIndex uint64
	// seen counts the processes sampled over the run (the target too),
	// gone those that exited or exec'd another program, truncated the
	// ticks whose tree was cut at procfs.MaxTreeProcesses.
	seen, gone, truncated int
	// failed counts the processes that could not be sampled, by reason;
	// refused are their pids (with start times), not tried again.
	failed  map[string]int
	refused map[refusedProcess]bool
	// shared is where each shared object's offset 0 lies in the keys of
	// its words (treewords.go).
	shared map[sharedObject]uint64
	// tids are the threads of the tree's last sample: a lock in shared
	// memory may be held by a thread of any of its processes.
	tids map[int]bool
}

// hasThread reports a thread of the tree's last sample.
func (t *treeState) hasThread(tid int) bool { return t.tids[tid] }

// refusedProcess is a process that could not be sampled: its pid and
// start time (a reused pid is another process).
type refusedProcess struct {
	pid   int
	start uint64
}

type treeMember struct {
	s     *Sampler
	index uint64
	role  string
}

// newTree sets up the tree of a new sampler, when its options ask for one.
func (s *Sampler) newTree() {
	if s.opts.Tree == TreeOff {
		return
	}
	if s.target.Kind != snapshot.KindNative {
		if s.opts.Tree == TreeOn {
			s.notes = append(s.notes, fmt.Sprintf("--tree: pid %d is a JVM, sampled alone: a tree of processes is sampled for native servers (a JVM's work runs in its own threads)", s.opts.PID))
		}
		return
	}
	s.tree = &treeState{mode: s.opts.Tree, on: s.opts.Tree == TreeOn, exe: s.fs.Executable(s.opts.PID),
		members: map[int]*treeMember{}, nextIndex: 1, seen: 1, failed: map[string]int{}, refused: map[refusedProcess]bool{}}
	s.mem.SetPeers(s.tree.hasThread)
}

// memberOptions are a descendant's sampler's: the run's, without its end
// (the root's Next ends it), dumps (a JVM in the tree is read through
// /proc) or a tree of its own.
func (s *Sampler) memberOptions(pid int) Options {
	o := s.opts
	o.PID, o.Count, o.Duration, o.Tree = pid, 0, 0, TreeOff
	o.JVM = JVMOptions{NoDumps: true}
	// The root's tracer follows every thread of the tree (exactwaits.go).
	o.ExactWaits = ExactOff
	return o
}

// findMembers brings the tree's members up to date with the target's
// descendants: new ones are opened, gone ones closed.
func (s *Sampler) findMembers() {
	t := s.tree
	kids, truncated, err := s.fs.DescendantsOf(s.opts.PID, procfs.MaxTreeProcesses, func(pid int) bool {
		if pid == s.opts.PID {
			return s.lastRootThreads == 1
		}
		m := t.members[pid]
		return m != nil && m.s.lastN == 1
	})
	if err != nil {
		return
	}
	if truncated {
		t.truncated++
	}
	if !t.on {
		for _, k := range kids {
			if t.exe != "" && s.fs.Executable(k) == t.exe {
				t.on = true
				break
			}
		}
		if !t.on {
			return
		}
	}
	alive := make(map[int]bool, len(kids))
	for _, k := range kids {
		alive[k] = true
		if t.members[k] != nil {
			continue
		}
		id, idErr := s.fs.Identity(k)
		rp := refusedProcess{k, id.StartTime}
		if idErr == nil && t.refused[rp] {
			continue
		}
		m, err := NewSampler(s.memberOptions(k))
		if err != nil {
			if !errors.Is(err, procfs.ErrProcessGone) {
				t.failed[err.Error()]++
				if idErr == nil && len(t.refused) < procfs.MaxTreeProcesses {
					t.refused[rp] = true
				}
			}
			continue
		}
		m.member = true
		m.mem.SetPeers(t.hasThread)
		t.members[k] = &treeMember{s: m, index: t.nextIndex, role: s.fs.Role(k)}
		t.nextIndex = (t.nextIndex % (1<<(64-privateTagShift) - 1)) + 1
		t.seen++
	}
	for pid, m := range t.members {
		if !alive[pid] {
			s.dropMember(pid, m)
		}
	}
}

func (s *Sampler) dropMember(pid int, m *treeMember) {
	m.s.Close()
	delete(s.tree.members, pid)
	s.tree.gone++
}

// takeTree samples the tree's members and merges their samples into the
// target's (snap, whose threads are the target's own).
func (s *Sampler) takeTree(ctx context.Context, snap *snapshot.Snapshot) {
	t := s.tree
	s.findMembers()
	if !t.on {
		return
	}
	root := s.opts.PID
	for i := range snap.Threads {
		snap.Threads[i].PID = root
	}
	if r := s.fs.Role(root); r != "" {
		nameMain(snap.Threads, root, r)
	}
	t.keyWords(s.sym, 0, snap.Threads, snap.Futexes, snap.FastReads, snap.FutexTrace)
	pids := make([]int, 0, len(t.members))
	for pid := range t.members {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	own := make(map[int]bool, len(pids))
	for _, pid := range pids {
		if ctx.Err() != nil {
			break
		}
		m := t.members[pid]
		m.s.threads.Final = s.threads.Final
		ms, err := m.s.Take(ctx)
		if err == nil {
			if _, changed := m.s.changedProgram(); changed {
				err = procfs.ErrProcessGone
			}
		}
		if err != nil {
			if !errors.Is(err, procfs.ErrProcessGone) {
				t.failed[err.Error()]++
			}
			s.dropMember(pid, m)
			continue
		}
		own[pid] = true
		t.mergeMember(snap, ms, pid, m)
	}
	snap.Futexes = joinSameWords(snap.Futexes)
	if snap.FastReads != nil {
		snap.FastReads.Futexes = joinSameFastWords(snap.FastReads.Futexes)
	}
	s.host.Own = own
	clear(t.tids)
	if t.tids == nil {
		t.tids = make(map[int]bool, len(snap.Threads))
	}
	for i := range snap.Threads {
		t.tids[snap.Threads[i].TID] = true
	}
	if !s.fdDenied {
		all := append([]int{root}, pids...)
		c, err := s.fs.TreeConnections(all, s.opts.Port)
		switch {
		case err == nil:
			snap.Connections = c
		case errors.Is(err, procfs.ErrPermission):
			s.fdDenied = true
		}
	}
	s.lastN = len(snap.Threads)
}

// nameMain names a process's main thread by its role.
func nameMain(threads []snapshot.OSThread, pid int, role string) {
	for i := range threads {
		if threads[i].TID == pid {
			threads[i].Name = role
			return
		}
	}
}

// mergeMember adds a member's sample to the tree's, its futex words keyed
// as the tree keys them.
func (t *treeState) mergeMember(snap, ms *snapshot.Snapshot, pid int, m *treeMember) {
	t.keyWords(m.s.sym, m.index<<privateTagShift, ms.Threads, ms.Futexes, ms.FastReads, ms.FutexTrace)
	first := len(snap.Threads)
	snap.Threads = append(snap.Threads, ms.Threads...)
	threads := snap.Threads[first:]
	for i := range threads {
		threads[i].PID = pid
	}
	if m.role != "" {
		nameMain(threads, pid, m.role)
	}
	snap.Futexes = append(snap.Futexes, ms.Futexes...)
	if ft := ms.FutexTrace; ft != nil {
		if snap.FutexTrace == nil {
			snap.FutexTrace = &snapshot.FutexTrace{Elapsed: ft.Elapsed, Exact: true, TracedShare: 1}
		}
		to := snap.FutexTrace
		to.Elapsed = max(to.Elapsed, ft.Elapsed)
		to.Calls += ft.Calls
		to.Exact = to.Exact && ft.Exact
		to.Traced += ft.Traced
		to.TracedShare = min(to.TracedShare, ft.TracedShare)
		to.Lost += ft.Lost
		to.Cost += ft.Cost
		to.Futexes = append(to.Futexes, ft.Futexes...)
	}
	if fr := ms.FastReads; fr != nil {
		if snap.FastReads == nil {
			snap.FastReads = &snapshot.FastReads{Rounds: fr.Rounds, Spacing: fr.Spacing}
		}
		to := snap.FastReads
		to.Rounds = max(to.Rounds, fr.Rounds)
		to.Took += fr.Took
		to.Threads = append(to.Threads, fr.Threads...)
		to.BlocksPerSecond = append(to.BlocksPerSecond, fr.BlocksPerSecond...)
		to.Futexes = append(to.Futexes, fr.Futexes...)
	}
	snap.Errors = appendNew(snap.Errors, ms.Errors...)
	snap.Missing = appendNew(snap.Missing, ms.Missing...)
	snap.Cost += ms.Cost
}

func appendNew(to []string, more ...string) []string {
next:
	for _, m := range more {
		for _, t := range to {
			if t == m {
				continue next
			}
		}
		to = append(to, m)
	}
	return to
}

// treeWarnings say what the run's end reports of the tree.
func (s *Sampler) treeWarnings() []string {
	t := s.tree
	if t == nil || !t.on {
		return nil
	}
	var out []string
	if t.truncated > 0 {
		out = append(out, fmt.Sprintf("the target's tree had more than %d processes: the rest were not sampled", procfs.MaxTreeProcesses))
	}
	msgs := make([]string, 0, len(t.failed))
	for m := range t.failed {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%d process(es) of the tree could not be sampled: %s", t.failed[m], m))
	}
	return out
}

// closeTree closes the members' samplers.
func (s *Sampler) closeTree() error {
	if s.tree == nil {
		return nil
	}
	var errs []error
	for pid, m := range s.tree.members {
		errs = append(errs, m.s.Close())
		delete(s.tree.members, pid)
	}
	return errors.Join(errs...)
}

// futexPrivateFlag is FUTEX_PRIVATE_FLAG (linux/futex.h): the word is the
// process's own, not shared memory's.
const futexPrivateFlag = 128
