// Package testnative compiles the C programs in testdata/c with the system's
// cc and starts them, so tests can profile real native processes: real
// pthreads, real futexes, real sockets.
//
// A missing compiler fails the test with a message naming what to install;
// it never skips. Every process started here is killed by its pid when the
// test ends, and every wait is a bounded poll on an observable condition.
package testnative

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testprio"
)

// sourceDir locates testdata/c by walking up to the module root.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate testnative's source")
	}
	for d := filepath.Dir(file); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "c"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("go.mod not found above %s", file)
		}
	}
}

var compileMu sync.Mutex

// Build compiles testdata/c/<name>.c, or <name>.cc with the C++ compiler
// (cached under the temp dir by a hash of the source, shared by test
// binaries) and returns the executable's path.
func Build(t testing.TB, name string) string {
	t.Helper()
	return BuildFlags(t, name)
}

// BuildFlags is Build with extra compiler flags after the usual ones (a
// later -O2 or -O0 overrides the -O1), cached apart from the usual build.
func BuildFlags(t testing.TB, name string, extra ...string) string {
	t.Helper()
	dir, err := sourceDir()
	if err != nil {
		t.Fatalf("testnative: %v", err)
	}
	src, compiler, flags := filepath.Join(dir, name+".c"), "cc", []string{"-O1", "-g", "-Wall", "-pthread"}
	if _, err := os.Stat(src); err != nil {
		if _, errCC := os.Stat(filepath.Join(dir, name+".cc")); errCC == nil {
			src, compiler, flags = filepath.Join(dir, name+".cc"), "c++", []string{"-O1", "-g", "-Wall", "-pthread", "-std=c++17"}
		}
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("testnative: %v", err)
	}
	flags = append(flags, extra...)
	if len(extra) > 0 {
		code = append(code, "\x00"+strings.Join(extra, " ")...)
	}
	cc, err := exec.LookPath(compiler)
	if err != nil {
		t.Fatalf("testnative: no compiler (%s) on PATH: install Debian's gcc and g++ (make test does) — %v", compiler, err)
	}
	sum := sha256.Sum256(code)
	// The binary keeps the program's name (the kernel's comm and the
	// symbolizer's module name are taken from it); the hash names the dir.
	dir = filepath.Join(os.TempDir(), "ctprof-testnative-"+hex.EncodeToString(sum[:])[:16])
	out := filepath.Join(dir, name)
	compileMu.Lock()
	defer compileMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	// World-readable so a test can run the program as another user.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	// -g keeps the symbol table the futex symbolizer reads, as an
	// unstripped development build would.
	cmd := exec.Command(cc, append(flags, "-o", tmp, src)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testnative: %s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	return out
}

// BuildStripped is Build with the symbol table stripped (strip(1)), as a
// release build ships: a copy in a directory of its own, under the same
// name, so the kernel's comm and the module name are those of the
// unstripped build.
func BuildStripped(t testing.TB, name string, extra ...string) string {
	t.Helper()
	bin := BuildFlags(t, name, extra...)
	dir := filepath.Join(filepath.Dir(bin), "stripped")
	out := filepath.Join(dir, name)
	compileMu.Lock()
	defer compileMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	strip, err := exec.LookPath("strip")
	if err != nil {
		t.Fatalf("testnative: no strip on PATH: install Debian's binutils (make test does) — %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	cmd := exec.Command(strip, "-o", tmp, bin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testnative: %s: %v\n%s", strings.Join(cmd.Args, " "), err, b)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatalf("testnative: %v", err)
	}
	return out
}

// Process is a running test program.
type Process struct {
	PID  int
	Name string

	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
	once sync.Once
}

// Options adjust how a program starts.
type Options struct {
	// Credential runs the program as another user (the test must be root).
	Credential *syscall.Credential
	// Dir is the working directory; a fresh temp dir when empty.
	Dir string
	// Prioritized runs the program at a raised priority in a session of
	// its own (testprio.Prioritized), for a test whose figures the rest
	// of the machine's load would move. The pid is still the program's.
	Prioritized bool
	// Stripped runs the program built without its symbol table
	// (BuildStripped).
	Stripped bool
	// Flags are extra compiler flags (BuildFlags), as "-O2".
	Flags []string
	// Binary runs this file (a build of the program the test prepared:
	// stripped with a debug link, say) instead of building one.
	Binary string
}

// Start builds and starts testdata/c/<name>.c with args, waits for its
// READY line and registers a cleanup that kills it by pid.
func Start(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	return StartWith(t, Options{}, name, args...)
}

// StartWith is Start with options.
func StartWith(t testing.TB, o Options, name string, args ...string) *Process {
	t.Helper()
	bin := o.Binary
	switch {
	case bin != "":
	case o.Stripped:
		bin = BuildStripped(t, name, o.Flags...)
	default:
		bin = BuildFlags(t, name, o.Flags...)
	}
	command := append([]string{bin}, args...)
	if o.Prioritized {
		command = testprio.Prioritized(t, command...)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = o.Dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	// The kernel kills the child if the test binary dies without cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: o.Credential}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("testnative: %v", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("testnative: start %s: %v", bin, err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.Write(sc.Bytes())
			p.out.WriteByte('\n')
			p.mu.Unlock()
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Stop)
	p.WaitOutput(t, 30*time.Second, "READY")
	return p
}

// Output is what the program printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// WaitOutput polls until the output holds a line equal to line, failing
// the test after timeout or when the program exits first.
func (p *Process) WaitOutput(t testing.TB, timeout time.Duration, line string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range strings.Split(p.Output(), "\n") {
			if l == line {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("testnative: %s exited (%v) before printing %q; output:\n%s", p.Name, p.err, line, p.Output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("testnative: %s did not print %q within %s; output:\n%s", p.Name, line, timeout, p.Output())
		}
	}
}

// Value returns the rest of the first output line starting with key+" ",
// e.g. Value("PORT") for "PORT 41234".
func (p *Process) Value(key string) string {
	for _, l := range strings.Split(p.Output(), "\n") {
		if v, ok := strings.CutPrefix(l, key+" "); ok {
			return v
		}
	}
	return ""
}

// Done is closed when the program has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop kills the program by its pid (it is our child, so the pid cannot
// have been reused before we reap it) and reaps it. Idempotent.
func (p *Process) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// Request sends sig to the program (by its pid) and returns the fields of
// the next output line starting with prefix+" " as key=value pairs ("COUNTS
// calls=12 woken=10" → calls: 12, woken: 10), failing the test when none
// comes within 10 s.
func (p *Process) Request(t testing.TB, sig syscall.Signal, prefix string) map[string]uint64 {
	t.Helper()
	before := strings.Count(p.Output(), "\n"+prefix+" ")
	if err := syscall.Kill(p.PID, sig); err != nil {
		t.Fatalf("testnative: signal %s: %v", p.Name, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(p.Output(), "\n"+prefix+" ") == before {
		if time.Now().After(deadline) {
			t.Fatalf("testnative: %s printed no %s line within 10 s; output:\n%s", p.Name, prefix, p.Output())
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := p.Output()
	i := strings.LastIndex(out, "\n"+prefix+" ")
	line, _, _ := strings.Cut(out[i+1:], "\n")
	fields := map[string]uint64{}
	for _, kv := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("testnative: %s: %q in %q", p.Name, kv, line)
		}
		fields[k] = n
	}
	return fields
}

// RequireExactWaits fails the test unless it runs as root, which the
// kernel's futex tracepoints need (or CAP_PERFMON, which make test does
// not set up): the tests of exact waits are not skipped, since CI runs as
// root.
func RequireExactWaits(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("exact futex waits need root or CAP_PERFMON: run the tests as root (make test does)")
	}
}

// SourceLine is the number of the first line of testdata/c/<file> that
// holds text, for tests that check the source positions ctprof reads from
// a program's line table.
func SourceLine(t testing.TB, file, text string) int {
	t.Helper()
	dir, err := sourceDir()
	if err != nil {
		t.Fatalf("testnative: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("testnative: %v", err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("testnative: no %q in %s", text, file)
	return 0
}

// PollUntil retries fn until it returns nil or the deadline passes, and
// returns the last error. The machines are small and shared: conditions
// are waited for, never assumed after a fixed sleep.
func PollUntil(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
