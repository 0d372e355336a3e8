package symbolize

import (
	"bytes"
	"debug/elf"
	"os"
	"testing"

	"github.com/ctprof/ctprof/internal/testnative"
)

// FuzzLineTable reads line tables from mangled binaries: no panic, and
// every row found names a file of the table.
func FuzzLineTable(f *testing.F) {
	if b, err := os.ReadFile(testnative.Build(f, "stacks")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ef, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		lt := loadLineTable(ef)
		if lt == nil {
			return
		}
		for i := 0; i < len(lt.addrs); i += 1 + len(lt.addrs)/64 {
			if file, line, ok := lt.lookup(lt.addrs[i]); ok && (file == "" || line <= 0) {
				t.Fatalf("row %d: %q:%d", i, file, line)
			}
		}
	})
}
