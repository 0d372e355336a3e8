package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
)

func FuzzDebugLink(f *testing.F) {
	f.Add([]byte("stacks.debug\x00\x00\x00\x00\x12\x34\x56\x78"))
	f.Add([]byte("../x\x00\x00\x00\x00\x01\x02\x03\x04"))
	f.Add([]byte("\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, _, ok := parseDebugLink(b, binary.LittleEndian.Uint32)
		if ok && (name == "" || strings.Contains(name, "/") || name == "." || name == "..") {
			t.Fatalf("took %q", name)
		}
	})
}

func FuzzMiniDebugInfo(f *testing.F) {
	f.Add([]byte{0xfd, '7', 'z', 'X', 'Z', 0})
	f.Add([]byte("not xz"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, df := parseMiniDebugInfo(b); r != nil {
			_ = loadFuncTable(r, r.Size(), df, elf.SHT_SYMTAB)
		}
	})
}
