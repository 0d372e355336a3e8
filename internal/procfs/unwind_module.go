package procfs

import (
	"debug/elf"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// moduleTables are what unwinding needs of one binary: its call-frame
// information and its function symbols. They are read once per binary
// and shared by every Unwinder (see tableCache), immutable once built.
type moduleTables struct {
	// eh is the .eh_frame; debug the .debug_frame, read too when the
	// binary has one, for the functions .eh_frame leaves out (a program
	// built -g without unwind tables has its C runtime's in .eh_frame,
	// its own in .debug_frame).
	eh, debug *ehTable
	funcs     *funcTable
}

func (t *moduleTables) bytes() int {
	if t == nil {
		return 0
	}
	return t.eh.bytes() + t.debug.bytes() + t.funcs.bytes()
}

// row is the CFI row at vaddr, from .eh_frame, else .debug_frame.
func (t *moduleTables) row(vaddr uint64) unwindRow {
	if _, ok := t.eh.find(vaddr); ok {
		return t.eh.row(vaddr)
	}
	return t.debug.row(vaddr)
}

// tableKey names one binary's tables: its build-id, and the file's
// identity, so that a target's own binary claiming the build-id of the
// host's libc (any bytes can) never lends its tables to other targets.
type tableKey struct {
	id             string
	dev, ino, size uint64
	mtime          int64
}

// tableCache holds the tables of the binaries unwound so far, across
// Unwinders (every process maps the same libc), up to maxCachedTables.
var tableCache struct {
	sync.Mutex
	m map[tableKey]*moduleTables
}

const maxCachedTables = 256

// unwindModule is one binary as one process maps it.
type unwindModule struct {
	name string // base name
	// start is the address of its first mapping, bias the load address
	// minus the link-time address (valid when tab is set).
	start, bias uint64
	tab         *moduleTables // nil when the binary could not be read
}

// module returns the binary mapped at first (its lowest mapping), its
// tables read or taken from the cache on first use.
func (u *Unwinder) module(first Mapping) *unwindModule {
	if um, ok := u.modules[first.Path]; ok {
		return um
	}
	um := &unwindModule{name: moduleName(first.Path), start: first.Start}
	if len(u.modules) >= maxOpenModules*16 {
		clear(u.modules)
	}
	u.modules[first.Path] = um
	file, err := openMapped(u.fs, u.pid, first)
	if err != nil {
		return um
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		return um
	}
	bias, ok := loadBias(f, first)
	if !ok {
		return um
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return um
	}
	id := buildID(f)
	key := tableKey{id: id, dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Nano()}
	tableCache.Lock()
	tab := tableCache.m[key]
	tableCache.Unlock()
	if tab == nil {
		tab = u.loadTables(file, f, id)
		u.stats.TablesLoaded++
		tableCache.Lock()
		if tableCache.m == nil || len(tableCache.m) >= maxCachedTables {
			tableCache.m = map[tableKey]*moduleTables{}
		}
		tableCache.m[key] = tab
		tableCache.Unlock()
	}
	um.bias, um.tab = bias, tab
	return um
}

// loadTables reads a binary's call-frame information and function
// symbols: the full symbol table, else the one of its debug file (by
// build-id, in the target's root), else the exported ones.
func (u *Unwinder) loadTables(file *os.File, f *elf.File, id string) *moduleTables {
	tab := &moduleTables{eh: loadSection(f, ".eh_frame"), debug: loadSection(f, ".debug_frame"), funcs: loadFuncTable(file, f, elf.SHT_SYMTAB)}
	if tab.funcs == nil || tab.eh == nil && tab.debug == nil {
		if dfile, df := openDebugFile(u.fs, u.pid, id); dfile != nil {
			if tab.funcs == nil {
				tab.funcs = loadFuncTable(dfile, df, elf.SHT_SYMTAB)
			}
			if tab.eh == nil && tab.debug == nil {
				tab.debug = loadSection(df, ".debug_frame")
			}
			dfile.Close()
		}
	}
	if tab.funcs == nil {
		tab.funcs = loadFuncTable(file, f, elf.SHT_DYNSYM)
	}
	return tab
}

// loadBias is the load address minus the link-time address of a binary
// whose first mapping is first: that mapping maps file offset
// first.Offset, which the PT_LOAD segment containing it places at a
// known virtual address (as Symbolizer.module computes it).
func loadBias(f *elf.File, first Mapping) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		pageOff := p.Off &^ 0xfff
		if first.Offset >= pageOff && first.Offset < p.Off+p.Filesz {
			return first.Start - (p.Vaddr - (p.Off - first.Offset)), true
		}
	}
	return 0, false
}
