// Package source turns ctprof's inputs into Snapshots: files of thread
// dumps (HotSpot text, JSON, javacore, gzipped or not), JFR recordings and
// ctprof recordings, each a snapshot.Source. Open tells them apart by
// content, so a user never says which is which. The live process is the
// other kind of Source (internal/sample).
package source

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// StdinName is the name a user gives standard input ("-").
const StdinName = "-"

// Open opens the input name (StdinName reads stdin) and returns the Source
// its content calls for: a ctprof recording, a JFR recording (gzipped or
// not), or thread dumps, which the dump reader tells apart itself.
func Open(name string, stdin io.Reader) (snapshot.Source, error) {
	var r io.Reader
	var closer io.Closer = io.NopCloser(nil)
	var size int64
	display := name
	if name == StdinName {
		r, display = stdin, "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open dump: %w", err)
		}
		st, err := f.Stat()
		if err == nil && st.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s is a directory, not a dump file", name)
		}
		if err == nil {
			size = st.Size()
		}
		r, closer = f, f
	}
	br := bufio.NewReader(r)
	switch head, _ := br.Peek(len(record.Magic)); {
	case string(head) == record.Magic:
		rr, err := record.NewReader(readCloser{br, closer}, display, size)
		if err != nil {
			return nil, err
		}
		return &Recording{r: rr, name: display}, nil
	case jfrsnap.IsJFR(head):
		return newJFRSource(br, closer, name, display), nil
	case gzippedJFR(br):
		zr, err := gzip.NewReader(br)
		if err != nil {
			closer.Close()
			return nil, fmt.Errorf("%s: %w", display, err)
		}
		return newJFRSource(zr, closer, name, display), nil
	}
	return &Dumps{r: newDumpReader(br), closer: closer, source: name, name: display}, nil
}

// OpenRecording opens a ctprof recording, and nothing else.
func OpenRecording(path string) (*Recording, error) {
	r, err := record.Open(path)
	if err != nil {
		return nil, err
	}
	return &Recording{r: r, name: path}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// gzippedJFR reports whether br starts a gzip stream whose content is a
// JFR recording (recordings are often shipped as .jfr.gz). It decompresses
// only what the buffer already holds, without consuming br. Compressed
// thread dumps are left to the dump reader, which undoes gzip itself.
func gzippedJFR(br *bufio.Reader) bool {
	head, _ := br.Peek(2)
	if len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b {
		return false
	}
	buf, _ := br.Peek(br.Size())
	zr, err := gzip.NewReader(bytes.NewReader(buf))
	if err != nil {
		return false
	}
	magic := make([]byte, len(jfrsnap.Magic))
	n, _ := io.ReadFull(zr, magic)
	return jfrsnap.IsJFR(magic[:n])
}
