package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"path"
	"sort"
	"strconv"
)

// Line tables. Where a binary or its debug file has DWARF line
// information (.debug_line), a frame carries the source file and line of
// its address: the line that waits, and each caller's line of the call.
// The rows of every compile unit are read once per binary into a compact
// table (16 bytes a row), shared by every Unwinder like the rest of the
// binary's tables.

// maxDWARFBytes bounds the debug sections a binary's line table is read
// from (debug/dwarf keeps them in memory while the table is built): a
// server's full debug file can hold hundreds of megabytes, more than the
// memory bound allows beside everything else. Such a binary's frames keep
// their names, without lines.
const maxDWARFBytes = 64 << 20

// maxLineRows bounds a line table (16 bytes a row).
const maxLineRows = 2 << 20

// lineTable maps a binary's link-time addresses to file and line.
type lineTable struct {
	addrs []uint64
	rows  []lineRow
	files []string
}

// lineRow is where the code from its address on comes from; file -1 marks
// the end of a sequence (no line until the next row).
type lineRow struct {
	file int32
	line uint32
}

func (t *lineTable) bytes() int {
	if t == nil {
		return 0
	}
	n := len(t.addrs)*8 + len(t.rows)*8
	for _, f := range t.files {
		n += len(f) + 16
	}
	return n
}

// lookup returns the file and line of vaddr; ok is false where the table
// has none.
func (t *lineTable) lookup(vaddr uint64) (file string, line int, ok bool) {
	if t == nil || len(t.addrs) == 0 {
		return "", 0, false
	}
	i := sort.Search(len(t.addrs), func(i int) bool { return t.addrs[i] > vaddr }) - 1
	if i < 0 || t.rows[i].file < 0 || t.rows[i].line == 0 {
		return "", 0, false
	}
	return t.files[t.rows[i].file], int(t.rows[i].line), true
}

// debugSectionBytes adds up the sizes of the DWARF sections debug/dwarf
// reads.
func debugSectionBytes(f *elf.File) uint64 {
	var n uint64
	for _, s := range f.Sections {
		if len(s.Name) > 7 && (s.Name[:7] == ".debug_" || s.Name[:7] == ".zdebug") {
			n += s.Size
		}
	}
	return n
}

// loadLineTable reads f's line table; nil when f has no .debug_line, its
// debug sections are over maxDWARFBytes, or they do not parse.
func loadLineTable(f *elf.File) *lineTable {
	if f == nil || f.Section(".debug_line") == nil || debugSectionBytes(f) > maxDWARFBytes {
		return nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	return buildLineTable(d)
}

// buildLineTable reads every compile unit's line program.
func buildLineTable(d *dwarf.Data) *lineTable {
	t := &lineTable{}
	fileIdx := map[string]int32{}
	type entry struct {
		addr uint64
		row  lineRow
	}
	var entries []entry
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		r.SkipChildren()
		lr, err := d.LineReader(cu)
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				break // io.EOF, or a malformed program: what was read stands
			}
			if len(entries) >= maxLineRows {
				break
			}
			row := lineRow{file: -1}
			if !le.EndSequence && le.File != nil {
				name := le.File.Name
				idx, ok := fileIdx[name]
				if !ok {
					idx = int32(len(t.files))
					fileIdx[name] = idx
					t.files = append(t.files, name)
				}
				row = lineRow{file: idx, line: uint32(max(le.Line, 0))}
			}
			entries = append(entries, entry{le.Address, row})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	// Sequences may come in any order; within one address the last row
	// is the one that holds (a sequence's end and the next one's start
	// share an address: the start wins).
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].addr < entries[j].addr })
	t.addrs = make([]uint64, 0, len(entries))
	t.rows = make([]lineRow, 0, len(entries))
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].addr == e.addr && entries[i+1].row.file >= 0 {
			continue
		}
		if n := len(t.rows); n > 0 && t.rows[n-1] == e.row {
			continue // the same line on: one row does
		}
		t.addrs = append(t.addrs, e.addr)
		t.rows = append(t.rows, e.row)
	}
	return t
}

// FrameLine is a frame's source position: its file's path as the line
// table gives it, and its line (0: none).
type FrameLine struct {
	File string
	Line int
}

// FrameLines are the source positions of a stack's frames, outermost
// first (the order of a folded stack); nil when no frame has one.
func FrameLines(st []StackFrame) []FrameLine {
	var out []FrameLine
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].Line > 0 && out == nil {
			out = make([]FrameLine, len(st))
		}
		if out != nil {
			out[len(st)-1-i] = FrameLine{File: st[i].File, Line: st[i].Line}
		}
	}
	return out
}

// FileLine names a frame's source position as "file.c:42" (the file's
// base name), "" when the frame has none.
func (f StackFrame) FileLine() string {
	if f.File == "" || f.Line <= 0 {
		return ""
	}
	return path.Base(f.File) + ":" + strconv.Itoa(f.Line)
}
