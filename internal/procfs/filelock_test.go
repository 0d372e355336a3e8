package procfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestFileLockWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		nr   int
		args [5]uint64
		fd   int
		ok   bool
	}{
		{"flock exclusive", unix.SYS_FLOCK, [5]uint64{5, unix.LOCK_EX}, 5, true},
		{"flock shared", unix.SYS_FLOCK, [5]uint64{7, unix.LOCK_SH}, 7, true},
		{"flock that does not wait", unix.SYS_FLOCK, [5]uint64{5, unix.LOCK_EX | unix.LOCK_NB}, 0, false},
		{"flock unlock", unix.SYS_FLOCK, [5]uint64{5, unix.LOCK_UN}, 0, false},
		{"fcntl F_SETLKW (lockf)", unix.SYS_FCNTL, [5]uint64{3, unix.F_SETLKW}, 3, true},
		{"fcntl F_OFD_SETLKW", unix.SYS_FCNTL, [5]uint64{3, unix.F_OFD_SETLKW}, 3, true},
		{"fcntl F_SETLK does not wait", unix.SYS_FCNTL, [5]uint64{3, unix.F_SETLK}, 0, false},
		{"a negative descriptor", unix.SYS_FLOCK, [5]uint64{^uint64(0), unix.LOCK_EX}, 0, false},
		{"another call", unix.SYS_READ, [5]uint64{3, unix.F_SETLKW}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, ok := FileLockWait(tc.nr, tc.args)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.fd, fd)
		})
	}
}

// LockedFileOf names a descriptor of this process by its link and its
// inode, which no futex word's address can be.
func TestLockedFileOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	lf, ok := NewFS("").LockedFileOf(os.Getpid(), int(f.Fd()))
	require.True(t, ok)
	assert.Equal(t, path, lf.Path)
	assert.NotZero(t, lf.ID&FileIDBit)
	assert.Equal(t, fi.Sys().(*syscall.Stat_t).Ino, lf.ID&(1<<40-1))
	_, ok = NewFS("").LockedFileOf(os.Getpid(), 1<<20)
	assert.False(t, ok, "a descriptor that is not open")
}

func TestFileIDOf(t *testing.T) {
	assert.Equal(t, uint64(FileIDBit|27<<40|9978555), fileIDOf([]byte("pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t9978555\nlock:\t1: FLOCK  ADVISORY  WRITE 7772 fe:00:9978555 0 EOF\n")))
	assert.Zero(t, fileIDOf([]byte("pos:\t0\nflags:\t02\nmnt_id:\t15\n")), "no inode (a kernel before 5.14)")
	assert.Zero(t, fileIDOf([]byte("ino: not-a-number\n")))
}

func FuzzFileIDOf(f *testing.F) {
	f.Add([]byte("pos:\t0\nflags:\t0100000\nmnt_id:\t27\nino:\t9978555\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id := fileIDOf(b); id != 0 && id&FileIDBit == 0 {
			t.Fatalf("fileIDOf = %#x: a file's identity without its mark", id)
		}
	})
}

func TestFileLockHoldersOf(t *testing.T) {
	locks := []byte(`1: POSIX  ADVISORY  WRITE 20645 fe:00:9987324 0 EOF
1: -> POSIX  ADVISORY  WRITE 20643 fe:00:9987324 0 EOF
1:  -> POSIX  ADVISORY  WRITE 20641 fe:00:9987324 0 EOF
2: FLOCK  ADVISORY  WRITE 20644 fe:00:9987323 0 EOF
2: -> FLOCK  ADVISORY  WRITE 20640 fe:00:9987323 0 EOF
3: OFDLCK ADVISORY  READ  -1 00:05:1234 0 EOF
4: FLOCK  ADVISORY  READ  300 08:01:77 0 EOF
4: FLOCK  ADVISORY  READ  301 08:01:77 0 EOF
5: garbage
`)
	assert.Equal(t, map[uint64]int{9987324: 20645, 9987323: 20644, 77: 300}, fileLockHoldersOf(locks),
		"a waiter is no holder, an open file description's lock has none, the first of shared holders")
}

// The kernel's own table names the holder of a lock this test takes.
func TestFileLockHolders(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "held"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	fi, err := f.Stat()
	require.NoError(t, err)
	holders, err := NewFS("").FileLockHolders()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), holders[fi.Sys().(*syscall.Stat_t).Ino&(1<<40-1)])
}

func FuzzFileLockHoldersOf(f *testing.F) {
	f.Add([]byte("1: FLOCK  ADVISORY  WRITE 7772 fe:00:9978555 0 EOF\n1: -> FLOCK  ADVISORY  WRITE 7777 fe:00:9978555 0 EOF\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for ino, pid := range fileLockHoldersOf(b) {
			if pid <= 0 || ino >= 1<<40 {
				t.Fatalf("holder %d of inode %d", pid, ino)
			}
		}
	})
}
