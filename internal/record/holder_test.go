package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// What a lock's memory said of its holder survives the round trip, and
// from version 11 on so does the system call the holder held it across; a
// version 10 file reads the holder without it.
func TestHolderRoundTripAndVersion10(t *testing.T) {
	holder := &procfs.LockHolder{Lock: "PI mutex", TID: 11, Across: &procfs.HeldAcross{Syscall: 232, SP: 0x7ffd12345678, PC: 0x7f00aabbccdd}}
	snaps := []*snapshot.Snapshot{{
		Time:    time.Unix(1, 0),
		Threads: []snapshot.OSThread{{TID: 10, Name: "w", State: 'S', Syscall: 202}, {TID: 11, Name: "h", State: 'S', Syscall: 232}},
		Futexes: []procfs.FutexWait{{Address: 0x7f0000001000, Kind: procfs.FutexLock, Op: "FUTEX_LOCK_PI", TIDs: []int{10}, Holder: holder}},
	}}
	for _, version := range []byte{10, FormatVersion} {
		got, r := recordAtVersion(t, version, snaps...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, 1)
		require.Len(t, got[0].Futexes, 1)
		want := *holder
		if version < 11 {
			want.Across = nil
		}
		assert.Equal(t, &want, got[0].Futexes[0].Holder, "version %d", version)
	}
}

// The file a file-lock waiter waits for, and its holder, survive the round trip from
// version 12 on; a version 11 file reads the thread without it.
func TestLockedFileRoundTripAndVersion11(t *testing.T) {
	locked := procfs.LockedFile{Path: "/var/lib/php/sessions/sess_\x1b[2Jx", ID: procfs.FileIDBit | 27<<40 | 9978555, Holder: 12, Across: &procfs.HeldAcross{Syscall: 7, SP: 0x7ffd0000aa00, PC: 0x7f0000bb00}}
	snaps := []*snapshot.Snapshot{{
		Time:    time.Unix(1, 0),
		Threads: []snapshot.OSThread{{TID: 10, Name: "php-fpm8.2", State: 'S', Syscall: 73, SyscallArgs: [5]uint64{5, 2}, Locked: locked}, {TID: 11, Name: "php-fpm8.2", State: 'S', Syscall: 232}},
	}}
	for _, version := range []byte{11, FormatVersion} {
		got, r := recordAtVersion(t, version, snaps...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, 1)
		require.Len(t, got[0].Threads, 2)
		want := locked
		if version < 12 {
			want = procfs.LockedFile{}
		}
		assert.Equal(t, want, got[0].Threads[0].Locked, "version %d", version)
		assert.Zero(t, got[0].Threads[1].Locked, "version %d", version)
	}
}
