package symbolize

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctprof/ctprof/internal/testjvm"
)

// libjvms are the libjvm.so of the JDKs the tests use.
func libjvms(b *testing.B) map[string]string {
	return map[string]string{
		"jdk17": filepath.Join(testjvm.JDK17(b).Home, "lib", "server", "libjvm.so"),
		"jdk25": filepath.Join(testjvm.JDK25(b).Home, "lib", "server", "libjvm.so"),
	}
}

// BenchmarkLoadSymbols loads the data symbols of OpenJDK 17's and Temurin
// 25's libjvm.so as the symbolizer does ("lazy": the symbol table through
// a small buffer, no names), and, in the same run, the way it did before
// ("eager": both sections read whole, every name a string) and debug/elf's
// Symbols and DynamicSymbols.
//
//	go test -run '^$' -bench LoadSymbols -benchmem -count 3 ./internal/symbolize/
func BenchmarkLoadSymbols(b *testing.B) {
	for _, jdk := range []string{"jdk17", "jdk25"} {
		file, err := os.Open(libjvms(b)[jdk])
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		f, err := elf.NewFile(file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(jdk+"/lazy", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				loadSymbols(file, f, false)
			}
		})
		b.Run(jdk+"/eager", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				loadSymbolsEager(f)
			}
		})
		b.Run(jdk+"/debug-elf-all", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				syms, _ := f.Symbols()
				dyn, _ := f.DynamicSymbols()
				_ = append(syms, dyn...)
			}
		})
	}
}
