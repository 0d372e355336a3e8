package sample

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
	"golang.org/x/sys/unix"
)

// The futex words of a tree of processes are keyed as the kernel keys
// futexes (kernel/futex/core.c, get_futex_key): a private word
// (FUTEX_PRIVATE_FLAG) and a shared word in a process's own memory by the
// process and the address, a shared word in shared memory by the object
// mapped and the word's offset in it, whatever address each process maps
// the object at. PostgreSQL's main segment is inherited by every backend
// at one address, but its dynamic segments are mapped by each backend
// that attaches them wherever there is room; memfd and POSIX shm objects
// are mapped after fork as often as before. A key is a 64-bit word, as the
// analysis keys futexes by address:
//
//   - a word of a process's own: its address with the process's tag (its
//     index in the tree in the top 16 bits, which no user address has on
//     x86-64 and arm64; 0 for the target itself);
//   - a word of a shared object: the address and tag of the process the
//     object was first seen mapped in, moved by the word's offset from
//     that mapping. So a key never changes during the run, and two words
//     of one object keep their distance (a glibc condition's two signal
//     words are told one by it). A key is no process's own word where the
//     first process maps the object; a word of a part of the object that
//     process does not map (another window of a large file) gets a key
//     past its mapping, which one of its own words could share: no server
//     here maps windows of one object so, and the tags keep every other
//     process's words apart.

// maxSharedObjects bounds the shared objects a tree remembers; a word of
// an object past the bound is keyed as its process's own.
const maxSharedObjects = 4096

// sharedObject is a mapped object of shared memory: a file, a memfd, a
// POSIX or System V segment, or a shared anonymous mapping (each has an
// inode of its own).
type sharedObject struct {
	devMajor, devMinor uint32
	inode              uint64
}

// wordKey is the tree's key of the futex word at addr in the process whose
// symbolizer is sym and whose tag is tag; private says the waits on it
// carry FUTEX_PRIVATE_FLAG.
func (t *treeState) wordKey(sym *symbolize.Symbolizer, addr uint64, private bool, tag uint64) uint64 {
	own := addr | tag
	if private || sym == nil {
		return own
	}
	r, err := sym.ResolveRegion(addr)
	if err != nil || r.Shared.IsZero() {
		return own
	}
	obj := sharedObject{r.Shared.DevMajor, r.Shared.DevMinor, r.Shared.Inode}
	base, ok := t.shared[obj]
	if !ok {
		if r.Shared.Offset > addr || len(t.shared) >= maxSharedObjects {
			return own
		}
		// Where offset 0 of the object would lie in this process.
		base = (addr - r.Shared.Offset) | tag
		if t.shared == nil {
			t.shared = map[sharedObject]uint64{}
		}
		t.shared[obj] = base
	}
	return base + r.Shared.Offset
}

// keyWords keys one process's part of a tree's sample: its threads'
// futex words, its futex waits and the fast reads' and the kernel's
// futexes, with the process's symbolizer and tag.
func (t *treeState) keyWords(sym *symbolize.Symbolizer, tag uint64, threads []snapshot.OSThread, futexes []snapshot.FutexWait, fr *snapshot.FastReads, ft *snapshot.FutexTrace) {
	for i := range threads {
		th := &threads[i]
		if th.Syscall == unix.SYS_FUTEX {
			th.SyscallArgs[0] = t.wordKey(sym, th.SyscallArgs[0], th.SyscallArgs[1]&futexPrivateFlag != 0, tag)
		}
	}
	for i := range futexes {
		futexes[i].Address = t.wordKey(sym, futexes[i].Address, privateOp(futexes[i].Op), tag)
	}
	if fr != nil {
		for i := range fr.Futexes {
			fr.Futexes[i].Address = t.wordKey(sym, fr.Futexes[i].Address, privateOp(fr.Futexes[i].Op), tag)
		}
	}
	if ft != nil {
		for i := range ft.Futexes {
			ft.Futexes[i].Address = t.wordKey(sym, ft.Futexes[i].Address, privateOp(ft.Futexes[i].Op), tag)
		}
	}
}

// privateOp reports a futex operation's name with FUTEX_PRIVATE_FLAG
// (procfs.FutexOpName).
func privateOp(op string) bool { return strings.HasSuffix(op, "_PRIVATE") }

// joinSameWords makes one group of the futex waits of several processes on
// one word (each process's sweep grouped its own threads), most waiters
// first as GroupFutexWaits orders them.
func joinSameWords(futexes []snapshot.FutexWait) []snapshot.FutexWait {
	out, joined := joinByAddress(futexes, func(fw *snapshot.FutexWait) uint64 { return fw.Address }, func(to, fw *snapshot.FutexWait) {
		to.TIDs = joinTIDs(to.TIDs, fw.TIDs)
		// Each process read the lock at its own moment: one that saw its
		// holder blocked with it held says the most (openGates).
		if to.Holder == nil || to.Holder.Across == nil && fw.Holder != nil && fw.Holder.Across != nil {
			to.Holder = fw.Holder
		}
		if unclassed(to.Kind) {
			to.Kind = fw.Kind
		}
	})
	if joined {
		for i := range out {
			// One process's memory may name as the holder a thread
			// another's sweep saw waiting.
			procfs.DropWaitingHolder(&out[i])
		}
		slices.SortStableFunc(out, func(a, b snapshot.FutexWait) int { return cmp.Compare(len(b.TIDs), len(a.TIDs)) })
	}
	return out
}

// joinSameFastWords does for the fast reads' futexes what joinSameWords
// does for the sweep's: one entry a word, its sightings added.
func joinSameFastWords(futexes []snapshot.FastFutex) []snapshot.FastFutex {
	out, _ := joinByAddress(futexes, func(f *snapshot.FastFutex) uint64 { return f.Address }, func(to, f *snapshot.FastFutex) {
		to.Sightings += f.Sightings
		to.TIDs = joinTIDs(to.TIDs, f.TIDs)
		if unclassed(to.Kind) {
			to.Kind = f.Kind
		}
	})
	return out
}

// joinByAddress keeps the first entry of each address, in place, with the
// later ones of the same address merged into it; joined says whether any
// was.
func joinByAddress[T any](xs []T, addr func(*T) uint64, merge func(to, from *T)) (out []T, joined bool) {
	at := make(map[uint64]int, len(xs))
	out = xs[:0]
	for k := range xs {
		x := xs[k]
		i, ok := at[addr(&x)]
		if !ok {
			at[addr(&x)] = len(out)
			out = append(out, x)
			continue
		}
		joined = true
		merge(&out[i], &x)
	}
	return out, joined
}

// joinTIDs is a's and b's threads, sorted, once each; a's array is not
// written past its length (a process's sweep may share it).
func joinTIDs(a, b []int) []int {
	out := append(slices.Clip(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// unclassed reports a futex kind that another process's sightings of the
// word may say more of.
func unclassed(k snapshot.FutexKind) bool { return k == "" || k == snapshot.FutexUnknown }
