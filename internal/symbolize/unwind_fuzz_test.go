package symbolize_test

import (
	"encoding/binary"
	"testing"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
)

// fuzzStackAddr is where the fuzzed stack is placed: an address no
// mapping of the test holds, so the unwinder bounds it by itself.
const fuzzStackAddr = 0x100000000000

// fuzzMemory serves the fuzzed stack at fuzzStackAddr and the target's
// memory (its code, for the scan's call check) elsewhere.
type fuzzMemory struct {
	stack []byte
	self  *procfs.MemReader
}

func (m *fuzzMemory) ReadStack(addr uint64, b []byte) bool {
	if addr >= fuzzStackAddr && addr-fuzzStackAddr < uint64(len(m.stack)) {
		if uint64(len(b)) > uint64(len(m.stack))-(addr-fuzzStackAddr) {
			return false
		}
		copy(b, m.stack[addr-fuzzStackAddr:])
		return true
	}
	return m.self.ReadStack(addr, b)
}

// FuzzUnwind unwinds random stacks in a real C program (stacks.c, -O2):
// the unwinder reads the fuzzed stack, runs libc's and the program's
// .eh_frame and scans for return addresses, and must neither panic nor
// loop nor pass MaxStackFrames, whatever the bytes. The program counter
// and any word whose top bits are 01 are turned into an address in one of
// the program's executable mappings, so that the bytes reach the paths
// past the first frame.
func FuzzUnwind(f *testing.F) {
	p := testnative.StartWith(f, testnative.Options{Flags: []string{"-O2"}}, "stacks")
	fs := procfs.NewFS("/proc")
	u := symbolize.NewUnwinder(fs.Target(p.PID))
	target := fs.NewMemReader(p.PID)
	maps, err := fs.Maps(p.PID)
	if err != nil {
		f.Fatal(err)
	}
	var code []symbolize.Mapping
	for _, m := range maps {
		if m.Perms == "r-xp" && m.FileBacked() {
			code = append(code, m)
		}
	}
	if len(code) == 0 {
		f.Fatal("no code mapped")
	}
	inCode := func(w uint64) uint64 {
		m := code[w%uint64(len(code))]
		return m.Start + (w>>8)%(m.End-m.Start)
	}
	seed := make([]byte, 256)
	for i := 0; i+8 <= len(seed); i += 16 {
		binary.LittleEndian.PutUint64(seed[i:], 1<<62|uint64(i*977))
	}
	f.Add(uint64(0), uint64(0), seed)
	f.Add(uint64(123456), uint64(8), seed)
	f.Add(uint64(99999), uint64(1<<20), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, pc, bp uint64, data []byte) {
		stack := make([]byte, len(data)&^7)
		copy(stack, data)
		for i := 0; i+8 <= len(stack); i += 8 {
			if w := binary.LittleEndian.Uint64(stack[i:]); w>>62 == 1 {
				binary.LittleEndian.PutUint64(stack[i:], inCode(w&(1<<62-1)))
			}
		}
		mem := &fuzzMemory{stack: stack, self: target}
		r := symbolize.Regs{PC: inCode(pc), SP: fuzzStackAddr, BP: fuzzStackAddr + bp%4096, HaveBP: bp&1 == 0}
		frames := u.Unwind(r, mem, symbolize.MaxStackFrames)
		if len(frames) > symbolize.MaxStackFrames {
			t.Fatalf("%d frames", len(frames))
		}
		for _, fr := range frames {
			_ = fr.Name()
		}
	})
}
