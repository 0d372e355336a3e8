package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctprof/ctprof/internal/testnative"
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

// FuzzVerifyDebugFile reads what a debuginfod server sent as the debug
// file of a build-id: garbage, a truncated or mangled ELF file, another
// build's. Nothing panics, and a file is kept only when it is an ELF file
// with that build-id and a symbol table, as read again when opened.
func FuzzVerifyDebugFile(f *testing.F) {
	bin := testnative.Build(f, "stacks")
	want := ""
	if ef, err := elf.Open(bin); err == nil {
		want = BuildID(ef)
		ef.Close()
	}
	if b, err := os.ReadFile(bin); err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("<html>404 Not Found</html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "debuginfo")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if VerifyDebugFile(p, want) != nil {
			return
		}
		file, ef := openFetchedDebugFile(p, want)
		if file == nil {
			t.Fatal("verified, then refused when opened")
		}
		defer file.Close()
		if got := BuildID(ef); got != want || ef.SectionByType(elf.SHT_SYMTAB) == nil {
			t.Fatalf("kept a file with build-id %q (want %q)", got, want)
		}
	})
}
