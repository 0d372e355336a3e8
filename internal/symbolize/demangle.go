package symbolize

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// maxMangledLen bounds the names handed to the demangler: a symbol name
// is the target's (any binary it maps), and a real C++ data symbol is far
// shorter.
const maxMangledLen = 1024

// demangleSymbol returns the C++ name behind an Itanium-mangled symbol
// ("_ZN5queue4lockE" → "queue::lock", a function's static
// "_ZZ4mainE1m" → "main::m"), or name itself when it is not one or the
// demangler refuses it. The demangler is github.com/ianlancetaylor/demangle
// (the one pprof uses); it is bounded by the input's length here and, as
// a last guard for a hostile table, a panic inside it leaves the name
// mangled.
func demangleSymbol(name string) (out string) {
	if !strings.HasPrefix(name, "_Z") || len(name) > maxMangledLen {
		return name
	}
	defer func() {
		if recover() != nil {
			out = name
		}
	}()
	d, err := demangle.ToString(name, demangle.NoClones)
	if err != nil || d == "" {
		return name
	}
	if len(d) > maxNameLen {
		d = d[:maxNameLen]
	}
	return d
}
