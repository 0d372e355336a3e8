package symbolize

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// symbolBinaries are the binaries whose symbols the tests read: a
// program of the tests' own, libc (.dynsym only), and the two JVMs'
// libjvm.so (a .symtab of 70,000 symbols).
func symbolBinaries(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"mutex_contention": testnative.Build(t, "mutex_contention"),
		"libc":             "/lib/x86_64-linux-gnu/libc.so.6",
		"jdk17":            filepath.Join(testjvm.JDK17(t).Home, "lib", "server", "libjvm.so"),
		"jdk25":            filepath.Join(testjvm.JDK25(t).Home, "lib", "server", "libjvm.so"),
	}
}

func openELF(t testing.TB, path string) (*os.File, *elf.File) {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { file.Close() })
	f, err := elf.NewFile(file)
	require.NoError(t, err)
	return file, f
}

// The data symbols read from the symbol table, named through the lazy
// path (a read of the string table per name), are those debug/elf gives,
// less the code, for real binaries; and so with the names read whole.
func TestLoadSymbolsMatchesDebugElf(t *testing.T) {
	for name, path := range symbolBinaries(t) {
		t.Run(name, func(t *testing.T) {
			file, f := openELF(t, path)
			// Every symbol, by address, size and name: local symbols
			// share names (a static "types" in several files).
			var want []elfSymbol
			for _, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
				syms, err := read()
				if err != nil {
					continue
				}
				for _, s := range syms {
					typ := elf.ST_TYPE(s.Info)
					if s.Value == 0 || s.Name == "" || s.Section == elf.SHN_UNDEF || typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE {
						continue
					}
					want = append(want, elfSymbol{value: s.Value, size: s.Size, name: s.Name})
				}
			}
			require.NotEmpty(t, want)
			sortSymbols := func(syms []elfSymbol) {
				slices.SortFunc(syms, func(a, b elfSymbol) int {
					return cmp.Or(cmp.Compare(a.value, b.value), cmp.Compare(a.size, b.size), cmp.Compare(a.name, b.name))
				})
			}
			sortSymbols(want)
			for _, readNames := range []bool{false, true} {
				tab := loadSymbols(file, f, readNames)
				require.NotEmpty(t, tab.syms)
				var got []elfSymbol
				for i, s := range tab.syms {
					if i > 0 {
						assert.LessOrEqual(t, tab.syms[i-1].value, s.value, "sorted by address")
					}
					if n := tab.name(i); n != "" {
						got = append(got, elfSymbol{value: s.value, size: s.size, name: n})
					}
				}
				sortSymbols(got)
				assert.Equal(t, want, got, "names read whole: %v", readNames)
				assert.LessOrEqual(t, len(tab.names), maxCachedNames)
			}
		})
	}
	file, f := openELF(t, symbolBinaries(t)["mutex_contention"])
	tab := loadSymbols(file, f, false)
	em := &elfModule{syms: tab}
	for i, s := range tab.syms {
		if tab.name(i) == "contended_mutex" {
			sym, ok := em.lookup(s.value + 4)
			require.True(t, ok)
			assert.Equal(t, elfSymbol{value: s.value, size: s.size, name: "contended_mutex"}, sym)
			return
		}
	}
	t.Fatal("no contended_mutex")
}

// eagerSymbol and loadSymbolsEager are how the symbols were read before
// names were read on demand (both sections whole, every name a string):
// the reference lookup must agree with, and the benchmarks' "before".
type eagerSymbol = elfSymbol

func loadSymbolsEager(f *elf.File) []eagerSymbol {
	var out []eagerSymbol
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
		size := elf.Sym64Size
		if f.Class == elf.ELFCLASS32 {
			size = elf.Sym32Size
		}
		for off := size; off+size <= len(syms) && len(out) < maxSymbols; off += size {
			e := syms[off : off+size]
			var name uint32
			var info uint8
			var shndx uint16
			var value, sz uint64
			if f.Class == elf.ELFCLASS32 {
				name, value, sz = f.ByteOrder.Uint32(e[0:]), uint64(f.ByteOrder.Uint32(e[4:])), uint64(f.ByteOrder.Uint32(e[8:]))
				info, shndx = e[12], f.ByteOrder.Uint16(e[14:])
			} else {
				name, info, shndx = f.ByteOrder.Uint32(e[0:]), e[4], f.ByteOrder.Uint16(e[6:])
				value, sz = f.ByteOrder.Uint64(e[8:]), f.ByteOrder.Uint64(e[16:])
			}
			typ := elf.ST_TYPE(info)
			if value == 0 || elf.SectionIndex(shndx) == elf.SHN_UNDEF || typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE {
				continue
			}
			if n := symbolName(names, name); n != "" {
				out = append(out, eagerSymbol{value: value, size: sz, name: n})
			}
		}
	}
	slices.SortFunc(out, func(a, b eagerSymbol) int {
		if c := cmp.Compare(a.value, b.value); c != 0 {
			return c
		}
		return cmp.Compare(a.size, b.size)
	})
	return out
}

// lookupEager is lookup over an eagerly read table.
func lookupEager(syms []eagerSymbol, vaddr uint64) (elfSymbol, bool) {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].value > vaddr }) - 1
	for k := 0; i >= 0 && k < 8; i, k = i-1, k+1 {
		sym := syms[i]
		if vaddr == sym.value || vaddr > sym.value && vaddr-sym.value < sym.size {
			return sym, true
		}
	}
	return elfSymbol{}, false
}

// Every address in and around every data symbol names the same symbol,
// at the same place, as when the table was read whole with its names and
// comparison sorted; but among aliases (symbols of the same address and
// size: "daylight" and "__daylight" in libc), whose order that sort left
// to chance, the last in the table is the one named now.
func TestLookupMatchesEagerTable(t *testing.T) {
	for name, path := range symbolBinaries(t) {
		t.Run(name, func(t *testing.T) {
			file, f := openELF(t, path)
			eager := loadSymbolsEager(f)
			require.NotEmpty(t, eager)
			lazy := &elfModule{syms: loadSymbols(file, f, false)}
			type place struct{ value, size uint64 }
			aliases := map[place]map[string]bool{}
			for _, s := range eager {
				p := place{s.value, s.size}
				if aliases[p] == nil {
					aliases[p] = map[string]bool{}
				}
				aliases[p][s.name] = true
			}
			named, otherAlias := 0, 0
			for _, s := range eager {
				for _, addr := range []uint64{s.value - 1, s.value, s.value + s.size/2, s.value + s.size - 1, s.value + s.size} {
					want, wantOK := lookupEager(eager, addr)
					got, ok := lazy.lookup(addr)
					require.Equal(t, wantOK, ok, "%#x", addr)
					require.Equal(t, place{want.value, want.size}, place{got.value, got.size}, "%#x", addr)
					if got.name != want.name {
						require.True(t, aliases[place{got.value, got.size}][got.name], "%#x: %s is not an alias of %s", addr, got.name, want.name)
						otherAlias++
					}
					if ok {
						named++
					}
				}
			}
			assert.Greater(t, named, len(eager))
			t.Logf("%d data symbols, %d lookups named, %d of them another alias", len(eager), named, otherAlias)
		})
	}
}

// A hostile binary: a string table without a NUL gives names of at most
// maxNameLen bytes; symbols whose names lie past it are never named; a
// symbol table past the end of the file is not read.
func TestLoadSymbolsHostileTables(t *testing.T) {
	const nsyms = 3
	strtab := bytes.Repeat([]byte("x"), 3*maxNameLen) // no NUL at all
	strtab[0] = 0
	symtab := make([]byte, (nsyms+1)*elf.Sym64Size)
	for i, s := range []struct {
		name        uint32
		value, size uint64
	}{{1, 0x1000, 8}, {uint32(len(strtab)) + 10, 0x2000, 8}, {uint32(len(strtab)) - 5, 0x3000, 8}} {
		e := symtab[(i+1)*elf.Sym64Size:]
		binary.LittleEndian.PutUint32(e[0:], s.name)
		e[4] = byte(elf.STT_OBJECT)
		binary.LittleEndian.PutUint16(e[6:], 1)
		binary.LittleEndian.PutUint64(e[8:], s.value)
		binary.LittleEndian.PutUint64(e[16:], s.size)
	}
	path := filepath.Join(t.TempDir(), "hostile.so")
	require.NoError(t, os.WriteFile(path, buildELF64(symtab, strtab, 0), 0o644))
	file, f := openELF(t, path)
	em := &elfModule{syms: loadSymbols(file, f, false)}
	require.Len(t, em.syms.syms, 2, "the name past the table is left out")
	sym, ok := em.lookup(0x1004)
	require.True(t, ok)
	assert.Len(t, sym.name, maxNameLen)
	sym, ok = em.lookup(0x3000)
	require.True(t, ok)
	assert.Equal(t, "xxxxx", sym.name, "a name runs to the table's end")
	_, ok = em.lookup(0x2000)
	assert.False(t, ok)

	// The symbol table claims far more bytes than the file has.
	path = filepath.Join(t.TempDir(), "truncated.so")
	require.NoError(t, os.WriteFile(path, buildELF64(symtab, strtab, 1<<40), 0o644))
	file, f = openELF(t, path)
	assert.Empty(t, loadSymbols(file, f, false).syms)
}

// buildELF64 makes a little-endian ELF64 file with a .symtab, its .strtab
// and a section name table; symtabSize, when not 0, is the size the
// .symtab's header claims.
func buildELF64(symtab, strtab []byte, symtabSize uint64) []byte {
	shstrtab := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	le := binary.LittleEndian
	var b []byte
	b = append(b, make([]byte, ehsize)...)
	symOff := uint64(len(b))
	b = append(b, symtab...)
	strOff := uint64(len(b))
	b = append(b, strtab...)
	shstrOff := uint64(len(b))
	b = append(b, shstrtab...)
	shOff := uint64(len(b))
	if symtabSize == 0 {
		symtabSize = uint64(len(symtab))
	}
	section := func(name, typ uint32, off, size uint64, link uint32) {
		h := make([]byte, shentsize)
		le.PutUint32(h[0:], name)
		le.PutUint32(h[4:], typ)
		le.PutUint64(h[24:], off)
		le.PutUint64(h[32:], size)
		le.PutUint32(h[40:], link)
		b = append(b, h...)
	}
	section(0, 0, 0, 0, 0)
	section(1, uint32(elf.SHT_SYMTAB), symOff, symtabSize, 2)
	section(9, uint32(elf.SHT_STRTAB), strOff, uint64(len(strtab)), 0)
	section(17, uint32(elf.SHT_STRTAB), shstrOff, uint64(len(shstrtab)), 0)
	copy(b, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	le.PutUint16(b[16:], uint16(elf.ET_DYN))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[40:], shOff)
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[58:], shentsize)
	le.PutUint16(b[60:], 4) // sections
	le.PutUint16(b[62:], 3) // .shstrtab
	return b
}

// FuzzLoadSymbols feeds arbitrary symbol and string tables, and arbitrary
// files, to the loader and lookup: they must not panic, and names stay
// within maxNameLen.
func FuzzLoadSymbols(f *testing.F) {
	sym := make([]byte, 2*elf.Sym64Size)
	binary.LittleEndian.PutUint32(sym[elf.Sym64Size:], 1)
	sym[elf.Sym64Size+4] = byte(elf.STT_OBJECT)
	binary.LittleEndian.PutUint16(sym[elf.Sym64Size+6:], 1)
	binary.LittleEndian.PutUint64(sym[elf.Sym64Size+8:], 0x1000)
	binary.LittleEndian.PutUint64(sym[elf.Sym64Size+16:], 8)
	f.Add(sym, []byte("\x00lock\x00"), uint64(0), false, uint64(0x1004))
	f.Add(sym, []byte("\x00lock"), uint64(1<<40), true, uint64(0x1000))
	f.Fuzz(func(t *testing.T, symtab, strtab []byte, symtabSize uint64, readNames bool, addr uint64) {
		path := filepath.Join(t.TempDir(), "f.so")
		require.NoError(t, os.WriteFile(path, buildELF64(symtab, strtab, symtabSize), 0o644))
		file, err := os.Open(path)
		require.NoError(t, err)
		defer file.Close()
		ef, err := elf.NewFile(file)
		if err != nil {
			return
		}
		em := &elfModule{syms: loadSymbols(file, ef, readNames)}
		for _, a := range []uint64{addr, 0x1000, 0x1004} {
			if sym, ok := em.lookup(a); ok {
				require.NotEmpty(t, sym.name)
				require.LessOrEqual(t, len(sym.name), maxNameLen)
			}
		}
	})
}
