package sample

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Each process of a tree groups its own threads' futex waits; a word the
// tree keys as one (shared memory) is one group, its waiters together, the
// holder a process's memory named kept unless another's sweep saw it wait.
func TestJoinSameWords(t *testing.T) {
	mutex := func(tid int) *procfs.LockHolder { return &procfs.LockHolder{Lock: "mutex", TID: tid} }
	for _, tc := range []struct {
		name string
		in   []snapshot.FutexWait
		want []snapshot.FutexWait
	}{
		{
			name: "distinct words stay apart",
			in:   []snapshot.FutexWait{{Address: 1, TIDs: []int{10}}, {Address: 2, TIDs: []int{11, 12}}},
			want: []snapshot.FutexWait{{Address: 1, TIDs: []int{10}}, {Address: 2, TIDs: []int{11, 12}}},
		},
		{
			name: "one word of three processes, most waiters first",
			in: []snapshot.FutexWait{
				{Address: 7, TIDs: []int{30}},
				{Address: 5, TIDs: []int{20}, Kind: snapshot.FutexUnknown},
				{Address: 5, TIDs: []int{22, 21}, Kind: snapshot.FutexLock, Holder: mutex(40)},
			},
			want: []snapshot.FutexWait{
				{Address: 5, TIDs: []int{20, 21, 22}, Kind: snapshot.FutexLock, Holder: mutex(40)},
				{Address: 7, TIDs: []int{30}},
			},
		},
		{
			name: "a holder another process saw waiting is unnamed",
			in: []snapshot.FutexWait{
				{Address: 5, TIDs: []int{20}, Kind: snapshot.FutexLock, Holder: mutex(21)},
				{Address: 5, TIDs: []int{21}, Kind: snapshot.FutexLock},
			},
			want: []snapshot.FutexWait{{Address: 5, TIDs: []int{20, 21}, Kind: snapshot.FutexLock}},
		},
		{
			name: "an rwlock keeps its readers",
			in: []snapshot.FutexWait{
				{Address: 5, TIDs: []int{20}, Holder: &procfs.LockHolder{Lock: "rwlock", TID: 21, Readers: 2}},
				{Address: 5, TIDs: []int{21}},
			},
			want: []snapshot.FutexWait{{Address: 5, TIDs: []int{20, 21}, Holder: &procfs.LockHolder{Lock: "rwlock", Readers: 2}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, joinSameWords(tc.in))
		})
	}
}

// The fast reads' sightings of one word by several processes add up.
func TestJoinSameFastWords(t *testing.T) {
	got := joinSameFastWords([]snapshot.FastFutex{
		{Address: 5, Sightings: 3, TIDs: []int{20}},
		{Address: 6, Sightings: 1, TIDs: []int{30}},
		{Address: 5, Sightings: 2, TIDs: []int{21, 20}, Kind: snapshot.FutexLock},
	})
	assert.Equal(t, []snapshot.FastFutex{
		{Address: 5, Sightings: 5, TIDs: []int{20, 21}, Kind: snapshot.FutexLock},
		{Address: 6, Sightings: 1, TIDs: []int{30}},
	}, got)
}
