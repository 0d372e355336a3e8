package source

import (
	"context"

	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Recording is a ctprof recording (attach --record) replayed: every
// Snapshot of the live run, as it was taken.
type Recording struct {
	r    *record.Reader
	name string
}

// Header describes the recorded run.
func (r *Recording) Header() record.Header { return r.r.Header() }

// Name names the recording in messages.
func (r *Recording) Name() string { return r.name }

// Next returns the next recorded snapshot.
func (r *Recording) Next(context.Context) (*snapshot.Snapshot, error) { return r.r.Next() }

// Warnings say what was damaged (a cut-off end, a bad frame), naming the
// file: the summary then says it covers fewer samples.
func (r *Recording) Warnings() []string { return prefixed(r.name, r.r.Warnings()) }

// Close closes the file.
func (r *Recording) Close() error { return r.r.Close() }
