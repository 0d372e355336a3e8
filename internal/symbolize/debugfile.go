package symbolize

import (
	"debug/elf"
	"encoding/hex"
	"os"
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

// BuildID is the GNU build-id of f, hex encoded; "" when it has none.
func BuildID(f *elf.File) string {
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
// packages are the ones whose symbols fit its binaries. Like Process.OpenMapped,
// it resolves the path inside that root and reads only a regular file.
func openDebugFile(p Process, id string) (*os.File, *elf.File) {
	if len(id) < 4 {
		return nil, nil
	}
	return debugFileOf(p.OpenInRoot(debugDir+id[:2]+"/"+id[2:]+".debug"), id)
}

// debugFileOf parses file as the debug file of build-id id, and closes it
// when it is not one: a debug file of another build would name the wrong
// symbols. A nil file gives nil.
func debugFileOf(file *os.File, id string) (*os.File, *elf.File) {
	if file == nil {
		return nil, nil
	}
	f, err := elf.NewFile(file)
	if err != nil || BuildID(f) != id {
		file.Close()
		return nil, nil
	}
	return file, f
}
