package symbolize

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Demangling leaves C names and refused input alone, and bounds what it
// is given: a symbol name is the target's.
func TestDemangleSymbol(t *testing.T) {
	assert.Equal(t, "queue::lock", demangleSymbol("_ZN5queue4lockE"))
	assert.Equal(t, "main::m", demangleSymbol("_ZZ4mainE1m"))
	assert.Equal(t, "global_lock", demangleSymbol("global_lock"))
	assert.Equal(t, "_Zgarbage", demangleSymbol("_Zgarbage"))
	long := "_ZN" + strings.Repeat("4abcd", 400) + "E"
	assert.Equal(t, long, demangleSymbol(long), "too long to demangle: left as it is")
}
