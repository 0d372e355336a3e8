package symbolize

import (
	"debug/elf"
	"errors"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Location names an address in a process: the binary it belongs to and the
// symbol that covers it, or the mapping it lies in. Every part of its name
// but Address stays the same from run to run of one program (ASLR moves
// the mappings, not what lies at an offset in them), so a lock keeps its
// name across runs; see String.
type Location struct {
	Address uint64
	// Module is the binary's base name ("app", "libc.so.6"), or for memory
	// that belongs to no binary a description of the mapping: "[heap]",
	// "[stack:TID]" (a thread's stack; the process's id for the main
	// one), "shared memory (anonymous)", "shared memory (file PATH)",
	// "anonymous memory", or the kernel's pseudo name ("[anon:name]").
	Module string
	// ModulePath is the binary's path as the target sees it; "" for
	// anonymous memory.
	ModulePath string
	// Offset is the address relative to the module's load address (the ELF
	// virtual address), to the start of the file for a shared file
	// mapping, or to the start of any other mapping.
	Offset uint64
	// Symbol is the ELF symbol covering the address ("" when none),
	// demangled when it is a C++ name, and
	// SymbolOffset the address's distance from its start; SymbolSize is
	// the symbol's size in bytes.
	Symbol       string
	SymbolOffset uint64
	SymbolSize   uint64
}

// String is the address's stable name: "contended_mutex (app+0x4040)",
// "cond+0x8 (app+0x4088)", "app+0x4040", "[heap]+0x1a0",
// "[stack:4242]+0x1f40", "shared memory (anonymous)+0x40"; the raw
// address ("0x7f12a0001a0") only when no mapping held it.
func (l Location) String() string {
	if l.Module == "" {
		return "0x" + strconv.FormatUint(l.Address, 16)
	}
	where := l.Module + "+0x" + strconv.FormatUint(l.Offset, 16)
	if l.Symbol == "" {
		return where
	}
	return l.ShortName() + " (" + where + ")"
}

// ShortName is the name without the module's part when a symbol names
// the address ("contended_mutex", "cond+0x8"), String otherwise: what a
// narrow column or a metric label shows.
func (l Location) ShortName() string {
	if l.Symbol == "" {
		return l.String()
	}
	if l.SymbolOffset != 0 {
		return l.Symbol + "+0x" + strconv.FormatUint(l.SymbolOffset, 16)
	}
	return l.Symbol
}

// Symbolizer resolves addresses of one process against its mappings and
// the ELF symbol tables of its binaries. Symbol tables are loaded lazily,
// once per binary, and resolved addresses are cached, so resolving the same
// futex every tick costs a map lookup.
type Symbolizer struct {
	proc Process
	maps []Mapping
	// ranges are the binaries' spans over maps, computed when the maps
	// are read: a JVM has thousands of mappings (two per thread stack),
	// and every new address (each parked thread waits on its own) would
	// otherwise walk them all again.
	ranges  []moduleRange
	modules map[string]*elfModule // by path
	cache   map[uint64]resolved
	// query, where the kernel has PROCMAP_QUERY, finds the mapping of
	// each new address in the target's open maps, so that the maps text
	// (two lines per thread of a JVM) is never read; noQuery: it has not,
	// or the target waits on so many addresses that the text serves
	// better (queried counts the addresses asked; see queryBudget).
	query   MapsQuery
	noQuery bool
	queried int
	// stacks remembers, by the start of an anonymous mapping, the thread
	// whose stack it was last seen to be (NoteStack, StackOwner).
	stacks map[uint64]int
	// pending are the build-ids of its binaries asked of debuginfod.
	pending map[string]bool
}

// maxStacks bounds the stacks remembered; a process may create and end
// threads for hours.
const maxStacks = 4096

// NoteStack remembers that the mapping starting at start is tid's stack
// (a later thread may reuse a stack glibc kept: the latest sighting wins).
func (s *Symbolizer) NoteStack(start uint64, tid int) {
	if s.stacks == nil || len(s.stacks) >= maxStacks {
		s.stacks = map[uint64]int{}
	}
	s.stacks[start] = tid
}

// StackOwner is the thread whose stack the mapping starting at start was
// last seen to be (NoteStack); 0 when none was.
func (s *Symbolizer) StackOwner(start uint64) int { return s.stacks[start] }

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

// resolved is a cached name with, for private anonymous memory (which
// may be a thread's stack), the span of its mapping.
type resolved struct {
	loc        Location
	start, end uint64
	shared     SharedWord
}

// NewSymbolizer returns a symbolizer for p; it reads the maps on first use.
func NewSymbolizer(p Process) *Symbolizer {
	return &Symbolizer{proc: p, modules: map[string]*elfModule{}, cache: map[uint64]resolved{}}
}

// Resolve names addr. An address that no mapping contains gets a Location
// with only Address set. Errors mean the maps could not be read at all.
func (s *Symbolizer) Resolve(addr uint64) (Location, error) {
	r, err := s.resolveSpan(addr)
	return r.loc, err
}

// Region is a resolved address with, for private anonymous memory (a
// thread's stack may be one), the span of its mapping.
type Region struct {
	Location
	Start, End uint64
	// Shared is the word's place in shared memory (zero for memory of
	// the process's own).
	Shared SharedWord
}

// SharedWord is a word of shared memory as the kernel keys a futex in it
// (a futex without FUTEX_PRIVATE_FLAG): the object mapped, by its device
// and inode (a shared anonymous mapping or a System V segment has an inode
// of its own too), and the word's offset in it. Processes that map one
// object at addresses of their own wait on one word when these are equal.
type SharedWord struct {
	DevMajor, DevMinor uint32
	Inode, Offset      uint64
}

// IsZero reports the zero SharedWord: the memory is not shared.
func (w SharedWord) IsZero() bool { return w == SharedWord{} }

// PrivateAnonymous reports memory of no binary and no shared mapping,
// with its span known: it may be a thread's stack.
func (r Region) PrivateAnonymous() bool { return r.Module == anonymousMemory && r.End > r.Start }

// ResolveRegion is Resolve with the span of an anonymous mapping.
func (s *Symbolizer) ResolveRegion(addr uint64) (Region, error) {
	r, err := s.resolveSpan(addr)
	return Region{Location: r.loc, Start: r.start, End: r.end, Shared: r.shared}, err
}

// resolveSpan is Resolve with the span of an anonymous mapping.
func (s *Symbolizer) resolveSpan(addr uint64) (resolved, error) {
	for id := range s.pending {
		// A debug file debuginfod was sending has come: addresses named
		// without it are named again.
		if _, ok := fetched(id); ok {
			delete(s.pending, id)
			clear(s.cache)
		}
	}
	if r, ok := s.cache[addr]; ok {
		return r, nil
	}
	r, found, err := s.resolve(addr)
	if err != nil {
		return resolved{loc: Location{Address: addr}}, err
	}
	if !found {
		// The mappings may have changed since they were read (a new
		// library, a new arena): read them once more.
		s.maps = nil
		if r, found, err = s.resolve(addr); err != nil {
			return resolved{loc: Location{Address: addr}}, err
		}
	}
	if len(s.cache) >= maxCachedLocations {
		clear(s.cache)
	}
	s.cache[addr] = r
	return r, nil
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
		q, err := s.proc.QueryMaps()
		if errors.Is(err, ErrNoMapsQuery) {
			s.noQuery = true
		} else if err != nil {
			return err
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
	m, err := s.proc.Maps()
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

func (s *Symbolizer) resolve(addr uint64) (resolved, bool, error) {
	if err := s.Prepare(); err != nil {
		return resolved{}, false, err
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
		return resolved{}, false, err
	}
	// A file's .bss continues past its last file-backed mapping into
	// anonymous memory, so try the binaries' address ranges first.
	for _, mod := range s.ranges {
		if addr >= mod.start && addr < mod.end {
			if em := s.module(mod.path, mod.mapping); em.holds(addr) {
				return resolved{loc: inModule(addr, mod.path, em)}, true, nil
			}
			break // past the binary's .bss: anonymous memory merged into it
		}
	}
	if i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > addr }); i < len(s.maps) {
		if m := s.maps[i]; addr >= m.Start {
			return s.inMapping(addr, m), true, nil
		}
	}
	return resolved{loc: Location{Address: addr}}, false, nil
}

// inModule names addr in the binary at path, whose ELF data em holds: its
// symbol, else its offset from the binary's first mapping.
func inModule(addr uint64, path string, em *elfModule) Location {
	l := Location{Address: addr, Module: moduleName(path), ModulePath: path}
	if em.err != nil {
		l.Offset = addr - em.start
		return l
	}
	vaddr := addr - em.bias
	l.Offset = vaddr
	if sym, ok := em.lookup(vaddr); ok {
		l.Symbol, l.SymbolOffset, l.SymbolSize = demangleSymbol(sym.name), vaddr-sym.value, sym.size
	}
	return l
}

// inMapping names addr in a mapping of no binary, by what stays the same
// from run to run: shared memory by its file and the offset in it (a
// shared anonymous mapping shows as "/dev/zero (deleted)", System V
// memory as "/SYSV<key> (deleted)": both are anonymous, not the files
// their names suggest), the main stack as the process's, a pseudo name
// ("[heap]") with the offset from its start, and other anonymous memory
// as such. GroupFutexWaits names a thread's stack by the thread whose
// stack pointer lies in it, for which the span is returned.
func (s *Symbolizer) inMapping(addr uint64, m Mapping) resolved {
	l := Location{Address: addr, Module: m.Path, Offset: addr - m.Start}
	switch {
	case m.Shared():
		l.Offset = addr - m.Start + m.Offset
		if m.Path == "" || m.Path == "/dev/zero (deleted)" || strings.HasPrefix(m.Path, "/SYSV") {
			l.Module = sharedMemory + "(anonymous)"
		} else {
			l.Module = sharedMemory + "(file " + m.Path + ")"
		}
		return resolved{loc: l, shared: SharedWord{DevMajor: m.DevMajor, DevMinor: m.DevMinor, Inode: m.Inode, Offset: l.Offset}}
	case m.Path == "[stack]":
		l.Module = "[stack:" + strconv.Itoa(s.proc.PID()) + "]"
	case m.Path == "":
		l.Module = anonymousMemory
		return resolved{loc: l, start: m.Start, end: m.End}
	}
	return resolved{loc: l}
}

// sharedMemory starts the name of a mapping of shared memory.
const sharedMemory = "shared memory "

// InSharedMemory reports a location in a mapping of shared memory, which
// other processes may map too (a binary of that name has a ModulePath).
func (l Location) InSharedMemory() bool {
	return l.ModulePath == "" && strings.HasPrefix(l.Module, sharedMemory)
}

// anonymousMemory names private memory of no file and no pseudo name (a
// malloc arena, a thread's stack not yet told apart).
const anonymousMemory = "anonymous memory"

// resolveByQuery is resolve through PROCMAP_QUERY: the mapping that covers
// addr, and for anonymous memory the one right before it, whose .bss it
// may be. It names addresses as resolve does from the maps text.
func (s *Symbolizer) resolveByQuery(addr uint64) (resolved, bool, error) {
	l := resolved{loc: Location{Address: addr}}
	m, ok, err := s.query.Find(addr, false, false)
	if err != nil || !ok {
		return l, false, err
	}
	mod := m
	if !m.FileBacked() && m.Path == "" && !m.Shared() && m.Start > 0 {
		// A file's .bss continues past its last file-backed mapping into
		// the anonymous one right after its private writable data.
		prev, ok, err := s.query.Find(m.Start-1, false, false)
		if err != nil {
			return l, false, err
		}
		if ok && prev.End == m.Start && prev.FileBacked() && prev.Perms == "rw-p" {
			mod = prev
		}
	}
	if !mod.FileBacked() || mod.Shared() {
		return s.inMapping(addr, m), true, nil
	}
	em, ok := s.modules[mod.Path]
	if !ok || em.pending != "" {
		em = s.module(mod.Path, s.firstMapping(mod))
	}
	if !em.holds(addr) {
		return s.inMapping(addr, m), true, nil
	}
	return resolved{loc: inModule(addr, mod.Path, em)}, true, nil
}

// firstMapping walks back from m over the mappings of the same file right
// before it: a binary's first mapping is where the maps text's module
// range starts.
func (s *Symbolizer) firstMapping(m Mapping) Mapping {
	for k := 0; k < 64 && m.Start > 0; k++ {
		prev, ok, err := s.query.Find(m.Start-1, false, false)
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
		// Shared memory is no binary's, whatever file backs it.
		if !m.FileBacked() || m.Shared() {
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
	// pending is the build-id asked of debuginfod while the binary's own
	// names stand in; "" when nothing is awaited.
	pending string
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
		if em.pending == "" {
			return em
		}
		if _, ok := fetched(em.pending); !ok {
			return em
		}
		// The debug file a debuginfod server was sending has come: the
		// binary is read again, named by it.
		if em.syms != nil {
			em.syms.close()
		}
		delete(s.modules, path)
	}
	em := &elfModule{start: first.Start}
	s.modules[path] = em
	file, err := s.proc.OpenMapped(first)
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
	if !hasSymtab(f) {
		// A stripped binary: its full table may be in a debug package,
		// or in the file its .gnu_debuglink names.
		id := BuildID(f)
		dfile, df := openDebugFile(s.proc, id)
		if dfile == nil {
			dfile, df = openDebugLink(s.proc, f, first.Path, id)
		}
		if c := fetcher(); dfile == nil && c != nil && id != "" {
			if p, ok := c.Lookup(id); ok {
				dfile, df = openFetchedDebugFile(p, id)
			} else {
				em.pending = id
				if s.pending == nil {
					s.pending = map[string]bool{}
				}
				s.pending[id] = true
			}
		}
		if dfile != nil {
			if t := loadSymbols(dfile, df, open >= maxOpenModules); len(t.syms) > 0 {
				file.Close()
				em.syms = t
				if t.file == nil {
					dfile.Close()
				}
				return em
			}
			dfile.Close()
		}
	}
	em.syms = loadSymbols(file, f, open >= maxOpenModules)
	if em.syms.file == nil {
		file.Close()
	}
	return em
}

// tempToken matches the random part a temporary file's name carries: the
// decimal number Java's File.createTempFile inserts (a JNI library a jar
// extracts before loading it: librocksdbjni6232283238053418444.so), or a
// UUID (sqlite-jdbc's extracted library). Twelve digits or more: version
// numbers and dates are shorter.
var tempToken = regexp.MustCompile(`[0-9]{12,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// moduleName names the binary mapped from path: its base name, with a
// temporary file's random part as "*", so that a library a process
// extracts under a new name at every start keeps one name (and the
// resources at its sites one key) across restarts and hosts.
func moduleName(path string) string {
	return tempToken.ReplaceAllLiteralString(filepath.Base(strings.TrimSuffix(path, " (deleted)")), "*")
}
