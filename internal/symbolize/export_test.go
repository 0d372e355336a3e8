package symbolize

import "fmt"

// Hooks for the tests of package symbolize_test, which read live
// processes through internal/procfs (that imports this package, so those
// tests cannot live inside it).

// Querying reports whether the symbolizer resolves through PROCMAP_QUERY.
func (s *Symbolizer) Querying() bool { return s.query != nil }

// QueryOff makes the symbolizer read the maps text, as on an older kernel.
func (s *Symbolizer) QueryOff() { s.noQuery = true }

// QueryGivenUp reports that the symbolizer turned to the maps text for good.
func (s *Symbolizer) QueryGivenUp() bool { return s.noQuery }

// ReadMappings are the mappings of the maps text the symbolizer read.
func (s *Symbolizer) ReadMappings() []Mapping { return s.maps }

// HasModule reports that the binary at path has its symbols loaded.
func (s *Symbolizer) HasModule(path string) bool { _, ok := s.modules[path]; return ok }

// ModuleBias is the load bias of the binary mapped first at m.
func (s *Symbolizer) ModuleBias(m Mapping) uint64 { return s.module(m.Path, m).bias }

// SetQueryBudget sets queryBudget until the returned func restores it.
func SetQueryBudget(n int) (restore func()) {
	old := queryBudget
	queryBudget = n
	return func() { queryBudget = old }
}

// QueryBudget is queryBudget.
func QueryBudget() int { return queryBudget }

// SymbolAddress is the address of the data symbol name in the binary
// mapped first at m (0 when it has none).
func (s *Symbolizer) SymbolAddress(m Mapping, name string) (uint64, error) {
	em := s.module(m.Path, m)
	if em.err != nil {
		return 0, em.err
	}
	for i, sym := range em.syms.syms {
		if em.syms.name(i) == name {
			return em.bias + sym.value, nil
		}
	}
	return 0, nil
}

// ClearTableCache empties the unwind tables shared by unwinders, so the
// next unwind loads them cold.
func ClearTableCache() {
	tableCache.Lock()
	tableCache.m = nil
	tableCache.Unlock()
}

// TableSizes says what each module's loaded tables hold, part by part.
func (u *Unwinder) TableSizes() []string {
	var out []string
	for _, m := range u.modules {
		if m.tab != nil {
			out = append(out, fmt.Sprintf("%s: eh %d bytes (%d FDEs, section %d), funcs %d bytes (%d functions, names %d)", m.name,
				m.tab.eh.bytes(), m.tab.eh.fdeCount(), len(m.tab.eh.data), m.tab.funcs.Load().bytes(), len(m.tab.funcs.Load().funcs), len(m.tab.funcs.Load().names)))
		}
	}
	return out
}
