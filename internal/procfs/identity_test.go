package procfs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseIdentity(t *testing.T) {
	// A name with spaces and a ')' of its own; fields 26 and 28 are the
	// start of the text and of the stack.
	line := "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 987654 1000 200 18446744073709551615 94000000 94100000 140730000000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	id, ok := parseIdentity([]byte(line))
	require.True(t, ok)
	assert.Equal(t, Identity{StartTime: 987654, Comm: "a) b (c", StartCode: 94000000, StartStack: 140730000000}, id)

	_, ok = parseIdentity([]byte("4242 (cut"))
	assert.False(t, ok)
}

func TestIdentityExec(t *testing.T) {
	was := Identity{StartTime: 5, Comm: "sh", Exe: "/usr/bin/dash", StartStack: 100, StartCode: 200}
	assert.False(t, was.Exec(was))
	renamed := was
	renamed.Comm = "worker"
	assert.False(t, renamed.Exec(was), "a program that renames itself runs the same program")
	other := was
	other.Exe = "/usr/bin/sleep"
	assert.True(t, other.Exec(was))
	again := was
	again.StartStack = 300
	assert.True(t, again.Exec(was), "the same binary loaded again lands elsewhere")
	// Nothing of the layout readable: only the name tells.
	blind := Identity{StartTime: 5, Comm: "sh", StartCode: 1}
	assert.False(t, blind.Exec(blind))
	blindNew := blind
	blindNew.Comm = "sleep"
	assert.True(t, blindNew.Exec(blind))
}

func TestIdentityOfSelf(t *testing.T) {
	fs := NewFS("/proc")
	id, err := fs.Identity(os.Getpid())
	require.NoError(t, err)
	assert.NotZero(t, id.StartTime)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, exe, id.Exe)
	again, err := fs.Identity(os.Getpid())
	require.NoError(t, err)
	assert.False(t, again.Exec(id))
	_, err = fs.Identity(1 << 30)
	assert.ErrorIs(t, err, ErrProcessGone)
}
