package sample

import "github.com/ctprof/ctprof/internal/snapshot"

// perWait keeps what was read of each blocked thread's wait (the epoll
// set it waits on, the file it waits to lock) for the samples after: a
// thread that has not moved since (the same stackKey, the same argument:
// the set's or the file's descriptor) is in the same wait, and what its
// wait was is read once. Each sample reads the previous sample's entries
// and writes its own; turn makes this sample's the previous.
type perWait[T any] struct {
	prev, next map[int]waitEntry[T]
}

type waitEntry[T any] struct {
	key stackKey
	arg uint64
	v   T
}

// readWaitedFor reads, of the native threads blocked on something other
// than a futex, what they wait for: the epoll set (eventsets.go), the
// file to lock (lockedfiles.go).
func (s *Sampler) readWaitedFor(threads []snapshot.OSThread) {
	s.readEventSets(threads)
	s.readLockedFiles(threads)
}

// waitKey is a blocked thread's place: it is in the same wait while this
// stays the same.
func waitKey(t *snapshot.OSThread) stackKey {
	return stackKey{start: t.StartTime, sp: t.SyscallSP, pc: t.SyscallPC, voluntary: t.Voluntary}
}

// get returns what the previous sample kept of t's wait on arg.
func (p *perWait[T]) get(t *snapshot.OSThread, arg uint64) (T, bool) {
	e, ok := p.prev[t.TID]
	if !ok || e.key != waitKey(t) || e.arg != arg {
		var zero T
		return zero, false
	}
	return e.v, true
}

// keep records v as t's wait on arg, for the next sample.
func (p *perWait[T]) keep(t *snapshot.OSThread, arg uint64, v T) {
	if p.next == nil {
		p.next = map[int]waitEntry[T]{}
	}
	p.next[t.TID] = waitEntry[T]{key: waitKey(t), arg: arg, v: v}
}

// turn ends a sample: what it kept is what the next one reads.
func (p *perWait[T]) turn() { p.prev, p.next = p.next, nil }
