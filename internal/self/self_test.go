package self

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A one-sample run collects garbage less (GOGC 400) within a 256 MB heap,
// and gives the settings back; a GOGC or GOMEMLIMIT the user set wins.
func TestOneSampleRunCollectsLess(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent := debug.SetGCPercent(100)
	defer debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	restore := CollectLessForOneSample()
	assert.Equal(t, 400, debug.SetGCPercent(-1))
	debug.SetGCPercent(400)
	assert.Equal(t, min(limit, int64(oneSampleHeapLimit)), debug.SetMemoryLimit(-1))
	restore()
	assert.Equal(t, 100, debug.SetGCPercent(100))
	assert.Equal(t, limit, debug.SetMemoryLimit(-1))

	t.Setenv("GOGC", "50")
	CollectLessForOneSample()()
	assert.Equal(t, 100, debug.SetGCPercent(100), "the user's GOGC is left alone")
}
