package procfs

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// errNotMapped refuses a file that is not the one the target mapped.
var errNotMapped = errors.New("not the file the process mapped")

// openMapped opens the binary behind mapping m of process pid, as the
// target sees it, for reading its symbols. The path comes from the
// target's maps and names a place its owner may control (a library in
// its own directory, since replaced by a link), and ctprof often runs as
// root: the path is looked up under the target's root with openat2
// (RESOLVE_IN_ROOT: a link resolves inside that root, never on the host),
// as an O_PATH descriptor first, and the file is opened for reading only
// once it is a regular file with the device and inode the mapping names.
// A deleted file is reached through map_files, the kernel's own link to
// the mapped file (root only), checked the same way.
func openMapped(fs FS, pid int, m Mapping) (*os.File, error) {
	var fd int
	var err error
	if m.Deleted() {
		fd, err = unix.Open(fs.pidPath(pid, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)), unix.O_PATH|unix.O_CLOEXEC, 0)
	} else {
		var root int
		root, err = unix.Open(fs.pidPath(pid, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		fd, err = Openat2(root, strings.TrimPrefix(m.Path, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		unix.Close(root)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Ino != m.Inode ||
		unix.Major(st.Dev) != m.DevMajor || unix.Minor(st.Dev) != m.DevMinor {
		return nil, fmt.Errorf("%s: %w", m.Path, errNotMapped)
	}
	// Reopening the O_PATH descriptor opens the inode just checked.
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(rfd), m.Path), nil
}

// loadSymbols reads the data symbols of f (its .symtab, else what
// .dynsym exports), sorted by address, sized symbols first among equals
// so that lookup finds the object rather than a label at the same
// address. Only futex words are looked up, and they live in data: code
// symbols are left out (59,000 of the 71,000 in Temurin 25's libjvm.so),
// and the table is read straight from the section bytes rather than
// through elf.File.Symbols, which makes a string of every name. It stops
// at maxSymbols.
func loadSymbols(f *elf.File) []elfSymbol {
	var out []elfSymbol
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		sec := f.SectionByType(typ)
		if sec == nil || int(sec.Link) >= len(f.Sections) {
			continue
		}
		syms, err := sec.Data()
		if err != nil {
			continue
		}
		names, err := f.Sections[sec.Link].Data()
		if err != nil {
			continue
		}
		out = appendDataSymbols(out, f.Class, f.ByteOrder, syms, names)
	}
	slices.SortFunc(out, func(a, b elfSymbol) int {
		switch {
		case a.value != b.value:
			if a.value < b.value {
				return -1
			}
			return 1
		case a.size != b.size:
			if a.size < b.size {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// appendDataSymbols appends the data symbols (STT_OBJECT, STT_NOTYPE) of
// a symbol table's bytes, named from its string table.
func appendDataSymbols(out []elfSymbol, class elf.Class, bo binary.ByteOrder, syms, names []byte) []elfSymbol {
	size := elf.Sym64Size
	if class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	// The common case without the ByteOrder interface's calls per field.
	little := class == elf.ELFCLASS64 && bo == binary.LittleEndian
	le := binary.LittleEndian
	for off := size; off+size <= len(syms) && len(out) < maxSymbols; off += size { // entry 0 is the null symbol
		e := syms[off : off+size]
		var name uint32
		var info uint8
		var shndx uint16
		var value, sz uint64
		if little {
			typ := elf.ST_TYPE(e[4])
			if typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE {
				continue // most symbols are code: decided on one byte
			}
			name, info, shndx = le.Uint32(e[0:]), e[4], le.Uint16(e[6:])
			value, sz = le.Uint64(e[8:]), le.Uint64(e[16:])
		} else if class == elf.ELFCLASS32 {
			name, value, sz = bo.Uint32(e[0:]), uint64(bo.Uint32(e[4:])), uint64(bo.Uint32(e[8:]))
			info, shndx = e[12], bo.Uint16(e[14:])
		} else {
			name, info, shndx = bo.Uint32(e[0:]), e[4], bo.Uint16(e[6:])
			value, sz = bo.Uint64(e[8:]), bo.Uint64(e[16:])
		}
		typ := elf.ST_TYPE(info)
		if value == 0 || elf.SectionIndex(shndx) == elf.SHN_UNDEF || typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE {
			continue
		}
		n := symbolName(names, name)
		if n == "" {
			continue
		}
		out = append(out, elfSymbol{value: value, size: sz, name: n})
	}
	return out
}

// symbolName is the NUL-terminated name at off in a string table, "" when
// off is outside it.
func symbolName(names []byte, off uint32) string {
	if int(off) >= len(names) {
		return ""
	}
	b := names[off:]
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
