package source

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// jfrSource is a JFR recording as a Source: its waits, GC pauses and
// thread dumps in bounded batches.
type jfrSource struct {
	r      *jfrsnap.Reader
	closer io.Closer
	// source is the input as the user named it, kept on each Snapshot;
	// name is how messages call it.
	source string
	name   string
	n      int
	warn   []string
}

func newJFRSource(r io.Reader, closer io.Closer, source, name string) *jfrSource {
	return &jfrSource{r: jfrsnap.NewReader(r, source, jfrsnap.Options{}), closer: closer, source: source, name: name}
}

func (j *jfrSource) Name() string       { return j.name }
func (j *jfrSource) Warnings() []string { return j.warn }
func (j *jfrSource) Close() error       { return j.closer.Close() }

// Next returns the next batch. A recording without the events read is a
// valid answer (no wait passed the recording's threshold), not a failure:
// it yields one empty Snapshot, so the summary covers the file, and a
// warning that says what to enable.
func (j *jfrSource) Next(context.Context) (*snapshot.Snapshot, error) {
	s, err := j.r.Next()
	switch {
	case err == nil:
		j.n++
		return s, nil
	case err == io.EOF && j.n == 0:
		j.n = -1 // the empty snapshot is given once
		j.warn = append(j.warn, j.name+": the recording holds no lock waits, thread dumps or GC pauses ("+
			strings.Join(jfrsnap.EventTypes, ", ")+"); enable them, with a threshold, to see contention")
		return &snapshot.Snapshot{Source: j.source}, nil
	case err == io.EOF:
		return nil, io.EOF
	case j.n > 0:
		return nil, fmt.Errorf("%w (after %d batches of events)", err, j.n)
	}
	return nil, err
}
