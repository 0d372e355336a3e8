package source

import (
	"context"
	"fmt"
	"io"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Dumps is a file (or stream) of thread dumps: each dump is a Snapshot
// with the dump's own time, read one at a time so no file's dumps are all
// held at once.
type Dumps struct {
	r      *threaddump.Reader
	closer io.Closer
	// source is the input as the user named it ("-" for stdin), kept on
	// each Snapshot; name is how messages call it.
	source, name string
	n            int
}

func newDumpReader(r io.Reader) *threaddump.Reader { return threaddump.NewReader(r) }

// Name names the input in messages.
func (d *Dumps) Name() string { return d.name }

// Next returns the next dump. An error after some dumps says how many
// stand.
func (d *Dumps) Next(context.Context) (*snapshot.Snapshot, error) {
	dump, err := d.r.Next()
	for err == threaddump.ErrInputIdle {
		// Only a followed input says so; it ends the wait with io.EOF
		// once its context ends.
		dump, err = d.r.Next()
	}
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case err != nil && d.n > 0:
		return nil, fmt.Errorf("%s: %w (after %d dumps)", d.name, err, d.n)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", d.name, err)
	}
	d.n++
	return &snapshot.Snapshot{Time: dump.Time, Source: d.source, Dump: dump}, nil
}

// Warnings are the lines the reader skipped, a cut gzip stream and the
// like, each naming the input.
func (d *Dumps) Warnings() []string { return prefixed(d.name, d.r.Warnings()) }

// Close closes the file.
func (d *Dumps) Close() error { return d.closer.Close() }

func prefixed(name string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = name + ": " + w
	}
	return out
}
