package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// ehTable is one binary's call-frame information (.eh_frame, else
// .debug_frame), kept compact: the section's bytes and, per FDE, its
// address range and offset. delve's parser reads the whole section once
// to find the FDEs' ranges (its FrameDescriptionEntry objects, a pointer
// and a map's worth each, are dropped after); a lookup hands delve the
// one CIE and FDE it needs and lets it run that FDE's program.
type ehTable struct {
	data []byte
	// addr is the section's link-time address for .eh_frame, whose
	// pointers are relative to where it is loaded; 0 for .debug_frame.
	addr uint64
	fdes []ehFDE // by begin
}

// ehFDE is an FDE's range (link-time addresses) and its offset in data.
type ehFDE struct {
	begin uint64
	size  uint32
	off   uint32
}

// Bounds on a binary's call-frame information: a hostile binary's section
// can claim anything.
const (
	maxEHFrameBytes = 64 << 20
	maxFDEs         = 1 << 19
)

// x86-64 DWARF register numbers.
const (
	dwarfRBP = 6
	dwarfRSP = 7
	dwarfRA  = 16
)

// loadEHTable reads f's .eh_frame, or its .debug_frame when it has none;
// nil when it has neither or they cannot be parsed.
func loadEHTable(f *elf.File) *ehTable {
	if t := loadSection(f, ".eh_frame"); t != nil {
		return t
	}
	return loadSection(f, ".debug_frame")
}

// loadSection reads the call-frame section name of f (.eh_frame or
// .debug_frame); nil when f has none or it cannot be parsed.
func loadSection(f *elf.File, name string) *ehTable {
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		return nil
	}
	sec := f.Section(name)
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil
	}
	if name == ".eh_frame" {
		if sec.Addr == 0 {
			return nil
		}
		return parseEHTable(sec, sec.Addr)
	}
	return parseEHTable(sec, 0)
}

func parseEHTable(sec *elf.Section, addr uint64) *ehTable {
	if sec.Size > maxEHFrameBytes {
		return nil
	}
	data, err := sec.Data()
	if err != nil || len(data) == 0 || len(data) > maxEHFrameBytes {
		return nil
	}
	t, err := newEHTable(data, addr)
	if err != nil {
		return nil
	}
	return t
}

// newEHTable indexes the FDEs of a call-frame section: delve parses it,
// and a walk over the records' lengths pairs each FDE delve returns (in
// the section's order) with its offset.
func newEHTable(data []byte, addr uint64) (t *ehTable, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("call-frame information: %v", r)
		}
	}()
	// Counted first: delve keeps an object per FDE, and a hostile
	// section of tiny FDEs would take gigabytes.
	offs := fdeOffsets(data, addr != 0)
	if len(offs) > maxFDEs {
		return nil, errors.New("call-frame information: too many FDEs")
	}
	fdes, err := frame.Parse(data, binary.LittleEndian, 0, 8, addr)
	if err != nil {
		return nil, err
	}
	if len(offs) != len(fdes) {
		return nil, errors.New("call-frame information: FDEs do not match their records")
	}
	t = &ehTable{data: data, addr: addr, fdes: make([]ehFDE, 0, len(fdes))}
	for i, fde := range fdes {
		size := fde.End() - fde.Begin()
		if size == 0 || size > 1<<32-1 {
			continue
		}
		t.fdes = append(t.fdes, ehFDE{begin: fde.Begin(), size: uint32(size), off: uint32(offs[i])})
	}
	sort.SliceStable(t.fdes, func(i, j int) bool { return t.fdes[i].begin < t.fdes[j].begin })
	return t, nil
}

// fdeOffsets walks a call-frame section record by record (a 4-byte
// length, then the CIE id or pointer) and returns the FDEs' offsets, as
// delve's parser meets them.
func fdeOffsets(data []byte, eh bool) []int {
	var offs []int
	for off := 0; off+4 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			off += 4
			continue
		}
		if off+8 > len(data) || n == 0xffffffff {
			break
		}
		id := binary.LittleEndian.Uint32(data[off+4:])
		if cie := (eh && id == 0) || (!eh && id == 0xffffffff); !cie {
			if len(offs) > maxFDEs {
				break
			}
			offs = append(offs, off)
		}
		if n > len(data)-off-4 {
			break
		}
		off += 4 + n
	}
	return offs
}

// bytes is what the table holds.
func (t *ehTable) bytes() int {
	if t == nil {
		return 0
	}
	return cap(t.data) + cap(t.fdes)*16
}

// find returns the FDE covering the link-time address vaddr.
func (t *ehTable) find(vaddr uint64) (ehFDE, bool) {
	if t == nil {
		return ehFDE{}, false
	}
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].begin > vaddr }) - 1
	if i < 0 || vaddr-t.fdes[i].begin >= uint64(t.fdes[i].size) {
		return ehFDE{}, false
	}
	return t.fdes[i], true
}

// unwindRow is what the unwinder needs of one CFI row: how to find the
// CFA, where the return address and rbp were saved.
type unwindRow struct {
	ok bool
	// cfaReg is dwarfRSP or dwarfRBP; the CFA is that register plus
	// cfaOff.
	cfaReg uint8
	cfaOff int64
	// outermost: the return address is undefined (the thread's first
	// frame).
	outermost bool
	raOff     int64
	bp        bpRule
	bpOff     int64
}

// bpRule is what a row says of the caller's rbp.
type bpRule uint8

const (
	bpSame    bpRule = iota // unchanged (callee-saved, not saved here)
	bpAtCFA                 // saved at CFA + bpOff
	bpUnknown               // anything else
)

// row runs the CFI of the FDE covering vaddr up to vaddr.
func (t *ehTable) row(vaddr uint64) unwindRow {
	fde, ok := t.find(vaddr)
	if !ok {
		return unwindRow{}
	}
	rec, ehAddr, ok := t.fdeRecord(fde)
	if !ok {
		return unwindRow{}
	}
	return establishRow(rec, ehAddr, vaddr)
}

// fdeRecord returns a copy of the FDE's CIE and the FDE, the FDE's CIE
// pointer rewritten to the copy's, and the address at which delve must
// take the copy to be loaded for the FDE's relative pointers to keep
// their meaning.
func (t *ehTable) fdeRecord(fde ehFDE) ([]byte, uint64, bool) {
	d := t.data
	off := uint64(fde.off)
	if off+8 > uint64(len(d)) {
		return nil, 0, false
	}
	n := uint64(binary.LittleEndian.Uint32(d[off:]))
	ptr := uint64(binary.LittleEndian.Uint32(d[off+4:]))
	if n < 4 || off+4+n > uint64(len(d)) {
		return nil, 0, false
	}
	var cie uint64
	if t.addr != 0 {
		if ptr > off+4 {
			return nil, 0, false
		}
		cie = off + 4 - ptr
	} else {
		cie = ptr
	}
	if cie+8 > uint64(len(d)) {
		return nil, 0, false
	}
	cn := uint64(binary.LittleEndian.Uint32(d[cie:]))
	if cn < 4 || cie+4+cn > uint64(len(d)) {
		return nil, 0, false
	}
	cieLen := 4 + cn
	rec := make([]byte, 0, cieLen+4+n)
	rec = append(rec, d[cie:cie+cieLen]...)
	rec = append(rec, d[off:off+4+n]...)
	var newPtr uint32 // .debug_frame: the CIE's offset
	if t.addr != 0 {
		newPtr = uint32(cieLen + 4) // .eh_frame: back from the pointer
	}
	binary.LittleEndian.PutUint32(rec[cieLen+4:], newPtr)
	var ehAddr uint64
	if t.addr != 0 {
		ehAddr = t.addr + off - cieLen
		if ehAddr == 0 {
			return nil, 0, false
		}
	}
	return rec, ehAddr, true
}

// establishRow parses one CIE and FDE with delve and runs the FDE's
// program up to vaddr. delve can panic on a malformed program (a
// DW_CFA_restore_state without its remember): that is no row.
func establishRow(rec []byte, ehAddr, vaddr uint64) (row unwindRow) {
	defer func() {
		if recover() != nil {
			row = unwindRow{}
		}
	}()
	fdes, err := frame.Parse(rec, binary.LittleEndian, 0, 8, ehAddr)
	if err != nil || len(fdes) != 1 || !fdes[0].Cover(vaddr) {
		return unwindRow{}
	}
	fc, err := fdes[0].EstablishFrame(vaddr)
	if err != nil || fc == nil {
		return unwindRow{}
	}
	if fc.CFA.Rule != frame.RuleCFA || fc.CFA.Reg != dwarfRSP && fc.CFA.Reg != dwarfRBP {
		return unwindRow{}
	}
	row = unwindRow{ok: true, cfaReg: uint8(fc.CFA.Reg), cfaOff: fc.CFA.Offset}
	ra, ok := fc.Regs[fc.RetAddrReg]
	switch {
	case fc.RetAddrReg != dwarfRA:
		return unwindRow{}
	case !ok || ra.Rule == frame.RuleUndefined:
		row.outermost = true
	case ra.Rule == frame.RuleOffset:
		row.raOff = ra.Offset
	default:
		return unwindRow{}
	}
	switch bp, ok := fc.Regs[dwarfRBP]; {
	case !ok || bp.Rule == frame.RuleSameVal:
		row.bp = bpSame
	case bp.Rule == frame.RuleOffset:
		row.bp, row.bpOff = bpAtCFA, bp.Offset
	default:
		row.bp = bpUnknown
	}
	return row
}

// fdeCount is the number of FDEs, for the benchmark.
func (t *ehTable) fdeCount() int {
	if t == nil {
		return 0
	}
	return len(t.fdes)
}
