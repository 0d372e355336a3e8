package analysis

import (
	"time"

	"github.com/ctprof/ctprof/internal/nativewait"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// Native stacks: the user stacks the sampler unwound for threads blocked
// in a system call (procfs.Thread.Stack), innermost frame first.

// nativeSiteFrames is how many of the program's frames a wait site
// names: the function that waits and its caller ("post_entry ←
// worker_loop"), enough to tell one call path from another.
const nativeSiteFrames = 2

// nativeWaitSite is where a blocked thread's own code waits: the first
// frames of the program above the waiting machinery (the native wait
// rule's site, internal/nativewait): "post_entry ← worker_loop". A stack
// with no frame of the program (a binary with the C library linked in, a
// runtime thread) names the frames after the innermost one. "" without a
// stack.
func nativeWaitSite(st []symbolize.StackFrame) string {
	if len(st) == 0 {
		return ""
	}
	if site := nativewait.Site(st); site != "" {
		return site
	}
	i := min(1, len(st)-1)
	return nativewait.JoinFrames(st[i:min(len(st), i+nativeSiteFrames)])
}

// nativeStackNames is a stack's frame names, outermost first (the order of
// a folded stack).
func nativeStackNames(st []symbolize.StackFrame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[len(st)-1-i] = f.Name()
	}
	return out
}

// addNativeStacks counts a native target's unwound stacks in the stack
// table the flame graph, folded, pprof and speedscope outputs read, as a
// dump's stacks are counted: a thread queued on a lock in the lock table
// (lockOf: tid → lock ID) as BLOCKED on that lock, any other blocked
// thread as WAITING. A JVM's stacks come from its thread dumps; the few
// native stacks of its JNI lock waiters show in the lock table only.
func (a *Aggregator) addNativeStacks(s *snapshot.Snapshot, lockOf map[int]string, verdicts []*nativeVerdict, dt time.Duration) {
	if s.Target.Kind == snapshot.KindJVM || s.Dump != nil {
		return
	}
	o := a.os
	for i := range s.Threads {
		t := &s.Threads[i]
		if len(t.Stack) == 0 {
			continue
		}
		fs := a.nativeFoldedStack(t.Stack)
		state, lock := "WAITING", lockOf[t.TID]
		if i < len(verdicts) && verdicts[i] != nil && verdicts[i].resource != "" {
			// Contention by the wait rule: counted at its lock when the
			// lock table has one, else at its resource.
			state = "BLOCKED"
			if lock == "" {
				lock = verdicts[i].resource
			}
		} else if lock != "" {
			state = "BLOCKED"
		}
		label := StackLabel{State: state}
		if i < len(o.cur) {
			// The thread's name as the rest of the run names it: its
			// comm, or the Java name a dump gave it.
			label.Pool, label.Thread = o.cur[i].pool, o.cur[i].name
		}
		countStack(fs, label, lock, dt)
	}
	if len(a.stacks) > a.opts.MaxStacks {
		a.pruneStacks()
	}
}

// nativeFoldedStack returns the stack table's entry of st, creating it;
// the key is built in the reused buffer, as foldedStack's.
func (a *Aggregator) nativeFoldedStack(st []symbolize.StackFrame) *FoldedStack {
	key := a.foldKey[:0]
	for i := len(st) - 1; i >= 0; i-- {
		if i < len(st)-1 {
			key = append(key, ';')
		}
		key = append(key, st[i].Name()...)
	}
	a.foldKey = key
	fs := a.stacks[string(key)]
	if fs == nil {
		fs = &FoldedStack{Frames: nativeStackNames(st), Lines: symbolize.FrameLines(st), ByLabel: map[StackLabel]int{}}
		a.stacks[string(key)] = fs
		return fs
	}
	if fs.Lines != nil {
		for i := range st {
			keepLine(fs.Lines, len(st)-1-i, st[i].File, st[i].Line)
		}
	}
	return fs
}

// frameNames is up to n of a stack's frame names, innermost first.
func frameNames(st []symbolize.StackFrame, n int) []string {
	out := make([]string, 0, min(n, len(st)))
	for _, f := range st[:min(n, len(st))] {
		out = append(out, f.Name())
	}
	return out
}

// lockOfWaiters inverts the lock table's waiters of one sample (lock ID →
// tids) to tid → lock ID.
func lockOfWaiters(waiters map[string][]int) map[int]string {
	out := make(map[int]string, len(waiters))
	for id, tids := range waiters {
		for _, tid := range tids {
			out[tid] = id
		}
	}
	return out
}
