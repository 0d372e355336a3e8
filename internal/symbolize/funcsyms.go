package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"io"
	"sort"
	"strings"
)

// funcTable is the function symbols (STT_FUNC, STT_GNU_IFUNC) of one
// binary for naming stack frames, beside the data symbols symbolTable
// keeps for futexes: by address, one name per address (the best of the
// aliases, see funcRank), the names packed in one string.
type funcTable struct {
	funcs []funcSym
	names string
}

// funcSym is a function's address and size, and its name's start in
// funcTable.names (it ends where the next one's starts).
type funcSym struct {
	value uint64
	size  uint32
	name  uint32
}

// funcCandidate is a function symbol while the table is read.
type funcCandidate struct {
	value, size uint64
	name, len   uint32
	rank        int
}

// loadFuncTable reads the function symbols of the symbol table of the
// given type in file (parsed as f); nil when it has none.
func loadFuncTable(file io.ReaderAt, size int64, f *elf.File, typ elf.SectionType) *funcTable {
	if f.Class != elf.ELFCLASS64 || size <= 0 {
		return nil
	}
	fileSize := uint64(size)
	sec := f.SectionByType(typ)
	if sec == nil || int(sec.Link) >= len(f.Sections) {
		return nil
	}
	syms, ok := sectionRange(sec, fileSize)
	strRange, ok2 := sectionRange(f.Sections[sec.Link], fileSize)
	if !ok || !ok2 || strRange.size > maxStringTableBytes {
		return nil
	}
	strtab := make([]byte, strRange.size)
	if _, err := file.ReadAt(strtab, int64(strRange.off)); err != nil {
		return nil
	}
	syms.size = min(syms.size, maxSymbolTableBytes)
	buf := make([]byte, min(symbolChunk, syms.size))
	var cands []funcCandidate
	for off := uint64(elf.Sym64Size); off+elf.Sym64Size <= syms.size && len(cands) < maxSymbols; {
		n := min(uint64(len(buf)), (syms.size-off)/elf.Sym64Size*elf.Sym64Size)
		if _, err := file.ReadAt(buf[:n], int64(syms.off+off)); err != nil {
			break
		}
		cands = appendFuncs(cands, f.ByteOrder, buf[:n], strtab)
		off += n
	}
	return buildFuncTable(cands, strtab)
}

// appendFuncs appends the named, defined function symbols among entries.
func appendFuncs(out []funcCandidate, bo binary.ByteOrder, entries []byte, strtab []byte) []funcCandidate {
	for off := 0; off+elf.Sym64Size <= len(entries) && len(out) < maxSymbols; off += elf.Sym64Size {
		e := entries[off : off+elf.Sym64Size]
		info := e[4]
		typ := elf.ST_TYPE(info)
		if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC {
			continue
		}
		name, shndx := bo.Uint32(e[0:]), bo.Uint16(e[6:])
		value, size := bo.Uint64(e[8:]), bo.Uint64(e[16:])
		if value == 0 || elf.SectionIndex(shndx) == elf.SHN_UNDEF || name == 0 || uint64(name) >= uint64(len(strtab)) {
			continue
		}
		nm := symbolName(strtab, name)
		// A versioned name ("pthread_mutex_lock@@GLIBC_2.2.5") is the
		// function's name.
		if i := strings.IndexByte(nm, '@'); i >= 0 {
			nm = nm[:i]
		}
		if nm == "" {
			continue
		}
		out = append(out, funcCandidate{value: value, size: size, name: name, len: uint32(len(nm)), rank: funcRank(elf.ST_BIND(info), nm)})
	}
	return out
}

// funcRank orders aliases of one address, lowest first: the name with
// the fewest leading underscores ("nanosleep" rather than "__nanosleep",
// "pthread_mutex_lock" rather than "__pthread_mutex_lock"), glibc's
// internal "__GI_" aliases last, and among equals a global name before a
// weak one before a local one.
func funcRank(bind elf.SymBind, name string) int {
	r := 2
	switch bind {
	case elf.STB_GLOBAL:
		r = 0
	case elf.STB_WEAK:
		r = 1
	}
	if strings.HasPrefix(name, "__GI_") {
		r += 10000
	}
	return r + 10*(len(name)-len(strings.TrimLeft(name, "_")))
}

// buildFuncTable sorts the candidates by address, keeps the best name of
// each address and packs the names.
func buildFuncTable(cands []funcCandidate, strtab []byte) *funcTable {
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].value != cands[j].value {
			return cands[i].value < cands[j].value
		}
		if cands[i].rank != cands[j].rank {
			return cands[i].rank < cands[j].rank
		}
		return cands[i].size > cands[j].size
	})
	unique := 0
	for i := range cands {
		if i == 0 || cands[i-1].value != cands[i].value {
			unique++
		}
	}
	t := &funcTable{funcs: make([]funcSym, 0, unique)}
	var names strings.Builder
	for i, c := range cands {
		if i > 0 && cands[i-1].value == c.value {
			continue
		}
		size := min(c.size, 1<<32-1)
		if names.Len() > 1<<32-1-maxNameLen {
			break
		}
		t.funcs = append(t.funcs, funcSym{value: c.value, size: uint32(size), name: uint32(names.Len())})
		names.Write(strtab[c.name : c.name+c.len])
	}
	t.names = names.String()
	return t
}

// lookup finds the function covering the link-time address vaddr: its
// name (as in the table, mangled) and start.
func (t *funcTable) lookup(vaddr uint64) (string, uint64, bool) {
	if t == nil {
		return "", 0, false
	}
	fs := t.funcs
	i := sort.Search(len(fs), func(i int) bool { return fs[i].value > vaddr }) - 1
	// A few back: a function's cold part or a nested label may sit
	// between a big function's start and the address.
	for k := 0; i >= 0 && k < 4; i, k = i-1, k+1 {
		s := fs[i]
		if vaddr-s.value < uint64(s.size) || vaddr == s.value {
			return t.name(i), s.value, true
		}
	}
	return "", 0, false
}

// name is the i-th function's name.
func (t *funcTable) name(i int) string {
	end := uint32(len(t.names))
	if i+1 < len(t.funcs) {
		end = t.funcs[i+1].name
	}
	start := t.funcs[i].name
	if start > end || end > uint32(len(t.names)) {
		return ""
	}
	return t.names[start:end]
}

// bytes is what the table holds.
func (t *funcTable) bytes() int {
	if t == nil {
		return 0
	}
	return cap(t.funcs)*16 + len(t.names)
}
