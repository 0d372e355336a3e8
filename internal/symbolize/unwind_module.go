package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// moduleTables are what unwinding needs of one binary: its call-frame
// information and its function symbols. They are read once per binary
// and shared by every Unwinder (see tableCache), immutable once built but
// for the function symbols of a binary whose debug file a debuginfod
// server is still sending (pending): they are replaced when it arrives.
type moduleTables struct {
	// eh is the .eh_frame; debug the .debug_frame, read too when the
	// binary has one, for the functions .eh_frame leaves out (a program
	// built -g without unwind tables has its C runtime's in .eh_frame,
	// its own in .debug_frame).
	eh, debug *ehTable
	funcs     atomic.Pointer[funcTable]
	// lines is the binary's line table (lines.go), nil without one.
	lines atomic.Pointer[lineTable]
	// pending is the build-id asked of debuginfod, nil once settled;
	// name the binary's base name, for the summary's word on binaries
	// that stayed without names.
	pending atomic.Pointer[string]
	name    string
}

// symbolGen counts the binaries whose names a fetched debug file changed:
// caches of named frames are dropped when it moves.
var symbolGen atomic.Uint64

// SymbolGeneration is symbolGen: a cache of frames named before it moved
// holds names that are better now.
func SymbolGeneration() uint64 { return symbolGen.Load() }

func (t *moduleTables) bytes() int {
	if t == nil {
		return 0
	}
	return t.eh.bytes() + t.debug.bytes() + t.funcs.Load().bytes() + t.lines.Load().bytes()
}

// settle takes the debug file debuginfod fetched for a pending binary, if
// it has arrived: its function symbols replace the exported ones. It
// reports whether the names changed.
func (t *moduleTables) settle() bool {
	id := t.pending.Load()
	if id == nil {
		return false
	}
	p, ok := fetched(*id)
	if !ok {
		return false
	}
	if !t.pending.CompareAndSwap(id, nil) {
		return false // another unwinder settled it
	}
	file, f := openFetchedDebugFile(p, *id)
	if file == nil {
		return false
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return false
	}
	if funcs := loadFuncTable(file, st.Size(), f, elf.SHT_SYMTAB); funcs != nil {
		if t.lines.Load() == nil {
			t.lines.Store(loadLineTable(f))
		}
		t.funcs.Store(funcs)
		symbolGen.Add(1)
		return true
	}
	return false
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
	file, err := u.proc.OpenMapped(first)
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
	id := BuildID(f)
	key := tableKey{id: id, dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Nano()}
	tableCache.Lock()
	tab := tableCache.m[key]
	tableCache.Unlock()
	if tab == nil {
		tab = u.loadTables(file, f, id, first.Path)
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
// build-id under /usr/lib/debug/.build-id, then by its .gnu_debuglink, in
// the target's root), else its MiniDebugInfo, else a debuginfod server's
// (from the cache now, or fetched in the background while the exported
// names stand in), else the exported ones.
func (u *Unwinder) loadTables(file *os.File, f *elf.File, id, binPath string) *moduleTables {
	tab := &moduleTables{eh: loadSection(f, ".eh_frame"), debug: loadSection(f, ".debug_frame")}
	size := int64(0)
	if st, err := file.Stat(); err == nil {
		size = st.Size()
	}
	funcs := loadFuncTable(file, size, f, elf.SHT_SYMTAB)
	lines := loadLineTable(f)
	if funcs == nil || tab.eh == nil && tab.debug == nil {
		dfile, df := openDebugFile(u.proc, id)
		if dfile == nil {
			dfile, df = openDebugLink(u.proc, f, binPath, id)
		}
		if dfile != nil {
			if funcs == nil {
				if st, err := dfile.Stat(); err == nil {
					funcs = loadFuncTable(dfile, st.Size(), df, elf.SHT_SYMTAB)
				}
			}
			if tab.eh == nil && tab.debug == nil {
				tab.debug = loadSection(df, ".debug_frame")
			}
			if lines == nil {
				lines = loadLineTable(df)
			}
			dfile.Close()
		}
	}
	if funcs == nil {
		if r, mf := miniDebugInfo(f); r != nil {
			funcs = loadFuncTable(r, r.Size(), mf, elf.SHT_SYMTAB)
		}
	}
	if funcs == nil && id != "" {
		if c := fetcher(); c != nil {
			if p, ok := c.Lookup(id); ok {
				if dfile, df := openFetchedDebugFile(p, id); dfile != nil {
					if st, err := dfile.Stat(); err == nil {
						funcs = loadFuncTable(dfile, st.Size(), df, elf.SHT_SYMTAB)
					}
					if lines == nil {
						lines = loadLineTable(df)
					}
					dfile.Close()
				}
			} else {
				tab.pending.Store(&id)
				tab.name = moduleName(binPath)
			}
		}
	}
	if funcs == nil {
		funcs = loadFuncTable(file, size, f, elf.SHT_DYNSYM)
	}
	tab.funcs.Store(funcs)
	tab.lines.Store(lines)
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

// Refresh takes the debug files a debuginfod server sent since the last
// call for this process's binaries (their frames are named by them from
// now on), and reports the binaries whose fetch failed, once each, with
// the reason: they stay named by module and offset.
func (u *Unwinder) Refresh() (failed []string) {
	c := fetcher()
	if c == nil {
		return nil
	}
	for _, um := range u.modules {
		if um.tab == nil {
			continue
		}
		um.tab.settle()
		if id := um.tab.pending.Load(); id != nil && !u.reported[*id] {
			if err := c.Failed(*id); err != nil {
				if u.reported == nil {
					u.reported = map[string]bool{}
				}
				u.reported[*id] = true
				failed = append(failed, fmt.Sprintf("debuginfod has no debug file for %s (build-id %s): %v; its frames stay named by module and offset", um.tab.name, *id, err))
			}
		}
	}
	if g := symbolGen.Load(); g != u.symGen {
		u.symGen = g
		clear(u.pcs) // frames named before the file came
	}
	return failed
}
