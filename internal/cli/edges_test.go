package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testnative"
)

// contendedDump is a HotSpot dump with one contended monitor, enough for a
// summary and every output file.
const contendedDump = "Full thread dump OpenJDK 64-Bit Server VM (17 mixed mode):\n\n" +
	"\"w1\" #5 prio=5 os_prio=0 tid=0x1 nid=0x2 waiting for monitor entry [0x0]\n" +
	"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat a.B.c(B.java:1)\n\t- waiting to lock <0x10> (a a.B)\n\n" +
	"\"w2\" #6 prio=5 os_prio=0 tid=0x3 nid=0x4 waiting for monitor entry [0x0]\n" +
	"   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat a.B.c(B.java:1)\n\t- waiting to lock <0x10> (a a.B)\n\n" +
	"\"owner\" #7 prio=5 os_prio=0 tid=0x5 nid=0x6 runnable [0x0]\n   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:2)\n\t- locked <0x10> (a a.B)\n\n" +
	"JNI global refs: 1, weak refs: 0\n"

// No output may replace an input, the recording, or another output, by
// whatever name it is given: the run is refused as a usage error before
// any work, and the input is untouched.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(in, []byte(contendedDump), 0o644))
	hard := filepath.Join(dir, "hard.txt")
	require.NoError(t, os.Link(in, hard))
	sym := filepath.Join(dir, "sym.txt")
	require.NoError(t, os.Symlink(in, sym))
	rec := filepath.Join(dir, "run.ctprof")
	require.NoError(t, os.WriteFile(rec, []byte("not really a recording"), 0o644))
	t.Chdir(dir)
	fresh := filepath.Join(dir, "fresh.out") // does not exist

	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"analyze pprof onto its input", []string{"analyze", "--pprof", in, in}, "would replace the input"},
		{"analyze html onto ./input", []string{"analyze", "--html", "./in.txt", "in.txt"}, "would replace the input"},
		{"analyze folded onto a hard link", []string{"analyze", "--folded", hard, in}, "would replace the input"},
		{"analyze speedscope onto a symlink", []string{"analyze", "--speedscope", sym, in}, "would replace the input"},
		{"analyze html onto the second input", []string{"analyze", "--html", in, "-", in}, "would replace the input"},
		{"report html onto its recording", []string{"report", "--html", rec, rec}, "would replace the input"},
		{"report pprof onto ./recording", []string{"report", "--pprof", "./run.ctprof", rec}, "would replace the input"},
		{"attach html onto the recording", []string{"attach", "1", "--record", fresh, "--html", fresh}, "would replace the recording"},
		{"attach pprof onto the recording, by another name", []string{"attach", "1", "--record", fresh, "--pprof", "./fresh.out"}, "would replace the recording"},
		{"two outputs on one new file", []string{"analyze", "--html", fresh, "--folded", "./fresh.out", in}, "would both be written"},
		{"two outputs on one file by link", []string{"analyze", "--html", hard + ".none", "--pprof", sym, "--folded", hard, "-"}, "would both be written"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, contendedDump, tc.args...)
			assert.Equal(t, ExitUsage, code, errOut)
			assert.Contains(t, errOut, tc.msg)
			assert.Empty(t, out, "no work before the refusal")
			b, err := os.ReadFile(in)
			require.NoError(t, err)
			assert.Equal(t, contendedDump, string(b), "the input is untouched")
			b, err = os.ReadFile(rec)
			require.NoError(t, err)
			assert.Equal(t, "not really a recording", string(b))
			_, err = os.Stat(fresh)
			assert.True(t, os.IsNotExist(err), "nothing was written to %s", fresh)
		})
	}

	// Distinct files are fine.
	code, _, errOut := run(t, "", "analyze", "--html", filepath.Join(dir, "r.html"), "--pprof", filepath.Join(dir, "r.pb.gz"), in, hard)
	assert.Equal(t, ExitOK, code, errOut)
}

// Numeric flags outside their range are usage errors (exit 2) with a clear
// message, never a silently different run.
func TestNumericFlagsAreUsageErrors(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(in, []byte(contendedDump), 0o644))
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"attach", "1", "--pause-budget", "NaN"}, "--pause-budget"},
		{[]string{"attach", "1", "--pause-budget", "Inf"}, "--pause-budget"},
		{[]string{"attach", "1", "--pause-budget", "-Inf"}, "--pause-budget"},
		{[]string{"attach", "1", "--pause-budget", "0"}, "--pause-budget"},
		{[]string{"attach", "1", "--pause-budget", "-1"}, "--pause-budget"},
		{[]string{"attach", "1", "--pause-budget", "100"}, "--pause-budget"},
		{[]string{"serve", "--pid", "1", "--pause-budget", "NaN"}, "--pause-budget"},
		{[]string{"scale", "--throughput-regex", "x", "--pause-budget", "nan", "--", "true"}, "--pause-budget"},
		{[]string{"attach", "1", "--dump-interval", "-1s"}, "--dump-interval"},
		{[]string{"attach", "1", "--top", "0"}, "--top must be at least 1"},
		{[]string{"attach", "1", "--top", "-3"}, "--top must be at least 1"},
		{[]string{"analyze", "--top", "0", in}, "--top must be at least 1"},
		{[]string{"analyze", "--top", "-1", in}, "--top must be at least 1"},
		{[]string{"report", "--top", "0", in}, "--top must be at least 1"},
		{[]string{"serve", "--pid", "1", "--top", "-1"}, "--top must be at least 1"},
		{[]string{"attach", "1", "--interval", "0s"}, "--interval"},
		{[]string{"attach", "1", "--interval", "-1s"}, "--interval"},
		{[]string{"attach", "1", "--count", "-1"}, "--count must not be negative"},
		{[]string{"attach", "1", "--duration", "-5s"}, "--duration must not be negative"},
		{[]string{"attach", "1", "--port", "70000"}, "--port"},
		{[]string{"serve", "--pid", "1", "--interval", "0s"}, "--interval"},
		{[]string{"attach", "1", "--listen", "abc"}, "--listen"},
		{[]string{"attach", "1", "--listen", "127.0.0.1:99999"}, "--listen"},
		{[]string{"serve", "--pid", "1", "--listen", "abc"}, "--listen"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			assert.Equal(t, ExitUsage, code, errOut)
			assert.Contains(t, errOut, tc.msg)
			assert.True(t, strings.HasPrefix(errOut, "ctprof: "), errOut)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.Empty(t, out)
		})
	}
	// The edges that are allowed stay allowed.
	code, _, errOut := run(t, "", "analyze", "--top", "1", in)
	assert.Equal(t, ExitOK, code, errOut)
}

// A well-formed address that cannot be bound is the run's failure (exit 1),
// said plainly; only a malformed one is the caller's (exit 2).
func TestListenPortInUseIsAFailure(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	code, _, errOut := run(t, "", "serve", "--pid", strconv.Itoa(os.Getpid()), "--listen", busy.Addr().String())
	assert.Equal(t, ExitFailure, code, errOut)
	assert.Contains(t, errOut, "listen "+busy.Addr().String()+": address already in use; choose another with --listen")
}

// startCtprof runs the built binary with args (through wrap, e.g. timeout,
// when given; standard output to stdout when given) and collects its
// standard error; lines gets each line.
type ctprofProc struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	lines  chan string
	done   chan error
}

func startCtprof(t *testing.T, wrap []string, stdout *os.File, args ...string) *ctprofProc {
	t.Helper()
	bin, err := buildCtprof()
	require.NoError(t, err)
	argv := append(append(append([]string{}, wrap...), bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &ctprofProc{cmd: cmd, lines: make(chan string, 1000), done: make(chan error, 1)}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&p.stderr, sc.Text())
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { stopChild(cmd.Process) })
	return p
}

// stopChild ends our child, by pid: SIGTERM first, which ctprof takes as
// the end of its run and which timeout(1), when it wraps ctprof, passes on
// to it (SIGKILL would orphan the ctprof under it, still running), then
// SIGKILL if it is still there after 10 s. A no-op once it has been reaped.
func stopChild(proc *os.Process) {
	if proc.Signal(syscall.SIGTERM) != nil {
		return // already reaped
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(proc.Pid, 0) != nil {
			return // exited and reaped by the reader goroutine's Wait
		}
	}
	_ = proc.Kill()
}

// waitLine waits for a line of standard error containing s.
func (p *ctprofProc) waitLine(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, s) {
				return
			}
		case err := <-p.done:
			p.done <- err
			t.Fatalf("ctprof exited (%v) before saying %q:\n%s", err, s, p.stderr.String())
		case <-deadline:
			t.Fatalf("ctprof did not say %q:\n%s", s, p.stderr.String())
		}
	}
}

func (p *ctprofProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("ctprof did not exit:\n%s", p.stderr.String())
		return nil
	}
}

// A hangup (the terminal or ssh session closed) ends attach like Ctrl-C:
// exit 0, the summary and the HTML report of what was seen.
func TestAttachStopsCleanlyOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			target := testnative.Start(t, "many_threads", "3")
			dir := t.TempDir()
			html := filepath.Join(dir, "run.html")
			rec := filepath.Join(dir, "run.ctprof")
			out := filepath.Join(dir, "summary.json")
			f, err := os.Create(out)
			require.NoError(t, err)
			defer f.Close()
			p := startCtprof(t, nil, f, "attach", strconv.Itoa(target.PID), "--interval", "50ms", "--format", "json", "--html", html, "--record", rec)
			p.waitLine(t, "sampling pid")
			// Samples are in when the recording grows past its header.
			first := int64(-1)
			deadline := time.Now().Add(60 * time.Second)
			for {
				if st, err := os.Stat(rec); err == nil {
					if first < 0 {
						first = st.Size()
					} else if st.Size() > first {
						break
					}
				}
				require.True(t, time.Now().Before(deadline), "no sample recorded:\n%s", p.stderr.String())
				time.Sleep(20 * time.Millisecond)
			}
			require.NoError(t, p.cmd.Process.Signal(sig))
			require.NoError(t, p.wait(t), "exit status after %s:\n%s", sig, p.stderr.String())
			assert.Contains(t, p.stderr.String(), "interrupted after")
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(b, &doc), "the summary: %s", b)
			assert.GreaterOrEqual(t, doc["samples"].(float64), 1.0)
			st, err := os.Stat(html)
			require.NoError(t, err, "the HTML report after %s:\n%s", sig, p.stderr.String())
			assert.Greater(t, st.Size(), int64(1000))
			select {
			case <-target.Done():
				t.Fatal("the target died")
			default:
			}
		})
	}
}

// --name never picks ctprof or what started it, though their command lines
// hold the pattern: run as `sh -c 'timeout 60 ctprof attach --name WORD'`,
// ctprof, timeout and sh all match WORD, and only the real target counts.
func TestAttachByNameSkipsItsOwnAncestors(t *testing.T) {
	word := uniqueName(t, "anc")
	target := startNamed(t, "many_threads", word, "2")
	bin, err := buildCtprof()
	require.NoError(t, err)
	script := "timeout 60 " + bin + " attach --name " + word + " --count 1 --interval 50ms --format json"
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out, &doc), string(out))
	assert.Equal(t, float64(target.pid), doc["target"].(map[string]any)["pid"])
}

// serve --name likewise never serves itself or its ancestors.
func TestServeByNameSkipsItsOwnAncestors(t *testing.T) {
	word := uniqueName(t, "anc")
	target := startNamed(t, "many_threads", word, "2")
	p := startCtprof(t, []string{"timeout", "60"}, nil, "serve", "--name", word, "--listen", "127.0.0.1:0", "--interval", "100ms", "--discovery-interval", "200ms")
	var url string
	deadline := time.After(60 * time.Second)
	for url == "" {
		select {
		case l := <-p.lines:
			if i := strings.Index(l, "serving metrics on "); i >= 0 {
				url = strings.Fields(l[i+len("serving metrics on "):])[0]
			}
		case err := <-p.done:
			t.Fatalf("ctprof serve exited early: %v\n%s", err, p.stderr.String())
		case <-deadline:
			t.Fatalf("ctprof serve did not say where it listens:\n%s", p.stderr.String())
		}
	}
	waitSeries(t, url, target.pid, "sampled", func(s map[string]float64) bool {
		return s[fmt.Sprintf("ctprof_samples_total{pid=%d,target=%s}", target.pid, word)] >= 2
	})
	// Several discovery rounds have passed: only the target is served.
	mfs := scrape(t, url)
	up := mfs["ctprof_up"]
	require.NotNil(t, up)
	var pids []string
	for _, m := range up.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "pid" {
				pids = append(pids, l.GetValue())
			}
		}
	}
	assert.Equal(t, []string{strconv.Itoa(target.pid)}, pids, "stderr:\n%s", p.stderr.String())
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "sampling pid"), p.stderr.String())
}

// A name is escaped once, where it is printed, and the same way in every
// section: FINDINGS, LOCK INSTANCES and IDENTICAL STACKS show a thread's name in one
// quoted form (a tab as \t, an escape as \x1b, a backslash as \\), never
// escaped twice.
func TestNamesAreEscapedOnceInEverySection(t *testing.T) {
	owner := "own\x1b[31mer\\x"
	waiters := []string{"tab\there", "back\\slash\x1b]0;t\x07"}
	var dump strings.Builder
	dump.WriteString("Full thread dump OpenJDK 64-Bit Server VM (17 mixed mode):\n\n")
	for i, w := range waiters {
		fmt.Fprintf(&dump, "\"%s\" #%d prio=5 os_prio=0 tid=0x%d nid=0x%d waiting for monitor entry [0x0]\n", w, 5+i, 1+i, 2+i)
		dump.WriteString("   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat a.B.c(B.java:1)\n\t- waiting to lock <0x10> (a a.B)\n\n")
	}
	fmt.Fprintf(&dump, "\"%s\" #7 prio=5 os_prio=0 tid=0x5 nid=0x6 runnable [0x0]\n", owner)
	dump.WriteString("   java.lang.Thread.State: RUNNABLE\n\tat a.B.c(B.java:2)\n\t- locked <0x10> (a a.B)\n\nJNI global refs: 1, weak refs: 0\n")
	code, out, errOut := run(t, dump.String(), "analyze", "-")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\x07")
	out = "\n" + out // every section starts after a newline

	section := func(name string) string {
		i := strings.Index(out, "\n"+name)
		require.GreaterOrEqual(t, i, 0, "no %s section:\n%s", name, out)
		rest := out[i+1:]
		if j := strings.Index(rest, "\n\n"); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	findings := section("FINDINGS")
	locks := section("LOCK INSTANCES")
	stacks := section("IDENTICAL STACKS")
	wantOwner := `"own\x1b[31mer\\x"`
	assert.Contains(t, findings, wantOwner, findings)
	assert.Contains(t, locks, wantOwner, locks)
	assert.Contains(t, stacks, `"tab\there"`, stacks)
	assert.Contains(t, stacks, `"back\\slash\x1b]0;t\a"`, stacks)
	for _, s := range []string{findings, locks, stacks} {
		assert.NotContains(t, s, `\\x1b`, "escaped twice")
		assert.NotContains(t, s, `\\t`, "escaped twice")
		assert.NotContains(t, s, `\\\\`, "a backslash escaped twice")
	}
}

// serve stops cleanly on a hangup too: exit 0, "stopped".
func TestServeStopsCleanlyOnSIGHUP(t *testing.T) {
	target := testnative.Start(t, "many_threads", "2")
	p := startCtprof(t, nil, nil, "serve", "--pid", strconv.Itoa(target.PID), "--listen", "127.0.0.1:0", "--interval", "100ms")
	p.waitLine(t, "sampling pid")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.NoError(t, p.wait(t), "exit status after SIGHUP:\n%s", p.stderr.String())
	assert.Contains(t, p.stderr.String(), "ctprof: stopped")
}
