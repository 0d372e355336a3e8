package sample

import (
	"fmt"
	"os"
	"strconv"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// settleNames checks a thread dump the sampler took against the target.
// Thread names can carry forged thread entries; when the text alone cannot
// tell them from real ones (the parser marked threads suspect), the dump is
// read again against the process itself: a thread's nid must be one of its
// tasks, and only once, and the JVM's live thread count bounds the Java
// threads. Ordinary dumps cost no extra /proc read. What happened is noted
// in snap.Errors.
func (s *Sampler) settleNames(d []*threaddump.Dump, text []byte, snap *snapshot.Snapshot) []*threaddump.Dump {
	if len(d) == 0 || !d[len(d)-1].HasSuspects() {
		return d
	}
	tasks, err := s.tasks()
	if err != nil {
		snap.Errors = append(snap.Errors, "thread names may hold forged thread entries, and the target's threads could not be listed to tell: "+err.Error())
		return d
	}
	o := threaddump.ParseOptions{ThreadExists: func(nid int64) bool { return tasks[nid] }}
	if snap.JVM != nil {
		o.JavaThreads = int(snap.JVM.LiveThreads)
	}
	d2, err := threaddump.ParseHotSpot(text, o)
	if err != nil || len(d2) == 0 {
		return d // keep the first reading, suspects marked
	}
	snap.Errors = append(snap.Errors, "thread names hold text that reads as thread entries: only entries naming a thread of the target were kept")
	return d2
}

// tasks lists the target's thread ids (/proc/<pid>/task).
func (s *Sampler) tasks() (map[int64]bool, error) {
	ents, err := os.ReadDir(s.fs.Path(strconv.Itoa(s.opts.PID), "task"))
	if err != nil {
		return nil, fmt.Errorf("list threads of pid %d: %w", s.opts.PID, err)
	}
	out := make(map[int64]bool, len(ents))
	for _, e := range ents {
		if tid, err := strconv.ParseInt(e.Name(), 10, 64); err == nil {
			out[tid] = true
		}
	}
	return out, nil
}
