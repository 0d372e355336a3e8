package analysis

import (
	"context"
	"errors"
	"io"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// Drain feeds every snapshot of src to the Aggregator until src ends, and
// then src's warnings. It is the one loop of every mode: analyze (dump
// files, .jfr files), report (recordings), attach, top and serve (live
// targets) all drain their Sources through it. each, when not nil, sees
// every snapshot after the Aggregator has it (to record it, show
// progress); it must not keep the snapshot's Threads. Drain returns the
// number of snapshots added and the error that ended src, nil for its
// normal end (io.EOF).
func (a *Aggregator) Drain(ctx context.Context, src snapshot.Source, each func(*snapshot.Snapshot)) (int, error) {
	n := 0
	var err error
	for {
		var s *snapshot.Snapshot
		if s, err = src.Next(ctx); err != nil {
			break
		}
		a.Add(s)
		n++
		if each != nil {
			each(s)
		}
	}
	for _, w := range src.Warnings() {
		a.AddWarning(w)
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
