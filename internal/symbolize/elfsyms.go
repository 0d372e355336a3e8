package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"slices"
)

// symbolTable is the data symbols of one binary, sorted by address, whose
// names stay in the file until a lookup returns them: a big library's
// string table (3.3 MB in Temurin 25's libjvm.so) is read a name at a
// time instead of whole, while the one-shot waits.
type symbolTable struct {
	// file is the binary, open while the Symbolizer is (Close closes it);
	// nil once closed, or for a table whose names were read whole.
	file *os.File
	// strtabs are the string tables' places in the file, by
	// dataSymbol.strtab: the .symtab's, then the .dynsym's.
	strtabs [2]fileRange
	// loaded holds a string table read whole, for a module loaded with
	// too many files already open (see maxOpenModules).
	loaded [2][]byte
	syms   []dataSymbol
	names  map[int]string // by index in syms, read on demand
}

// dataSymbol is a data symbol with its name's offset in its string table.
type dataSymbol struct {
	value, size uint64
	name        uint32
	strtab      uint8
}

type fileRange struct{ off, size uint64 }

const (
	// symbolChunk is how much of a symbol table one read takes (64 KB), a
	// multiple of both entry sizes: a buffer of this size is reused
	// across the table, not one the size the file claims.
	symbolChunk = 2730 * elf.Sym64Size
	// maxNameLen bounds one name: a string table need not have a NUL.
	maxNameLen = 4096
	// maxCachedNames bounds the names kept; a hostile table can have a
	// million symbols of maxNameLen each.
	maxCachedNames = 4096
	// maxSymbolTableBytes bounds how much of a symbol table is read (70
	// times libjvm.so's): a sparse file can claim a terabyte of zeros,
	// no symbol among them to reach maxSymbols.
	maxSymbolTableBytes = 128 << 20
	// maxStringTableBytes bounds a string table read whole.
	maxStringTableBytes = 64 << 20
	// maxEmptySkipped bounds how many nameless symbols one lookup steps
	// over (a real table has none among its candidates).
	maxEmptySkipped = 64
)

// loadSymbols reads the data symbols of file, parsed as f (its .symtab
// and what .dynsym exports), sorted by address, sized symbols first among
// equals so that lookup finds the object rather than a label at the same
// address (see sortSymbols). Only futex words are looked up, and they
// live in data: code symbols are left out (59,000 of the 71,000 in
// Temurin 25's libjvm.so). The tables are read through a small reused
// buffer, and the names are left in the file, read by symbolTable.name
// from file, which stays open (with readNames, the string tables are read
// whole now and file is not needed after). A symbol with no name is never
// returned by lookup: those whose name is at offset 0 or past their
// string table are left out here; any other is skipped when its name is
// read. It stops at maxSymbols.
func loadSymbols(file *os.File, f *elf.File, readNames bool) *symbolTable {
	t := &symbolTable{}
	st, err := file.Stat()
	if err != nil {
		return t
	}
	fileSize := uint64(st.Size())
	var buf []byte
	for i, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		sec := f.SectionByType(typ)
		if sec == nil || int(sec.Link) >= len(f.Sections) {
			continue
		}
		strSec := f.Sections[sec.Link]
		syms, ok := sectionRange(sec, fileSize)
		if !ok || strSec.Type == elf.SHT_NOBITS {
			continue
		}
		strtab, ok := sectionRange(strSec, fileSize)
		if !ok {
			continue
		}
		t.strtabs[i] = strtab
		if readNames {
			if strtab.size > maxStringTableBytes {
				continue
			}
			t.loaded[i] = make([]byte, strtab.size)
			if _, err := file.ReadAt(t.loaded[i], int64(strtab.off)); err != nil {
				t.loaded[i] = nil
				continue
			}
		}
		// Offset 0 is the empty name in every real string table.
		var first [1]byte
		zeroEmpty := strtab.size == 0
		if !zeroEmpty {
			_, err := file.ReadAt(first[:], int64(strtab.off))
			zeroEmpty = err != nil || first[0] == 0
		}
		syms.size = min(syms.size, maxSymbolTableBytes)
		if uint64(len(buf)) < min(symbolChunk, syms.size) {
			buf = make([]byte, min(symbolChunk, syms.size))
		}
		t.syms = readDataSymbols(t.syms, file, syms, buf, f.Class, f.ByteOrder, uint8(i), strtab.size, zeroEmpty)
	}
	t.syms = sortSymbols(t.syms)
	if readNames {
		t.file = nil
	} else {
		t.file = file
	}
	return t
}

// sortSymbols sorts syms by value, then size, keeping the tables' order
// among equals (aliases: the last in the table is the one lookup finds).
// It is a radix sort, a byte at a time over only the bytes in which the
// symbols differ: comparison sorting the 12,000 data symbols of Temurin
// 25's libjvm.so took 1 ms, longer than reading them. (The comparison
// sort it replaces left the order among aliases to chance.)
func sortSymbols(syms []dataSymbol) []dataSymbol {
	if len(syms) < 2 {
		return syms
	}
	var valueBits, sizeBits uint64
	for _, s := range syms {
		valueBits |= s.value ^ syms[0].value
		sizeBits |= s.size ^ syms[0].size
	}
	src, dst := syms, make([]dataSymbol, len(syms))
	// Least significant first, the size before the value: each pass is
	// stable, so the last pass's key (the value's top byte) orders first.
	for _, bySize := range []bool{true, false} {
		bits := valueBits
		if bySize {
			bits = sizeBits
		}
		for shift := 0; shift < 64; shift += 8 {
			if bits>>shift&0xff == 0 {
				continue
			}
			var start [256]int
			for _, s := range src {
				start[byte(symbolKey(s, bySize)>>shift)]++
			}
			at := 0
			for i, n := range start {
				start[i] = at
				at += n
			}
			for _, s := range src {
				b := byte(symbolKey(s, bySize) >> shift)
				dst[start[b]] = s
				start[b]++
			}
			src, dst = dst, src
		}
	}
	return src
}

func symbolKey(s dataSymbol, bySize bool) uint64 {
	if bySize {
		return s.size
	}
	return s.value
}

// sectionRange is where sec's bytes are in a file of fileSize bytes;
// false for a section with none there to read (compressed, NOBITS, or
// past the end of the file).
func sectionRange(sec *elf.Section, fileSize uint64) (fileRange, bool) {
	if sec.Type == elf.SHT_NOBITS || sec.Flags&elf.SHF_COMPRESSED != 0 ||
		sec.Offset > fileSize || sec.FileSize > fileSize-sec.Offset {
		return fileRange{}, false
	}
	return fileRange{sec.Offset, sec.FileSize}, true
}

// readDataSymbols appends the data symbols of the symbol table at syms in
// r, read a buffer at a time; a read error ends the table there.
func readDataSymbols(out []dataSymbol, r io.ReaderAt, syms fileRange, buf []byte, class elf.Class, bo binary.ByteOrder, strtab uint8, strSize uint64, zeroEmpty bool) []dataSymbol {
	size := uint64(elf.Sym64Size)
	if class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	buf = buf[:uint64(len(buf))/size*size]
	if len(buf) == 0 {
		return out
	}
	// Room for the data symbols up front, as the share of a big
	// library's table they are (a sixth in libjvm.so), rather than grown
	// by copies of a slice much larger than the buffer.
	out = slices.Grow(out, int(min(syms.size/size/4, maxSymbols)))
	for off := size; off+size <= syms.size && len(out) < maxSymbols; { // entry 0 is the null symbol
		n := min(uint64(len(buf)), (syms.size-off)/size*size)
		if _, err := r.ReadAt(buf[:n], int64(syms.off+off)); err != nil {
			break
		}
		out = appendDataSymbols(out, class, bo, buf[:n], strtab, strSize, zeroEmpty)
		off += n
	}
	return out
}

// appendDataSymbols appends the data symbols (STT_OBJECT, STT_NOTYPE)
// among whole symbol table entries, with their name offsets: those whose
// name is empty for certain (past the string table of strSize bytes, or
// at offset 0 when zeroEmpty) are left out.
func appendDataSymbols(out []dataSymbol, class elf.Class, bo binary.ByteOrder, entries []byte, strtab uint8, strSize uint64, zeroEmpty bool) []dataSymbol {
	size := elf.Sym64Size
	if class == elf.ELFCLASS32 {
		size = elf.Sym32Size
	}
	// The common case without the ByteOrder interface's calls per field.
	little := class == elf.ELFCLASS64 && bo == binary.LittleEndian
	le := binary.LittleEndian
	for off := 0; off+size <= len(entries) && len(out) < maxSymbols; off += size {
		e := entries[off : off+size]
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
		if uint64(name) >= strSize || name == 0 && zeroEmpty {
			continue
		}
		out = append(out, dataSymbol{value: value, size: sz, name: name, strtab: strtab})
	}
	return out
}

// name is the name of t.syms[i], read from the file the first time; ""
// when it is empty or cannot be read.
func (t *symbolTable) name(i int) string {
	if n, ok := t.names[i]; ok {
		return n
	}
	s := t.syms[i]
	var n string
	if b := t.loaded[s.strtab]; b != nil {
		n = symbolName(b, s.name)
	} else {
		n = t.readName(t.strtabs[s.strtab], uint64(s.name))
	}
	if t.names == nil || len(t.names) >= maxCachedNames {
		t.names = map[int]string{}
	}
	t.names[i] = n
	return n
}

// readName reads the NUL-terminated name at off in the string table at
// strtab, a short read first and longer ones while no NUL shows, up to
// maxNameLen bytes.
func (t *symbolTable) readName(strtab fileRange, off uint64) string {
	if t.file == nil || off >= strtab.size {
		return ""
	}
	limit := min(strtab.size-off, maxNameLen)
	var buf []byte
	for n := min(limit, 128); ; n = min(limit, n*4) {
		have := len(buf)
		buf = slices.Grow(buf, int(n)-have)[:n]
		if _, err := t.file.ReadAt(buf[have:], int64(strtab.off+off)+int64(have)); err != nil {
			return ""
		}
		if i := bytes.IndexByte(buf[have:], 0); i >= 0 {
			return string(buf[:have+i])
		}
		if n == limit {
			return string(buf)
		}
	}
}

// close closes the file the names are read from.
func (t *symbolTable) close() error {
	if t == nil || t.file == nil {
		return nil
	}
	err := t.file.Close()
	t.file = nil
	return err
}

// symbolName is the NUL-terminated name at off in a string table read
// whole, "" when off is outside it, at most maxNameLen bytes.
func symbolName(names []byte, off uint32) string {
	if int64(off) >= int64(len(names)) {
		return ""
	}
	b := names[off:]
	b = b[:min(len(b), maxNameLen)]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
