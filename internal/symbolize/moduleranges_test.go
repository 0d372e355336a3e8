package symbolize

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Lines from a JDK 17 JVM's maps: libstdc++'s data segment is followed by
// its .bss, but the anonymous mapping after the locale file LC_CTYPE is a
// malloc arena where HotSpot keeps its Heap_lock; naming a futex there
// "LC_CTYPE" made it look like a binary's static lock.
func TestModuleRangesBssOnlyAfterDataSegments(t *testing.T) {
	maps := []Mapping{
		{Start: 0x7f25fe214000, End: 0x7f25fe217000, Perms: "rw-p", Offset: 0x214000, DevMajor: 0xfe, Inode: 326789, Path: "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"},
		{Start: 0x7f25fe217000, End: 0x7f25fe21a000, Perms: "rw-p"},
		{Start: 0x7f25fe22a000, End: 0x7f25fe281000, Perms: "r--p", DevMajor: 0xfe, Inode: 316526, Path: "/usr/lib/locale/C.utf8/LC_CTYPE"},
		{Start: 0x7f25fe281000, End: 0x7f25fe300000, Perms: "rw-p"},
	}
	got := map[string][2]uint64{}
	for _, r := range moduleRanges(maps) {
		got[r.path] = [2]uint64{r.start, r.end}
	}
	assert.Equal(t, map[string][2]uint64{
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30": {0x7f25fe214000, 0x7f25fe21a000},
		"/usr/lib/locale/C.utf8/LC_CTYPE":               {0x7f25fe22a000, 0x7f25fe281000},
	}, got)
}
