package symbolize

import (
	"testing"
)

// FuzzEHTable parses random call-frame sections as .eh_frame and
// .debug_frame (a binary's are the target's bytes too) and establishes
// rows in them: no panic, no loop.
func FuzzEHTable(f *testing.F) {
	// The start of a real .eh_frame: a CIE (zR, rsp+8, RA at cfa-8) and
	// one FDE.
	f.Add([]byte{
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
		0x14, 0, 0, 0, 0x1c, 0, 0, 0, 0xe0, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0x41, 0x0e, 0x10, 0, 0,
	}, uint64(0x1000))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, vaddr uint64) {
		for _, addr := range []uint64{0x2000, 0} {
			tab, err := newEHTable(data, addr)
			if err != nil {
				continue
			}
			_ = tab.row(vaddr)
			for _, fde := range tab.fdes {
				_ = tab.row(fde.begin)
				_ = tab.row(fde.begin + uint64(fde.size) - 1)
			}
		}
	})
}
