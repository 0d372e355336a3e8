package jvm

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/testjvm"
)

var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test plants files of other users and needs root (CI runs as root)")
	}
}

// ownTmpDir opens a fresh directory below /tmp as a targetDir of this
// test process, the way ctprof opens a target's /tmp.
func ownTmpDir(t *testing.T) (*targetDir, string) {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel("/", dir)
	require.NoError(t, err)
	d, err := openTargetRootDir(procfs.NewFS("/proc"), os.Getpid(), rel)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d, dir
}

// readFile reads only regular files of the expected owner, within the
// limit, reached without links; a FIFO is refused without blocking.
func TestTargetDirReadFile(t *testing.T) {
	requireRoot(t)
	d, dir := ownTmpDir(t)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root only"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine"), []byte("data"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nobodys"), []byte("data"), 0o600))
	require.NoError(t, os.Chown(filepath.Join(dir, "nobodys"), 65534, 65534))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("deep"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "linkdir")))

	for _, tc := range []struct {
		name  string
		uid   int
		limit int64
		want  string // content, or the error's text
		ok    bool
	}{
		{"mine", 0, 100, "data", true},
		{"sub/f", 0, 100, "deep", true},
		{"nobodys", 65534, 100, "data", true},
		{"nobodys", 0, 100, "belongs to uid 65534", false},
		{"mine", 0, 3, "more than 3", false},
		{"link", 0, 100, "symbolic link", false},
		{"linkdir/f", 0, 100, "symbolic link", false},
		{"fifo", 0, 100, "not a regular file (a FIFO)", false},
		{"sub", 0, 100, "not a regular file (a directory)", false},
		{"../secret", 0, 100, "not a plain relative name", false},
		{"/etc/passwd", 0, 100, "not a plain relative name", false},
		{"missing", 0, 100, "no such file", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			b, _, err := d.readFile(tc.name, tc.uid, tc.limit)
			assert.Less(t, time.Since(start), 2*time.Second, "answers at once")
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(b))
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, string(b), "root only")
		})
	}
}

// A target's /tmp is listed for the names that matter only: every one of
// them, however many other entries surround them and whatever getdents'
// buffer boundaries cut.
func TestReadDirNamesKeepsThePrefixedOnes(t *testing.T) {
	d, dir := ownTmpDir(t)
	var want []string
	for i := 0; i < 3000; i++ {
		name := "x" + strings.Repeat("y", i%200) + strconv.Itoa(i)
		if i%97 == 0 {
			name = "hsperfdata_u" + strconv.Itoa(i)
			want = append(want, name)
		}
		require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o700))
	}
	got, err := d.readDirNames("hsperfdata_")
	require.NoError(t, err)
	assert.ElementsMatch(t, want, got)
	none, err := d.readDirNames("nothing-")
	require.NoError(t, err)
	assert.Empty(t, none)
}

// appendDirents reads what getdents64 wrote; a record it cannot have
// written ends the walk instead of reading past the buffer.
func FuzzAppendDirents(f *testing.F) {
	rec := func(name string) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, n)
		b[16], b[17] = byte(n), byte(n>>8)
		copy(b[19:], name)
		return b
	}
	f.Add(append(rec("hsperfdata_root"), rec(".")...))
	f.Add(rec("hsperfdata_"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range appendDirents(nil, b, "hsperfdata_") {
			if !strings.HasPrefix(name, "hsperfdata_") || strings.IndexByte(name, 0) >= 0 {
				t.Fatalf("kept %q", name)
			}
		}
	})
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, ".attach_pid1": true, "hsperfdata_x/12": true, "..a": true,
		"": false, ".": false, "..": false, "/a": false, "a/../b": false, "a//b": false, "a/": false, "a\x00b": false,
	} {
		assert.Equal(t, want, validName(name), "%q", name)
	}
}

// Whatever validName accepts stays below the directory once cleaned.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/etc", "a/./b", "a//", "hsperfdata_u/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validName(name) {
			return
		}
		if filepath.IsAbs(name) || filepath.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			t.Fatalf("validName accepted %q", name)
		}
	})
}

// startNobodyJVM starts a JVM as nobody in a working directory nobody owns,
// so the trigger can go there as well as into /tmp.
func startNobodyJVM(t *testing.T, flags ...string) (*testjvm.Process, *Info, string) {
	t.Helper()
	requireRoot(t)
	p := testjvm.StartWith(t, testjvm.JDK17(t), "SyncSingleton", testjvm.Options{Credential: nobody, JVMFlags: flags}, "2")
	cwd := filepath.Dir(p.LogPath())
	require.NoError(t, os.Chown(cwd, 65534, 65534))
	info := inspect(t, p.PID)
	require.Equal(t, 65534, info.UID)
	return p, info, cwd
}

func plant(t *testing.T, path string, make func(path string) error) {
	t.Helper()
	require.NoError(t, make(path))
	t.Cleanup(func() { os.Remove(path) })
}

func symlinkTo(target string) func(string) error {
	return func(p string) error { return os.Symlink(target, p) }
}

func fileOf(uid int) func(string) error {
	return func(p string) error {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
		return os.Chown(p, uid, uid)
	}
}

func lstatUID(t *testing.T, path string) (uint32, bool) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		require.ErrorIs(t, err, unix.ENOENT)
		return 0, false
	}
	return st.Uid, true
}

// The JVM's owner may plant anything at the trigger's two places. ctprof
// (root) must never follow a link there nor remove what it did not create;
// the dump works through the other place or fails saying why.
func TestTriggerPlantedFiles(t *testing.T) {
	victimDir := t.TempDir() // root's
	victim := filepath.Join(victimDir, "victim")
	for _, tc := range []struct {
		name       string
		cwd, tmp   func(string) error // nil: nothing planted
		fails      string             // "": the dump works
		cwdRemains bool               // the planted file is still there
		tmpRemains bool
	}{
		{name: "links at both places", cwd: symlinkTo(victim), tmp: symlinkTo(victim),
			fails: "no usable place for the attach trigger file", cwdRemains: true, tmpRemains: true},
		{name: "link in the working directory", cwd: symlinkTo(victim), cwdRemains: true},
		{name: "link in /tmp", tmp: symlinkTo(victim), tmpRemains: true},
		{name: "root's file in /tmp", tmp: fileOf(0), tmpRemains: true},
		{name: "the JVM user's own trigger", cwd: fileOf(65534), tmp: symlinkTo(victim), cwdRemains: true, tmpRemains: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, info, cwd := startNobodyJVM(t)
			name := ".attach_pid" + strconv.Itoa(info.NSPID)
			inCwd, inTmp := filepath.Join(cwd, name), filepath.Join("/tmp", name)
			var before [2]uint32
			if tc.cwd != nil {
				plant(t, inCwd, tc.cwd)
				before[0], _ = lstatUID(t, inCwd)
			}
			if tc.tmp != nil {
				plant(t, inTmp, tc.tmp)
				before[1], _ = lstatUID(t, inTmp)
			}

			res, err := ThreadDump(context.Background(), info, DumpOptions{})
			if tc.fails != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrAttachFailed)
				assert.ErrorContains(t, err, tc.fails)
				assert.ErrorContains(t, err, "symbolic link", "says why each place was skipped")
			} else {
				require.NoError(t, err)
				assert.True(t, names(t, res.Text)["request-1"])
			}
			_, exists := lstatUID(t, victim)
			assert.False(t, exists, "nothing created at the link's target")
			for k, c := range []struct {
				path    string
				remains bool
			}{{inCwd, tc.cwdRemains}, {inTmp, tc.tmpRemains}} {
				uid, ok := lstatUID(t, c.path)
				assert.Equal(t, c.remains, ok, "%s still there", c.path)
				if ok {
					assert.Equal(t, before[k], uid, "%s untouched", c.path)
				}
			}
			assert.False(t, p.Exited())
		})
	}
}

// The triggers ctprof creates belong to the JVM's user (HotSpot accepts a
// trigger of its own user), and ctprof removes them, and only them.
func TestTriggersBelongToTheJVMsUser(t *testing.T) {
	_, info, cwd := startNobodyJVM(t)
	name := ".attach_pid" + strconv.Itoa(info.NSPID)
	tr, err := info.createTriggers()
	require.NoError(t, err)
	require.Len(t, tr.made, 2, "in the working directory and in /tmp")
	for _, path := range []string{filepath.Join(cwd, name), filepath.Join("/tmp", name)} {
		uid, ok := lstatUID(t, path)
		require.True(t, ok, path)
		assert.Equal(t, uint32(65534), uid, path)
	}
	// One is replaced meanwhile: that one stays.
	inTmp := filepath.Join("/tmp", name)
	require.NoError(t, os.Remove(inTmp))
	plant(t, inTmp, fileOf(65534))
	tr.remove()
	_, ok := lstatUID(t, filepath.Join(cwd, name))
	assert.False(t, ok, "ctprof's own trigger is removed")
	_, ok = lstatUID(t, inTmp)
	assert.True(t, ok, "a file ctprof did not create is left alone")
}

// listen makes a root-owned UNIX socket and reports whether anyone
// connected to it.
func listen(t *testing.T) (path string, connected func() bool) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "trap.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return path, func() bool {
		// Connections wait in the backlog: accept one without blocking.
		require.NoError(t, l.SetDeadline(time.Now().Add(50*time.Millisecond)))
		c, err := l.Accept()
		if err == nil {
			c.Close()
			return true
		}
		return false
	}
}

// A planted /tmp/.java_pid<pid> that is not the JVM's own socket is never
// connected to.
func TestPlantedAttachSocket(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"link to root's socket", func(t *testing.T, path string) {
			trap, _ := listen(t)
			plant(t, path, symlinkTo(trap))
		}, "symbolic link"},
		{"root's socket", func(t *testing.T, path string) {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			require.NoError(t, err)
			l.SetUnlinkOnClose(true)
			t.Cleanup(func() { l.Close() })
		}, "belongs to uid 0"},
		{"the JVM user's regular file", func(t *testing.T, path string) { plant(t, path, fileOf(65534)) }, "not a socket (a regular file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, info, _ := startNobodyJVM(t)
			path := filepath.Join("/tmp", info.socketName())
			tc.plant(t, path)
			err := info.listenerRunning()
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorIs(t, err, errUnsafeFile)
			_, err = info.request(context.Background(), nil, 1, "properties")
			assert.ErrorIs(t, err, ErrAttachFailed)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	// And a real dump through a link the JVM's user planted: the JVM
	// renames its new socket over the link; the trap sees nothing.
	_, info, _ := startNobodyJVM(t)
	trap, connected := listen(t)
	link := filepath.Join("/tmp", info.socketName())
	plant(t, link, symlinkTo(trap))
	require.NoError(t, os.Lchown(link, 65534, 65534))
	res, err := ThreadDump(context.Background(), info, DumpOptions{})
	require.NoError(t, err)
	assert.True(t, names(t, res.Text)["request-1"])
	assert.False(t, connected(), "ctprof connected to the planted socket")
}

// The attach socket is connected to through the descriptor that was
// checked (/proc/self/fd/<n>), as root and as the JVM's user.
func TestConnectThroughDescriptor(t *testing.T) {
	requireRoot(t)
	path, connected := listen(t)
	d, err := openTargetRootDir(procfs.NewFS("/proc"), os.Getpid(), strings.TrimPrefix(filepath.Dir(path), "/"))
	require.NoError(t, err)
	defer d.Close()
	fd, st, err := d.lookup("trap.sock")
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, checkOwned(&st, path, unix.S_IFSOCK, "socket", 0))
	conn, err := dialAs(context.Background(), "/proc/self/fd/"+strconv.Itoa(fd), 0, 0)
	require.NoError(t, err)
	conn.Close()
	assert.True(t, connected())

	// As nobody, on a socket nobody may write to: refused by the kernel,
	// so the descriptor path does not lend root's rights.
	_, err = dialAs(context.Background(), "/proc/self/fd/"+strconv.Itoa(fd), 65534, 65534)
	assert.True(t, errors.Is(err, unix.EACCES), "%v", err)
	require.NoError(t, os.Chmod(path, 0o777))
	conn, err = dialAs(context.Background(), "/proc/self/fd/"+strconv.Itoa(fd), 65534, 65534)
	require.NoError(t, err, "as nobody when the socket allows it")
	conn.Close()
}

// An hsperfdata file replaced by a link or a FIFO is neither followed nor
// opened, and the answer comes at once. The JVM is still one (libjvm.so is
// mapped) and attach needs no hsperfdata: Inspect describes it without
// counters and says why.
func TestPerfDataPlanted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, path, moved string)
		want    string
	}{
		{"link to the real file", func(t *testing.T, path, moved string) {
			require.NoError(t, os.Symlink(moved, path))
		}, "symbolic link"},
		{"FIFO", func(t *testing.T, path, _ string) {
			require.NoError(t, unix.Mkfifo(path, 0o600))
			require.NoError(t, os.Chown(path, 65534, 65534))
		}, "not a regular file (a FIFO)"},
		{"linked directory", func(t *testing.T, path, moved string) {
			dir := filepath.Join("/tmp", "hsperfdata_ctproftest"+strconv.Itoa(os.Getpid()))
			require.NoError(t, os.Symlink(filepath.Dir(moved), dir))
			t.Cleanup(func() { os.Remove(dir) })
		}, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, info, _ := startNobodyJVM(t)
			path := filepath.Join("/tmp", "hsperfdata_nobody", strconv.Itoa(p.PID))
			require.FileExists(t, path)
			moved := filepath.Join(t.TempDir(), strconv.Itoa(p.PID))
			require.NoError(t, os.Rename(path, moved))
			require.NoError(t, os.Chmod(filepath.Dir(moved), 0o755))
			tc.replace(t, path, moved)
			t.Cleanup(func() { os.Remove(path) })

			start := time.Now()
			again, err := Inspect("/proc", p.PID)
			require.NoError(t, err)
			assert.Contains(t, again.NoPerfData, tc.want)
			_, err = again.ReadPerfData()
			assert.ErrorIs(t, err, ErrNoPerfData)
			_, err = info.ReadPerfData()
			assert.Error(t, err)
			assert.Less(t, time.Since(start), 2*time.Second, "no blocking")
		})
	}
}

// -Xrs: HotSpot then opens the attach socket at start (as it does for
// -XX:+StartAttachListener), so a dump needs no signal, and a signal would
// kill the JVM.
func TestXrsDumpsWithoutSignal(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		for _, flags := range [][]string{{"-Xrs", "-XX:+StartAttachListener"}, {"-Xrs"}} {
			t.Run(jdk.Name+strings.Join(flags, ""), func(t *testing.T) {
				p := testjvm.StartWith(t, jdk, "SyncSingleton", testjvm.Options{JVMFlags: flags}, "2")
				info := inspect(t, p.PID)
				assert.False(t, info.CatchesQuit)
				assert.True(t, info.DumpPossible())
				res, err := ThreadDump(context.Background(), info, DumpOptions{})
				require.NoError(t, err)
				assert.True(t, names(t, res.Text)["request-1"], "the dump parsed")
				assert.False(t, p.Exited())
				assert.NotContains(t, string(p.Log()), "Full thread dump", "no SIGQUIT reached the JVM")

				// Once a /tmp cleaner deleted the socket: no dump, no signal.
				require.NoError(t, os.Remove(filepath.Join("/tmp", info.socketName())))
				assert.False(t, info.DumpPossible())
				_, err = ThreadDump(context.Background(), info, DumpOptions{})
				assert.ErrorIs(t, err, ErrNoQuitHandler)
				assert.False(t, p.Exited())
			})
		}
	}
}

// The jcmd fallback never runs a jcmd of the target's filesystem: with
// none on PATH there is none.
func TestJcmdFromPathOnly(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findJcmd()
	assert.ErrorIs(t, err, ErrNoJcmd)
	assert.ErrorContains(t, err, "PATH")
}

// A killed ctprof leaves its JFR directory in the JVM's /tmp; the next
// ctprof that makes one there removes it: a ctprof directory of the JVM's
// user that no live ctprof holds locked, emptied of ctprof's own files
// only. A locked one, another user's, a link and one with a stranger's file
// in it stay.
func TestRemoveStaleDirs(t *testing.T) {
	requireRoot(t)
	defer func(age time.Duration) { staleDirAge = age }(staleDirAge)
	staleDirAge = 0
	d, dir := ownTmpDir(t)
	mk := func(name string, files ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(p, 0o700))
		for _, f := range files {
			require.NoError(t, os.WriteFile(filepath.Join(p, f), []byte("x"), 0o600))
		}
		return p
	}
	stale := mk("ctprof-jfr-11-aa", "ctprof.jfc", "dump-1.jfr", "dump-2.jfr")
	live := mk("ctprof-jfr-12-bb", "ctprof.jfc")
	lf, err := os.Open(live)
	require.NoError(t, err)
	defer lf.Close()
	require.NoError(t, unix.Flock(int(lf.Fd()), unix.LOCK_EX))
	stranger := mk("ctprof-jfr-13-cc", "ctprof.jfc", "notes.txt")
	others := mk("ctprof-jfr-14-dd", "ctprof.jfc")
	require.NoError(t, os.Chown(filepath.Join(others, "ctprof.jfc"), 65534, 65534))
	require.NoError(t, os.Chown(others, 65534, 65534))
	require.NoError(t, os.Symlink(live, filepath.Join(dir, "ctprof-jfr-15-ee")))
	unrelated := mk("other-dir", "ctprof.jfc")

	removeStaleDirs(d, 0, 0)
	assert.NoDirExists(t, stale)
	assert.FileExists(t, filepath.Join(live, "ctprof.jfc"), "a live ctprof's")
	assert.FileExists(t, filepath.Join(stranger, "notes.txt"))
	assert.NoFileExists(t, filepath.Join(stranger, "ctprof.jfc"), "ctprof's own file goes")
	assert.FileExists(t, filepath.Join(others, "ctprof.jfc"), "another user's")
	_, err = os.Lstat(filepath.Join(dir, "ctprof-jfr-15-ee"))
	assert.NoError(t, err, "a link is not followed nor removed")
	assert.FileExists(t, filepath.Join(unrelated, "ctprof.jfc"))

	// Young directories are left alone: a live ctprof locks its own
	// microseconds after creating it.
	staleDirAge = time.Hour
	young := mk("ctprof-jfr-16-ff", "ctprof.jfc")
	removeStaleDirs(d, 0, 0)
	assert.DirExists(t, young)
}
