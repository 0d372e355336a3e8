package threaddump

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sortLocks compares HotSpot's addresses as numbers: the order must be the
// one of their texts, for those and for every other form of address.
func TestSortLocksKeepsTextOrder(t *testing.T) {
	addrs := []string{
		"0x00000000f00872c8", "0x00000000f00872c9", "0x00000000f0087300", "0x000000071234abcd",
		"0x0000000000000000", "0xffffffffffffffff", "0x00000000F00872C8", // upper case: compared as text
		"0x1f", "0x00000000f00872c", "0x00000000f00872c8a", "0x00000000f00872g8",
		"class-init:Foo", "class-init:Bar", "", "<no object reference available>",
	}
	classes := []string{"java.lang.Object", "Foo$Lock", "", "java.util.concurrent.locks.ReentrantLock$NonfairSync"}
	r := rand.New(rand.NewSource(1))
	var locks []*LockInfo
	for i, a := range addrs {
		for j, c := range classes {
			// Ties (same waiters, class and address) cannot be in one
			// table; here they are the same lock twice, equal either way.
			li := &LockInfo{Lock: Lock{Address: a, Class: c}}
			if (i+j)%3 == 0 {
				li.Waiters = make([]Waiter, (i+j)%4)
			}
			locks = append(locks, li)
		}
	}
	want := append([]*LockInfo(nil), locks...)
	sort.SliceStable(want, func(i, j int) bool {
		a, b := want[i], want[j]
		if len(a.Waiters) != len(b.Waiters) {
			return len(a.Waiters) > len(b.Waiters)
		}
		if a.Lock.Class != b.Lock.Class {
			return a.Lock.Class < b.Lock.Class
		}
		return a.Lock.Address < b.Lock.Address
	})
	for round := 0; round < 20; round++ {
		got := append([]*LockInfo(nil), locks...)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		sortLocks(got)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].Lock, got[i].Lock, "position %d", i)
			assert.Len(t, got[i].Waiters, len(want[i].Waiters), "position %d", i)
		}
	}
}

func TestHexAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0x00000000f00872c8", 0xf00872c8, true},
		{"0xffffffffffffffff", 0xffffffffffffffff, true},
		{"0x0000000000000000", 0, true},
		{"0x00000000F00872C8", 0, false},
		{"0x1f", 0, false},
		{"0X00000000f00872c8", 0, false},
		{"0x00000000f00872g8", 0, false},
		{"class-init:Foo", 0, false},
		{"", 0, false},
	} {
		v, ok := hexAddress(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, v, tc.in)
	}
}
