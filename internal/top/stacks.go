package top

import (
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// maxStackFrames bounds the frames kept per thread: the detail view shows
// a screenful, and a 10,000-thread JVM must not cost a copy of every stack.
const maxStackFrames = 40

// Stacks are the stacks of the latest thread dump, by OS thread id and by
// name, for the detail views. They are the dump as it is, not statistics.
type Stacks struct {
	byTID  map[int64][]string
	byName map[string][]string
}

// StacksOf indexes a dump's stacks; nil for a tick without a dump.
func StacksOf(d *threaddump.Dump) *Stacks {
	if d == nil {
		return nil
	}
	s := &Stacks{byTID: make(map[int64][]string, len(d.Threads)), byName: make(map[string][]string, len(d.Threads))}
	for i := range d.Threads {
		t := &d.Threads[i]
		n := min(len(t.Frames), maxStackFrames)
		frames := make([]string, n)
		for j := range n {
			frames[j] = t.Frames[j].String()
		}
		if t.OSThreadID != 0 {
			s.byTID[t.OSThreadID] = frames
		}
		// Names need not be unique: the first thread of a name stands for it.
		if _, dup := s.byName[t.Name]; !dup {
			s.byName[t.Name] = frames
		}
	}
	return s
}

// thread returns a thread's frames, by tid when known, else by name.
func (s *Stacks) thread(tid int, name string) ([]string, bool) {
	if s == nil {
		return nil, false
	}
	if tid != 0 {
		if f, ok := s.byTID[int64(tid)]; ok {
			return f, true
		}
	}
	f, ok := s.byName[name]
	return f, ok
}
