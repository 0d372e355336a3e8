package procfs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lines from a JDK 17 JVM's maps: libstdc++'s data segment is followed by
// its .bss, but the anonymous mapping after the locale file LC_CTYPE is a
// malloc arena where HotSpot keeps its Heap_lock; naming a futex there
// "LC_CTYPE" made it look like a binary's static lock.
func TestModuleRangesBssOnlyAfterDataSegments(t *testing.T) {
	maps, err := parseMaps([]byte(`7f25fe214000-7f25fe217000 rw-p 00214000 fe:00 326789                     /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
7f25fe217000-7f25fe21a000 rw-p 00000000 00:00 0 
7f25fe22a000-7f25fe281000 r--p 00000000 fe:00 316526                     /usr/lib/locale/C.utf8/LC_CTYPE
7f25fe281000-7f25fe300000 rw-p 00000000 00:00 0 
`))
	require.NoError(t, err)
	got := map[string][2]uint64{}
	for _, r := range moduleRanges(maps) {
		got[r.path] = [2]uint64{r.start, r.end}
	}
	assert.Equal(t, map[string][2]uint64{
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30": {0x7f25fe214000, 0x7f25fe21a000},
		"/usr/lib/locale/C.utf8/LC_CTYPE":               {0x7f25fe22a000, 0x7f25fe281000},
	}, got)
}
