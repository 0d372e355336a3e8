package symbolize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The name of an address no mapping held is the address; the short name
// drops the module's part only when a symbol names the address.
func TestLocationShortName(t *testing.T) {
	assert.Equal(t, "0x7f0012340", Location{Address: 0x7f0012340}.String())
	assert.Equal(t, "contended_mutex", Location{Module: "app", Offset: 0x4160, Symbol: "contended_mutex"}.ShortName())
	assert.Equal(t, "work_ready+0x28", Location{Module: "app", Offset: 0x4108, Symbol: "work_ready", SymbolOffset: 0x28}.ShortName())
	assert.Equal(t, "[heap]+0x10", Location{Module: "[heap]", Offset: 0x10}.ShortName())
}
