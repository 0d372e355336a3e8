package symbolize

import "strings"

// Mapping is one span of a process's address space, as a line of
// /proc/<pid>/maps gives it.
type Mapping struct {
	Start, End uint64
	Perms      string
	Offset     uint64
	// DevMajor and DevMinor name the device of a mapped file, Inode its
	// inode: together they tell whether a file opened later is the one
	// mapped (see Process.OpenMapped).
	DevMajor, DevMinor uint32
	Inode              uint64
	// Path is the mapped file as the target sees it, a pseudo name such as
	// "[heap]" or "[stack]", or "" for anonymous memory.
	Path string
}

// Module names the binary the mapping maps as the symbolizer's frames
// name it (StackFrame.Module); "" for anonymous memory.
func (m Mapping) Module() string {
	if m.Path == "" {
		return ""
	}
	return moduleName(m.Path)
}

// Deleted reports a file that was deleted after it was mapped.
func (m Mapping) Deleted() bool { return strings.HasSuffix(m.Path, " (deleted)") }

// Shared reports a shared mapping (MAP_SHARED): memory other processes
// may map too, never a binary's image.
func (m Mapping) Shared() bool { return len(m.Perms) == 4 && m.Perms[3] == 's' }

// FileBacked reports whether the mapping maps a file.
func (m Mapping) FileBacked() bool { return m.Inode != 0 && strings.HasPrefix(m.Path, "/") }
