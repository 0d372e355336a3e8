package symbolize

import (
	"encoding/binary"
	"sort"
	"time"
)

// Unwinder unwinds the user stacks of one process's threads without
// stopping them: from a thread's stack pointer and program counter
// (/proc/<tid>/syscall, for a thread blocked in a system call), reading
// its stack through a StackMemory (/proc/<pid>/mem), by each binary's
// call-frame information (.eh_frame, read with delve's DWARF CFI
// package), else by frame pointers, else by a bounded scan of the stack
// for a return address. Frames are named by the binaries' function
// symbols, else by module and offset.
//
// An Unwinder is for one goroutine at a time; the tables it reads are
// shared by all (tableCache).
type Unwinder struct {
	proc Process
	// maps are the target's mappings by address, read at each sweep
	// (ReadMaps) and again when an address falls outside them.
	maps     []Mapping
	ranges   []moduleRange
	mapsRead time.Time
	execSig  uint64
	modules  map[string]*unwindModule // by path
	// pcs caches each program counter's frame and CFI row (the threads
	// of a pool wait in the same few places); calls caches the stack
	// scan's check of a candidate return address.
	pcs   map[uint64]pcInfo
	calls map[uint64]bool
	sigs  map[uint64]bool
	win   stackWindow
	stats UnwindStats
	// symGen is the symbolGen its frame cache was named at; reported the
	// build-ids whose failed fetch Refresh has told of.
	symGen   uint64
	reported map[string]bool
}

// UnwindStats count an Unwinder's work (for benchmarks and tests).
type UnwindStats struct {
	Stacks, Frames int
	// CFIFrames were unwound by call-frame information, FPFrames by
	// frame pointers, ScanFrames by scanning the stack, SignalFrames
	// from a signal handler's frame to what the signal interrupted.
	CFIFrames, FPFrames, ScanFrames, SignalFrames int
	// Reads are the reads of stack memory (code reads of the scan
	// included).
	Reads int
	// TablesLoaded counts the binaries whose tables this unwinder read
	// (not found in the cache); Modules the binaries it named frames in;
	// TableBytes what their tables hold.
	TablesLoaded, Modules, TableBytes int
	// ModuleBytes are the table bytes by module name.
	ModuleBytes map[string]int
}

// pcInfo is what one program counter's frame needs, cached.
type pcInfo struct {
	frame StackFrame // PC not set
	row   unwindRow
	found bool // in a mapping
}

const (
	// stackChunk is how much stack one read takes (the first, less).
	stackChunk = 16 << 10
	// maxScanBytes bounds the stack scanned for one frame's return
	// address; unknownStackBytes the stack assumed above the stack
	// pointer when no mapping is known to hold it.
	maxScanBytes      = 8 << 10
	unknownStackBytes = 256 << 10
	maxCachedPCs      = 16384
	// mapsRereadAfter spaces reads of the maps prompted by addresses
	// outside them.
	mapsRereadAfter = 100 * time.Millisecond
)

// NewUnwinder returns an unwinder for p's threads; it reads nothing yet.
func NewUnwinder(p Process) *Unwinder {
	return &Unwinder{proc: p, modules: map[string]*unwindModule{}, pcs: map[uint64]pcInfo{}, calls: map[uint64]bool{}, sigs: map[uint64]bool{}}
}

// ReadMaps reads the target's maps again, as a sweep does before it
// unwinds its blocked threads: code mapped since (a library loaded, a
// JIT's new code) is found without waiting for an address outside them.
func (u *Unwinder) ReadMaps() { u.readMaps() }

// Stats returns the unwinder's counts so far.
func (u *Unwinder) Stats() UnwindStats {
	s := u.stats
	s.ModuleBytes = map[string]int{}
	seen := map[*moduleTables]bool{}
	for _, m := range u.modules {
		if m.tab != nil && !seen[m.tab] {
			seen[m.tab] = true
			s.Modules++
			s.TableBytes += m.tab.bytes()
			s.ModuleBytes[m.name] = m.tab.bytes()
		}
	}
	return s
}

// Close releases what the unwinder holds (the shared tables stay cached).
func (u *Unwinder) Close() error {
	u.maps, u.ranges = nil, nil
	clear(u.modules)
	clear(u.pcs)
	clear(u.calls)
	clear(u.sigs)
	u.win = stackWindow{}
	return nil
}

// readMaps reads the target's maps; when its executable mappings have
// changed, what was cached of them is dropped.
func (u *Unwinder) readMaps() bool {
	u.mapsRead = time.Now()
	m, err := u.proc.Maps()
	if err != nil {
		return false
	}
	sort.SliceStable(m, func(i, j int) bool { return m[i].Start < m[j].Start })
	sig := uint64(14695981039346656037)
	for _, x := range m {
		if len(x.Perms) >= 3 && x.Perms[2] == 'x' {
			for _, v := range [...]uint64{x.Start, x.End, x.Offset, x.Inode} {
				sig = (sig ^ v) * 1099511628211
			}
		}
	}
	if sig != u.execSig {
		clear(u.pcs)
		clear(u.calls)
		clear(u.sigs)
		clear(u.modules)
		u.execSig = sig
	}
	u.maps, u.ranges = m, moduleRanges(m)
	return true
}

// mapping is the mapping holding addr; the maps are read again (not too
// often) when none does.
func (u *Unwinder) mapping(addr uint64) (Mapping, bool) {
	if u.maps == nil {
		u.readMaps()
	}
	if m, ok := findMapping(u.maps, addr); ok {
		return m, true
	}
	if time.Since(u.mapsRead) < mapsRereadAfter || !u.readMaps() {
		return Mapping{}, false
	}
	return findMapping(u.maps, addr)
}

func findMapping(maps []Mapping, addr uint64) (Mapping, bool) {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > addr })
	if i < len(maps) && addr >= maps[i].Start {
		return maps[i], true
	}
	return Mapping{}, false
}

// regs are the registers known at one frame.
type regs struct {
	pc, sp, bp uint64
	haveBP     bool
}

// Unwind returns the stack from r, innermost first, reading the stack
// through mem; at most max frames (MaxStackFrames when max is not in
// 1..MaxStackFrames). It stops at the outermost frame (its return address
// undefined in the call-frame information), at a return address of 0 or
// outside every mapping, when the stack pointer would not grow, or at the
// end of the stack's mapping.
func (u *Unwinder) Unwind(r Regs, mem StackMemory, max int) []StackFrame {
	if max <= 0 || max > MaxStackFrames {
		max = MaxStackFrames
	}
	if r.PC == 0 || r.SP == 0 || mem == nil {
		return nil
	}
	u.win.reset(mem, 0, 0, &u.stats)
	u.bound(r.SP)
	u.stats.Stacks++
	cur := regs{pc: r.PC, sp: r.SP, bp: r.BP, haveBP: r.HaveBP}
	var out []StackFrame
	// interrupted: cur is where a signal interrupted the thread, not a
	// return address (looked up at its PC, not PC-1).
	interrupted, signals := false, 0
	for i := 0; i < max; i++ {
		sig := u.sigreturn(cur.pc)
		info := u.pcInfo(cur.pc, i > 0 && !interrupted && !sig)
		if !info.found && i > 0 {
			break
		}
		f := info.frame
		f.PC = cur.pc
		out = append(out, f)
		u.stats.Frames++
		var next regs
		var ok bool
		if sig && signals < maxSignalFrames {
			signals++
			next, ok = u.signalFrame(cur)
			if !ok || next.pc == 0 || next.sp == cur.sp {
				break
			}
			if next.sp < u.win.lo || next.sp >= u.win.hi {
				u.bound(next.sp) // the handler ran on another stack
			}
			cur, interrupted = next, true
			continue
		}
		next, ok = u.step(info.row, cur, f)
		if !ok || next.pc == 0 || next.sp <= cur.sp || next.sp > u.win.hi {
			break
		}
		cur, interrupted = next, false
	}
	return out
}

// bound sets the stack's bounds for sp: from it to the end of its
// mapping (unknownStackBytes when no mapping holds it).
func (u *Unwinder) bound(sp uint64) {
	hi := sp + unknownStackBytes
	if hi < sp {
		hi = ^uint64(0)
	}
	if m, ok := u.mapping(sp); ok {
		hi = m.End
	}
	u.win.lo, u.win.hi, u.win.n = sp, hi, 0
}

// maxSignalFrames bounds the signal frames one stack passes (a handler
// interrupted by another signal's).
const maxSignalFrames = 4

// sigreturnCode is glibc's x86-64 signal trampoline (__restore_rt, the
// handler's return address): mov $15, %rax (rt_sigreturn); syscall.
var sigreturnCode = [9]byte{0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05}

// sigreturn says whether pc is the signal trampoline, read through the
// stack's memory and cached.
func (u *Unwinder) sigreturn(pc uint64) bool {
	if is, seen := u.sigs[pc]; seen {
		return is
	}
	var code [9]byte
	u.stats.Reads++
	is := u.win.mem.ReadStack(pc, code[:]) && code == sigreturnCode
	if len(u.sigs) >= maxCachedPCs {
		clear(u.sigs)
	}
	u.sigs[pc] = is
	return is
}

// signalFrame reads the registers a signal interrupted from the signal
// frame at the trampoline's stack pointer: the kernel's ucontext, whose
// mcontext (at 40) holds rbp, rsp and rip at 10, 15 and 16 words in.
func (u *Unwinder) signalFrame(cur regs) (regs, bool) {
	const gregs = 40
	w := &u.win
	bp, ok1 := w.word(cur.sp + gregs + 10*8)
	sp, ok2 := w.word(cur.sp + gregs + 15*8)
	pc, ok3 := w.word(cur.sp + gregs + 16*8)
	if !ok1 || !ok2 || !ok3 {
		return regs{}, false
	}
	u.stats.SignalFrames++
	return regs{pc: pc, sp: sp, bp: bp, haveBP: true}, true
}

// step unwinds one frame: by its CFI row, else by the frame pointer,
// else by scanning the stack; false at the outermost frame or when
// nothing worked.
func (u *Unwinder) step(row unwindRow, cur regs, f StackFrame) (regs, bool) {
	w := &u.win
	if row.ok && row.outermost {
		return regs{}, false
	}
	if row.ok && (row.cfaReg == dwarfRSP || cur.haveBP) {
		base := cur.sp
		if row.cfaReg == dwarfRBP {
			base = cur.bp
		}
		cfa := base + uint64(row.cfaOff)
		ra, ok := w.word(cfa + uint64(row.raOff))
		if !ok {
			return regs{}, false
		}
		next := regs{pc: ra, sp: cfa, bp: cur.bp, haveBP: cur.haveBP}
		switch row.bp {
		case bpAtCFA:
			next.bp, next.haveBP = w.word(cfa + uint64(row.bpOff))
		case bpUnknown:
			next.haveBP = false
		}
		u.stats.CFIFrames++
		return next, true
	}
	if cur.haveBP && cur.bp >= cur.sp && cur.bp <= w.hi-16 {
		ra, ok1 := w.word(cur.bp + 8)
		bp, ok2 := w.word(cur.bp)
		if ok1 && ok2 && u.returnAddress(ra) {
			u.stats.FPFrames++
			return regs{pc: ra, sp: cur.bp + 16, bp: bp, haveBP: true}, true
		}
	}
	return u.scan(row, cur, f)
}

// scan looks up the stack from the stack pointer for the frame's return
// address: the first word that points just past a direct call of f's
// function, else the first that points just past any call instruction in
// an executable mapping, unless that call is a direct one into the start
// of another named function than f's. The locals of a frame hold stale
// return addresses that deeper calls left there: PostgreSQL's
// WaitEventSetWait, whose CFA needs rbp, kept sem_wait's and
// LWLockAcquire's below WaitLatch's. When the frame's CFI row is known but
// its CFA needs the unknown rbp, the slot found places the CFA, and with
// it rbp.
func (u *Unwinder) scan(row unwindRow, cur regs, f StackFrame) (regs, bool) {
	w := &u.win
	end := min(w.hi, cur.sp+maxScanBytes)
	first, v := uint64(0), uint64(0)
	for a := cur.sp; a >= cur.sp && a+8 <= end; a += 8 {
		x, ok := w.word(a)
		if !ok {
			break
		}
		if !u.returnAddress(x) {
			continue
		}
		into, other := u.callTarget(x, f)
		if other {
			continue
		}
		if first == 0 {
			first, v = a, x
		}
		if into || f.Function == "" {
			first, v = a, x
			break
		}
	}
	if first == 0 {
		return regs{}, false
	}
	u.stats.ScanFrames++
	next := regs{pc: v, sp: first + 8, bp: cur.bp, haveBP: cur.haveBP}
	if row.ok && row.cfaReg == dwarfRBP {
		cfa := first - uint64(row.raOff)
		next.sp = cfa
		switch row.bp {
		case bpAtCFA:
			next.bp, next.haveBP = w.word(cfa + uint64(row.bpOff))
		case bpSame:
			next.bp, next.haveBP = cfa-uint64(row.cfaOff), true
		default:
			next.haveBP = false
		}
	}
	return next, true
}

// returnAddress says whether v can be a return address: it lies in an
// executable mapping right after a call instruction (e8 rel32, or one of
// the ff /2 forms), whose bytes are read through the same memory, or it
// is the signal trampoline.
func (u *Unwinder) returnAddress(v uint64) bool {
	if v < 8 {
		return false
	}
	if ok, seen := u.calls[v]; seen {
		return ok
	}
	ok := false
	if m, found := u.mapping(v); found && len(m.Perms) >= 3 && m.Perms[2] == 'x' {
		var code [8]byte
		u.stats.Reads++
		// A signal handler returns to the trampoline, which no call
		// precedes.
		ok = u.win.mem.ReadStack(v-8, code[:]) && afterCall(code) || u.sigreturn(v)
	}
	if len(u.calls) >= maxCachedPCs {
		clear(u.calls)
	}
	u.calls[v] = ok
	return ok
}

// callTarget says whether the return address v follows a direct call
// (e8 rel32) into the start of f's function (into), or into the start of
// another named function (other: v is not f's caller's return address).
// An indirect call, a call into a PLT stub or into the middle of code, or
// a frame without a name says neither.
func (u *Unwinder) callTarget(v uint64, f StackFrame) (into, other bool) {
	if f.Function == "" {
		return false, false
	}
	var code [8]byte
	if !u.win.mem.ReadStack(v-8, code[:]) || code[3] != 0xe8 {
		return false, false
	}
	target := v + uint64(int64(int32(uint32(code[4])|uint32(code[5])<<8|uint32(code[6])<<16|uint32(code[7])<<24)))
	t := u.pcInfo(target, false)
	if !t.found || t.frame.Function == "" || t.frame.Offset != 0 {
		return false, false
	}
	return t.frame.Function == f.Function, t.frame.Function != f.Function
}

// afterCall says whether the 8 bytes before an address end with a call:
// e8 rel32, or ff /2 (call r/m64) in any of its lengths.
func afterCall(b [8]byte) bool {
	if b[3] == 0xe8 {
		return true
	}
	for k := 2; k <= 7; k++ {
		if b[8-k] != 0xff {
			continue
		}
		modrm := b[9-k]
		if modrm>>3&7 != 2 {
			continue
		}
		if callLen(modrm, b[10-k:]) == k {
			return true
		}
	}
	return false
}

// callLen is the length of an ff /2 instruction with modrm, sib the byte
// after it (when there is one).
func callLen(modrm byte, sib []byte) int {
	mod, rm := modrm>>6, modrm&7
	switch mod {
	case 3:
		return 2
	case 0:
		switch {
		case rm == 5:
			return 6 // rip + disp32
		case rm == 4:
			if len(sib) > 0 && sib[0]&7 == 5 {
				return 7 // SIB, no base: disp32
			}
			return 3
		}
		return 2
	case 1:
		if rm == 4 {
			return 4
		}
		return 3
	}
	if rm == 4 {
		return 7
	}
	return 6
}

// pcInfo is pc's frame and CFI row; caller says pc is a return address,
// looked up at pc-1 (a call may be a function's last instruction).
func (u *Unwinder) pcInfo(pc uint64, caller bool) pcInfo {
	key := pc << 1
	look := pc
	if caller {
		key |= 1
		look--
	}
	if info, ok := u.pcs[key]; ok {
		return info
	}
	info := u.lookupPC(pc, look)
	if len(u.pcs) >= maxCachedPCs {
		clear(u.pcs)
	}
	u.pcs[key] = info
	return info
}

func (u *Unwinder) lookupPC(pc, look uint64) pcInfo {
	m, ok := u.mapping(look)
	if !ok || len(m.Perms) < 3 || m.Perms[2] != 'x' {
		// Code runs only from executable memory: a "return address" in
		// data (a heap pointer the unwind took for one) ends the stack.
		return pcInfo{}
	}
	info := pcInfo{found: true}
	if !m.FileBacked() || m.Shared() {
		info.frame.Module, info.frame.Offset = m.Path, pc-m.Start
		if m.Path == "" {
			info.frame.Module = anonymousMemory
		}
		return info
	}
	first := m
	for _, r := range u.ranges {
		if r.path == m.Path && look >= r.start && look < r.end {
			first = r.mapping
			break
		}
	}
	um := u.module(first)
	info.frame.Module = um.name
	if um.tab == nil {
		info.frame.Offset = pc - um.start
		return info
	}
	vaddr, vlook := pc-um.bias, look-um.bias
	info.frame.Offset = vaddr
	if name, start, ok := um.tab.funcs.Load().lookup(vlook); ok {
		info.frame.Function, info.frame.Offset = demangleSymbol(name), vaddr-start
	}
	if file, line, ok := um.tab.lines.Load().lookup(vlook); ok {
		info.frame.File, info.frame.Line = file, line
	}
	info.row = um.tab.row(vlook)
	return info
}

// stackWindow is a chunk of one thread's stack read at once, read again
// further on when an unwind goes past it.
type stackWindow struct {
	mem    StackMemory
	lo, hi uint64 // the stack's bounds: from the stack pointer to its mapping's end
	base   uint64
	n      int
	buf    []byte
	chunk  uint64 // the size read at once
	stats  *UnwindStats
}

func (w *stackWindow) reset(mem StackMemory, lo, hi uint64, stats *UnwindStats) {
	if w.buf == nil {
		w.buf = make([]byte, stackChunk)
	}
	w.mem, w.lo, w.hi, w.n, w.stats, w.chunk = mem, lo, hi, 0, stats, stackChunk
}

// word reads the 8 bytes at addr, within the stack's bounds.
func (w *stackWindow) word(addr uint64) (uint64, bool) {
	if addr < w.lo || addr > w.hi-8 || w.hi < 8 {
		return 0, false
	}
	if addr >= w.base && addr-w.base <= uint64(w.n)-8 && w.n >= 8 {
		return binary.LittleEndian.Uint64(w.buf[addr-w.base:]), true
	}
	// A chunk from addr, clipped to the stack's end; when the memory
	// ends sooner than the maps said (or no mapping was known), halves
	// until a read succeeds, and keeps that size for the stack's
	// further reads. Nothing readable: the stack ends here.
	first := w.n == 0 && w.chunk == stackChunk
	for size := w.chunk; size >= 8; size /= 2 {
		n := min(size, w.hi-addr)
		if first {
			// The first read ends a page past the stack pointer's: /proc's
			// reads cost by the page, and a blocked thread's frames
			// mostly fit.
			n = min(n, (addr|4095)+1+4096-addr)
		}
		if n < 8 {
			break
		}
		w.stats.Reads++
		if w.mem.ReadStack(addr, w.buf[:n]) {
			w.base, w.n, w.chunk = addr, int(n), size
			return binary.LittleEndian.Uint64(w.buf), true
		}
	}
	w.n, w.hi = 0, addr
	return 0, false
}
