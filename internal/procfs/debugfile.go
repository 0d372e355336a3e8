package procfs

import (
	"debug/elf"
	"encoding/hex"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// debugDir is where Debian's -dbgsym packages (and other distributions'
// debuginfo) keep the symbol tables stripped from a binary, by its GNU
// build-id: .build-id/ab/cdef….debug.
const debugDir = "usr/lib/debug/.build-id/"

// ntGNUBuildID is the note type of a GNU build-id (elf.h NT_GNU_BUILD_ID).
const ntGNUBuildID = 3

// maxBuildIDLen bounds the build-id read from a binary's note (20 bytes
// for the usual SHA-1 one).
const maxBuildIDLen = 64

// buildID is the GNU build-id of f, hex encoded; "" when it has none.
func buildID(f *elf.File) string {
	sec := f.Section(".note.gnu.build-id")
	if sec == nil || sec.Type != elf.SHT_NOTE || sec.Size > 4096 {
		return ""
	}
	b, err := sec.Data()
	if err != nil {
		return ""
	}
	// A note: namesz, descsz, type, the name ("GNU\0", padded to 4), then
	// the id.
	for len(b) >= 12 {
		bo := f.ByteOrder
		namesz, descsz, typ := bo.Uint32(b[0:]), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		nameEnd := uint64(namesz+3) &^ 3
		descEnd := nameEnd + uint64(descsz+3)&^3
		if nameEnd > uint64(len(b)) || descEnd > uint64(len(b)) {
			return ""
		}
		if typ == ntGNUBuildID && namesz == 4 && string(b[:3]) == "GNU" && descsz > 1 && descsz <= maxBuildIDLen {
			return hex.EncodeToString(b[nameEnd : nameEnd+uint64(descsz)])
		}
		b = b[descEnd:]
	}
	return ""
}

// hasSymtab reports whether f has a full symbol table (.symtab), not just
// the exported names of .dynsym.
func hasSymtab(f *elf.File) bool {
	return f.SectionByType(elf.SHT_SYMTAB) != nil
}

// openDebugFile opens the separate debug file of a binary with build-id
// id, as the target sees the file system (its root): the target's
// packages are the ones whose symbols fit its binaries. Like openMapped,
// it resolves the path inside that root and reads only a regular file.
func openDebugFile(fs FS, pid int, id string) (*os.File, *elf.File) {
	if len(id) < 4 {
		return nil, nil
	}
	return debugFileOf(openInRoot(fs, pid, debugDir+id[:2]+"/"+id[2:]+".debug"), id)
}

// debugFileOf parses file as the debug file of build-id id, and closes it
// when it is not one: a debug file of another build would name the wrong
// symbols. A nil file gives nil.
func debugFileOf(file *os.File, id string) (*os.File, *elf.File) {
	if file == nil {
		return nil, nil
	}
	f, err := elf.NewFile(file)
	if err != nil || buildID(f) != id {
		file.Close()
		return nil, nil
	}
	return file, f
}

// openInRoot opens the regular file at path (relative to the target's
// root) for reading, resolved inside that root without following magic
// links; nil when there is none.
func openInRoot(fs FS, pid int, path string) *os.File {
	root, err := unix.Open(fs.pidPath(pid, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	fd, err := Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(rfd), path)
}
