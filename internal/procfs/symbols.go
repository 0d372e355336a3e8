package procfs

import (
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Location names an address in a process: the binary it belongs to and the
// symbol that covers it, or the anonymous mapping it lies in.
type Location struct {
	Address uint64
	// Module is the binary's base name ("app", "libc.so.6"), or for memory
	// that belongs to no file a description of the mapping ("[heap]",
	// "anonymous rw-p 7f12a000-7f12c000").
	Module string
	// ModulePath is the binary's path as the target sees it; "" for
	// anonymous memory.
	ModulePath string
	// Offset is the address relative to the module's load address (the ELF
	// virtual address), or to the start of the anonymous mapping.
	Offset uint64
	// Symbol is the ELF symbol covering the address ("" when none) and
	// SymbolOffset the address's distance from its start; SymbolSize is
	// the symbol's size in bytes.
	Symbol       string
	SymbolOffset uint64
	SymbolSize   uint64
}

// String renders "contended_mutex (app+0x4040)", "cond+0x8 (app+0x4088)",
// "app+0x4040" or "[heap]+0x1a0".
func (l Location) String() string {
	where := l.Module + "+0x" + strconv.FormatUint(l.Offset, 16)
	if l.Symbol == "" {
		return where
	}
	sym := l.Symbol
	if l.SymbolOffset != 0 {
		sym += "+0x" + strconv.FormatUint(l.SymbolOffset, 16)
	}
	return sym + " (" + where + ")"
}

// Symbolizer resolves addresses of one process against its mappings and
// the ELF symbol tables of its binaries. Symbol tables are loaded lazily,
// once per binary, and resolved addresses are cached, so resolving the same
// futex every tick costs a map lookup.
type Symbolizer struct {
	fs   FS
	pid  int
	maps []Mapping
	// ranges are the binaries' spans over maps, computed when the maps
	// are read: a JVM has thousands of mappings (two per thread stack),
	// and every new address (each parked thread waits on its own) would
	// otherwise walk them all again.
	ranges  []moduleRange
	modules map[string]*elfModule // by path
	cache   map[uint64]Location
	// query, where the kernel has PROCMAP_QUERY, finds the mapping of
	// each new address in the target's open maps, so that the maps text
	// (two lines per thread of a JVM) is never read; noQuery: it has not,
	// or the target waits on so many addresses that the text serves
	// better (queried counts the addresses asked; see queryBudget).
	query   *mapsQuery
	noQuery bool
	queried int
}

// queryBudget is the number of addresses resolved by PROCMAP_QUERY before
// the symbolizer turns to the maps text for good. On a 2,000-thread JVM a
// query costs 2.2-2.5 µs an address, the text 0.9 plus 0.55 µs per mapping
// to read it once (4,171 mappings: 2.3 ms; BenchmarkResolveAddresses).
// Queries win for the few addresses a sample usually names; a target with
// thousands of threads each waiting on its own futex, named again on
// every tick once the address cache overflows, is served better by the
// text.
var queryBudget = 1024

// maxCachedLocations bounds the address cache; a process can wait on any
// number of distinct heap addresses over hours.
const maxCachedLocations = 8192

// NewSymbolizer returns a symbolizer for pid; it reads the maps on first use.
func (f FS) NewSymbolizer(pid int) *Symbolizer {
	return &Symbolizer{fs: f, pid: pid, modules: map[string]*elfModule{}, cache: map[uint64]Location{}}
}

// Resolve names addr. An address that no mapping contains gets a Location
// with only Address set. Errors mean the maps could not be read at all.
func (s *Symbolizer) Resolve(addr uint64) (Location, error) {
	if l, ok := s.cache[addr]; ok {
		return l, nil
	}
	l, found, err := s.resolve(addr)
	if err != nil {
		return Location{Address: addr}, err
	}
	if !found {
		// The mappings may have changed since they were read (a new
		// library, a new arena): read them once more.
		s.maps = nil
		if l, found, err = s.resolve(addr); err != nil {
			return Location{Address: addr}, err
		}
	}
	if len(s.cache) >= maxCachedLocations {
		clear(s.cache)
	}
	s.cache[addr] = l
	return l, nil
}

// Prepare readies the symbolizer for Resolve: it opens the target's maps
// for PROCMAP_QUERY (Linux 6.11+), or reads the whole maps text on an
// older kernel (a JVM of 10,000 threads has 20,000 mappings). The sampler
// calls it while a thread dump is under way, so that naming futex
// addresses after the dump does not wait for it; otherwise the first
// Resolve does it.
func (s *Symbolizer) Prepare() error {
	if s.query != nil || s.maps != nil {
		return nil
	}
	if !s.noQuery {
		q, err := s.fs.openMapsQuery(s.pid)
		if err != nil {
			return err
		}
		if _, _, err := q.find(0, true, false); errors.Is(err, errNoProcmapQuery) {
			q.Close()
			s.noQuery = true
		} else {
			s.query = q
			return nil
		}
	}
	return s.readMaps()
}

// Preload loads the symbols of the binary mapped at m (the mapping with
// its lowest address, as JVMLibraries gives libjvm.so's) ahead of the
// first address Resolve finds in it; a zero m does nothing.
func (s *Symbolizer) Preload(m Mapping) {
	if m.FileBacked() {
		s.module(m.Path, m)
	}
}

// Close releases the target's open maps and the binaries whose symbol
// names are read on demand; a later Resolve opens them again.
func (s *Symbolizer) Close() error {
	var errs []error
	for _, em := range s.modules {
		errs = append(errs, em.syms.close())
	}
	clear(s.modules)
	if s.query != nil {
		errs = append(errs, s.query.Close())
		s.query = nil
	}
	return errors.Join(errs...)
}

// readMaps reads the maps text unless it has been read (Resolve drops it
// when an address lies outside every mapping).
func (s *Symbolizer) readMaps() error {
	if s.maps != nil {
		return nil
	}
	m, err := s.fs.Maps(s.pid)
	if err != nil {
		return err
	}
	if m == nil {
		m = []Mapping{} // read, and empty: not read again
	}
	// The kernel lists mappings in address order; a fixture might not.
	sort.SliceStable(m, func(i, j int) bool { return m[i].Start < m[j].Start })
	s.maps, s.ranges = m, moduleRanges(m)
	return nil
}

func (s *Symbolizer) resolve(addr uint64) (Location, bool, error) {
	if err := s.Prepare(); err != nil {
		return Location{}, false, err
	}
	if s.query != nil && s.queried >= queryBudget {
		s.query.Close()
		s.query, s.noQuery = nil, true
	}
	if s.query != nil {
		s.queried++
		return s.resolveByQuery(addr)
	}
	if err := s.readMaps(); err != nil {
		return Location{}, false, err
	}
	// A file's .bss continues past its last file-backed mapping into
	// anonymous memory, so try the binaries' address ranges first.
	for _, mod := range s.ranges {
		if addr >= mod.start && addr < mod.end {
			if em := s.module(mod.path, mod.mapping); em.holds(addr) {
				return inModule(addr, mod.path, em), true, nil
			}
			break // past the binary's .bss: anonymous memory merged into it
		}
	}
	if i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > addr }); i < len(s.maps) {
		if m := s.maps[i]; addr >= m.Start {
			return inMapping(addr, m), true, nil
		}
	}
	return Location{Address: addr}, false, nil
}

// inModule names addr in the binary at path, whose ELF data em holds: its
// symbol, else its offset from the binary's first mapping.
func inModule(addr uint64, path string, em *elfModule) Location {
	l := Location{Address: addr, Module: filepath.Base(strings.TrimSuffix(path, " (deleted)")), ModulePath: path}
	if em.err != nil {
		l.Offset = addr - em.start
		return l
	}
	vaddr := addr - em.bias
	l.Offset = vaddr
	if sym, ok := em.lookup(vaddr); ok {
		l.Symbol, l.SymbolOffset, l.SymbolSize = sym.name, vaddr-sym.value, sym.size
	}
	return l
}

// inMapping names addr in a mapping of no binary: by its pseudo name
// ("[heap]"), or as anonymous memory.
func inMapping(addr uint64, m Mapping) Location {
	l := Location{Address: addr, Module: m.Path, Offset: addr - m.Start}
	if m.Path == "" {
		l.Module = fmt.Sprintf("anonymous %s %x-%x", m.Perms, m.Start, m.End)
	}
	return l
}

// resolveByQuery is resolve through PROCMAP_QUERY: the mapping that covers
// addr, and for anonymous memory the one right before it, whose .bss it
// may be. It names addresses as resolve does from the maps text.
func (s *Symbolizer) resolveByQuery(addr uint64) (Location, bool, error) {
	l := Location{Address: addr}
	m, ok, err := s.query.find(addr, false, false)
	if err != nil || !ok {
		return l, false, err
	}
	mod := m
	if !m.FileBacked() && m.Path == "" && m.Start > 0 {
		// A file's .bss continues past its last file-backed mapping into
		// the anonymous one right after its private writable data.
		prev, ok, err := s.query.find(m.Start-1, false, false)
		if err != nil {
			return l, false, err
		}
		if ok && prev.End == m.Start && prev.FileBacked() && prev.Perms == "rw-p" {
			mod = prev
		}
	}
	if !mod.FileBacked() {
		return inMapping(addr, m), true, nil
	}
	em, ok := s.modules[mod.Path]
	if !ok {
		em = s.module(mod.Path, s.firstMapping(mod))
	}
	if !em.holds(addr) {
		return inMapping(addr, m), true, nil
	}
	return inModule(addr, mod.Path, em), true, nil
}

// firstMapping walks back from m over the mappings of the same file right
// before it: a binary's first mapping is where the maps text's module
// range starts.
func (s *Symbolizer) firstMapping(m Mapping) Mapping {
	for k := 0; k < 64 && m.Start > 0; k++ {
		prev, ok, err := s.query.find(m.Start-1, false, false)
		if err != nil || !ok || prev.End != m.Start || prev.Path != m.Path {
			break
		}
		m = prev
	}
	return m
}

type moduleRange struct {
	path       string
	start, end uint64
	mapping    Mapping // the module's first file-backed mapping
}

// moduleRanges returns, per mapped binary, the span from its first mapping
// to the end of its last mapping plus the anonymous mapping right after it
// (where .bss lives).
func moduleRanges(maps []Mapping) []moduleRange {
	var out []moduleRange
	idx := map[string]int{}
	for i, m := range maps {
		if !m.FileBacked() {
			continue
		}
		end := m.End
		// Only a binary's private writable data segment continues into
		// .bss; an anonymous mapping after a data file (a locale file,
		// the hsperfdata file) is someone else's memory, often malloc's.
		if i+1 < len(maps) && maps[i+1].Path == "" && maps[i+1].Start == m.End && m.Perms == "rw-p" {
			end = maps[i+1].End
		}
		if j, ok := idx[m.Path]; ok {
			if end > out[j].end {
				out[j].end = end
			}
			continue
		}
		idx[m.Path] = len(out)
		out = append(out, moduleRange{path: m.Path, start: m.Start, end: end, mapping: m})
	}
	return out
}

// elfModule is the part of a binary's ELF data the symbolizer needs.
type elfModule struct {
	err error
	// start is the address of the binary's first mapping.
	start uint64
	bias  uint64 // load address minus link-time virtual address
	// memEnd is the end of the binary's loaded image, .bss included
	// (the highest PT_LOAD end, a link-time address); 0 when unknown.
	memEnd uint64
	syms   *symbolTable
}

// holds says whether addr, found in the binary's address range, is the
// binary's own memory. The range runs on into the anonymous mapping after
// its data, where .bss lives; but the kernel merges an adjacent anonymous
// mapping of the same permissions into that one (a malloc arena, a JVM's
// C heap), and a futex there is not the binary's: past the image's end,
// it is anonymous memory.
func (em *elfModule) holds(addr uint64) bool {
	if em.err != nil || em.memEnd == 0 || addr < em.bias {
		return true // nothing to tell by
	}
	return addr-em.bias < em.memEnd
}

type elfSymbol struct {
	value, size uint64
	name        string
}

// lookup finds the symbol covering vaddr: the nearest named symbols at or
// below it are tried (a few, since aliases and labels share addresses).
func (e *elfModule) lookup(vaddr uint64) (elfSymbol, bool) {
	if e.syms == nil {
		return elfSymbol{}, false
	}
	syms := e.syms.syms
	i := sort.Search(len(syms), func(i int) bool { return syms[i].value > vaddr }) - 1
	for k, empty := 0, 0; i >= 0 && k < 8 && empty <= maxEmptySkipped; i-- {
		sym := syms[i]
		// A nameless symbol is not one of the few: the table once left
		// them out when it was read.
		name := e.syms.name(i)
		if name == "" {
			empty++
			continue
		}
		k++
		if vaddr == sym.value || vaddr > sym.value && vaddr-sym.value < sym.size {
			return elfSymbol{value: sym.value, size: sym.size, name: name}, true
		}
	}
	return elfSymbol{}, false
}

// maxSymbols bounds one binary's table: a hostile or enormous binary must
// not take the profiler's memory.
const maxSymbols = 1 << 20

// maxOpenModules bounds the binaries kept open to read symbol names on
// demand; a module loaded beyond it has its names read whole at once.
const maxOpenModules = 64

// module loads the ELF data of path once; failures are remembered too.
func (s *Symbolizer) module(path string, first Mapping) *elfModule {
	if em, ok := s.modules[path]; ok {
		return em
	}
	em := &elfModule{start: first.Start}
	s.modules[path] = em
	file, err := openMapped(s.fs, s.pid, first)
	if err != nil {
		em.err = err
		return em
	}
	f, err := elf.NewFile(file)
	if err != nil {
		file.Close()
		em.err = err
		return em
	}
	// The bias maps the ELF's virtual addresses to the process's: the
	// first mapping maps file offset first.Offset, which the PT_LOAD
	// segment containing it places at a known virtual address.
	biased := false
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		em.memEnd = max(em.memEnd, p.Vaddr+p.Memsz)
		pageOff := p.Off &^ 0xfff
		if !biased && first.Offset >= pageOff && first.Offset < p.Off+p.Filesz {
			em.bias = first.Start - (p.Vaddr - (p.Off - first.Offset))
			biased = true
		}
	}
	if !biased {
		em.memEnd = 0 // without the bias the image's end is not placed
	}
	open := 0
	for _, m := range s.modules {
		if m.syms != nil && m.syms.file != nil {
			open++
		}
	}
	em.syms = loadSymbols(file, f, open >= maxOpenModules)
	if em.syms.file == nil {
		file.Close()
	}
	return em
}
