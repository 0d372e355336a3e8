// Package symbolize turns a process's addresses into names and a blocked
// thread's registers into frames: ELF symbol tables (dynamic and full),
// separate debug files (by build-id, by .gnu_debuglink, in MiniDebugInfo,
// over debuginfod), C++ and Rust demangling, DWARF line tables, and
// .eh_frame unwinding with a stack scan where call-frame information ends.
//
// It stands apart from internal/procfs because it knows ELF and DWARF, not
// /proc: what it reads of a live process comes through Process (procfs
// provides one), so the same code names the frames of a sweep, of the
// kernel's exact futex waits and of a perf sample's stack copy.
package symbolize

import (
	"errors"
	"os"
)

// Process is what the symbolizer and the unwinder read of a live process.
// Everything it gives comes from the target and is hostile input: a path
// is opened only inside the target's root, never by following a link its
// owner could point.
type Process interface {
	// PID is the process's id.
	PID() int
	// Maps reads the process's mappings, in address order.
	Maps() ([]Mapping, error)
	// QueryMaps opens per-address queries of the mappings (the kernel's
	// PROCMAP_QUERY), or returns ErrNoMapsQuery where the kernel has none.
	QueryMaps() (MapsQuery, error)
	// OpenMapped opens the file behind a mapping for reading, once it is
	// the very file (device and inode) the process mapped.
	OpenMapped(m Mapping) (*os.File, error)
	// OpenInRoot opens the regular file at path, relative to the
	// process's root directory; nil when there is none.
	OpenInRoot(path string) *os.File
}

// MapsQuery asks a process's open maps for one mapping at a time.
type MapsQuery interface {
	// Find gives the mapping that covers addr or, with next, the first one
	// at or after it; fileBacked skips anonymous mappings. ok is false
	// when there is none.
	Find(addr uint64, next, fileBacked bool) (m Mapping, ok bool, err error)
	Close() error
}

// ErrNoMapsQuery says the kernel cannot answer per-address queries of a
// process's maps (before Linux 6.11): the maps text serves instead.
var ErrNoMapsQuery = errors.New("the kernel has no PROCMAP_QUERY")
