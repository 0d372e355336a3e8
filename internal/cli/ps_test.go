package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procs"
	"github.com/ctprof/ctprof/internal/testjvm"
)

// psHelperEnv makes TestPsHelperProcess run `ctprof ps` with the arguments
// it holds (split on spaces) and print stdout, a NUL, then stderr.
const psHelperEnv = "CTPROF_PS_HELPER_ARGS"

// TestPsHelperProcess is not a test: TestPsOtherUsersJVM runs this test
// binary as another user to run `ctprof ps` there.
func TestPsHelperProcess(t *testing.T) {
	args := os.Getenv(psHelperEnv)
	if args == "" {
		return
	}
	code, out, errOut := run(t, "", strings.Fields(args)...)
	os.Stdout.WriteString(out + "\x00" + errOut)
	os.Exit(code)
}

// psAs runs `ctprof ps args...` as uid:gid through a copy of this test
// binary that the user may execute.
func psAs(t *testing.T, uid, gid uint32, args ...string) (stdout, stderr string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	bin := filepath.Join(dir, "cli.test")
	src, err := os.Open(self)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	cmd := exec.Command(bin, "-test.run=^TestPsHelperProcess$")
	cmd.Dir = dir
	cmd.Env = []string{psHelperEnv + "=" + strings.Join(args, " "), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	require.NoError(t, err, "ps as uid %d: %s", uid, errBuf.String())
	parts := strings.SplitN(string(out), "\x00", 2)
	require.Len(t, parts, 2, "helper output: %q", out)
	return parts[0], parts[1]
}

// Run as a user who may not read a JVM's memory maps, `ctprof ps` must not
// call that JVM "native": it says it could not tell, and why.
func TestPsOtherUsersJVM(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs ctprof as another user and needs root (CI runs as root)")
	}
	p := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "2")
	row := func(out string) map[string]any {
		var rows []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
		for _, r := range rows {
			if r["pid"] == float64(p.PID) {
				return r
			}
		}
		return nil
	}

	out, errOut := psAs(t, 65534, 65534, "ps", "--format", "json")
	r := row(out)
	require.NotNil(t, r, "the JVM is listed")
	assert.Equal(t, false, r["jvm"])
	assert.Equal(t, true, r["jvm_unknown"])
	assert.Regexp(t, `ctprof: \d+ process(es)? could not be inspected \(JVM or not\): they belong to other users; run as root or as their user`, errOut)

	out, errOut = psAs(t, 65534, 65534, "ps")
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[0] == strconv.Itoa(p.PID) {
			line = l
		}
	}
	require.NotEmpty(t, line, out)
	assert.Equal(t, "?", strings.Fields(line)[4], "JVM column: %q", line)
	assert.Contains(t, errOut, "could not be inspected")

	out, errOut = psAs(t, 65534, 65534, "ps", "--java", "--format", "json")
	assert.Nil(t, row(out), "--java lists known JVMs only")
	assert.Contains(t, errOut, "could not be inspected", "but says some could not be told")

	// As root the same JVM is a JVM, and nothing is said about it.
	code, out, _ := run(t, "", "ps", "--format", "json")
	require.Equal(t, 0, code)
	r = row(out)
	require.NotNil(t, r)
	assert.Equal(t, true, r["jvm"])
	assert.Nil(t, r["jvm_unknown"])
}

// ps lists the processes under its proc root, as the samplers read them,
// and not the host's.
func TestPsHonoursProcRoot(t *testing.T) {
	root := t.TempDir()
	fake := func(pid, threads int, name, maps string, args ...string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		status := "Name:\t" + name + "\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t" + strconv.Itoa(threads) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o444))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o444))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "maps"), []byte(maps), 0o444))
	}
	fake(4242, 30, "java", "7f0000000000-7f0000100000 r-xp 00000000 08:01 42 /usr/lib/jvm/lib/server/libjvm.so\n", "java", "-jar", "app.jar")
	fake(4343, 4, "nginx", "", "nginx: worker process")
	fake(4444, 1, "sh", "", "sh")

	java := procs.Candidate{PID: 4242, Name: "java", User: "root", Threads: 30, Processes: 1, Established: -1, JVM: true, Cmdline: "java -jar app.jar"}
	nginx := procs.Candidate{PID: 4343, Name: "nginx", User: "root", Threads: 4, Processes: 1, Established: -1, Cmdline: "nginx: worker process"}
	sh := procs.Candidate{PID: 4444, Name: "sh", User: "root", Threads: 1, Processes: 1, Established: -1, Cmdline: "sh"}
	tests := []struct {
		name string
		opts PsOptions
		want []procs.Candidate
	}{
		{"threaded ones", PsOptions{}, []procs.Candidate{java, nginx}},
		{"all", PsOptions{All: true}, []procs.Candidate{java, nginx, sh}},
		{"JVMs", PsOptions{JavaOnly: true, All: true}, []procs.Candidate{java}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			opts := tc.opts
			opts.IO = IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
			opts.ProcRoot = root
			opts.Format = "json"
			require.NoError(t, psRun(&opts))
			var got []procs.Candidate
			require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
			assert.Equal(t, tc.want, got)
			assert.Empty(t, errOut.String())
		})
	}
}

// ps run as root does not tell root to run as root: it says what refused
// it (here, where PID 1 can be a VM's undumpable init, and in a test).
func TestPsUninspectedMessage(t *testing.T) {
	assert.Equal(t, "ctprof: 2 processes could not be inspected (JVM or not): they belong to other users; run as root or as their user", procs.UninspectedMessage(2, false))
	m := procs.UninspectedMessage(1, true)
	assert.Contains(t, m, "1 process could not be inspected")
	assert.NotContains(t, m, "run as root")
}
