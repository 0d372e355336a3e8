// Package testjvm starts real JVMs running the scenario programs in
// testdata/java so tests can take real thread dumps from them.
//
// Everything here talks to real JDKs: scenarios are compiled with the JDK's own
// javac, run with its java, and inspected with its jcmd. Missing JDKs are a
// test failure, not a skip, because a silently skipped profiler test proves
// nothing; `make test` installs both JDKs.
//
// The machine these tests run on is small and shared, so every wait in this
// package is a bounded poll on an observable condition, never a bare sleep.
package testjvm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testprio"
)

// JDK identifies one installed JDK.
type JDK struct {
	Name  string // "jdk17" or "jdk25"; stable, suitable for subtest names
	Home  string // JAVA_HOME
	Major int    // feature release, e.g. 17
}

// Bin returns the path of a tool in the JDK's bin directory, e.g. "jcmd".
func (j JDK) Bin(tool string) string {
	return filepath.Join(j.Home, "bin", tool)
}

// SupportsDumpToFile reports whether jcmd's Thread.dump_to_file exists on this
// JDK. It arrived with virtual threads (JDK 21); JDK 17 only has Thread.print.
func (j JDK) SupportsDumpToFile() bool {
	return j.Major >= 21
}

// jdkSpec describes where a JDK is expected and how to describe it when it
// is missing. The env override exists for machines with different layouts.
type jdkSpec struct {
	name, label, env, home string
	major                  int
}

var (
	jdk17Spec = jdkSpec{name: "jdk17", label: "OpenJDK 17", env: "CTPROF_JDK17_HOME", home: "/usr/lib/jvm/java-17-openjdk-amd64", major: 17}
	jdk25Spec = jdkSpec{name: "jdk25", label: "Temurin 25", env: "CTPROF_JDK25_HOME", home: "/usr/lib/jvm/temurin-25-jdk-amd64", major: 25}
)

// JDK17 returns the OpenJDK 17 installation, failing the test if it is missing.
func JDK17(t testing.TB) JDK {
	t.Helper()
	return mustFind(t, jdk17Spec)
}

// JDK25 returns the Temurin 25 installation, failing the test if it is missing.
func JDK25(t testing.TB) JDK {
	t.Helper()
	return mustFind(t, jdk25Spec)
}

// All returns every JDK the tests cover, oldest first.
func All(t testing.TB) []JDK {
	t.Helper()
	return []JDK{JDK17(t), JDK25(t)}
}

func mustFind(t testing.TB, s jdkSpec) JDK {
	t.Helper()
	home := s.home
	if v := os.Getenv(s.env); v != "" {
		home = v
	}
	j, err := findJDK(s, home)
	if err != nil {
		t.Fatalf("%s not found at %s (%v): run `make test`, which installs it (or set %s)", s.label, home, err, s.env)
	}
	return j
}

func findJDK(s jdkSpec, home string) (JDK, error) {
	j := JDK{Name: s.name, Home: home, Major: s.major}
	for _, tool := range []string{"java", "javac", "jcmd"} {
		st, err := os.Stat(j.Bin(tool))
		if err != nil {
			return JDK{}, err
		}
		if st.Mode()&0o111 == 0 {
			return JDK{}, fmt.Errorf("%s is not executable", j.Bin(tool))
		}
	}
	// The release file is cheaper than running `java -version` and guards
	// against an env override pointing at the wrong JDK.
	major, err := releaseMajor(filepath.Join(home, "release"))
	if err != nil {
		return JDK{}, err
	}
	if major != s.major {
		return JDK{}, fmt.Errorf("%s/release says JDK %d, want %d", home, major, s.major)
	}
	return j, nil
}

var javaVersionRE = regexp.MustCompile(`(?m)^JAVA_VERSION="(\d+)`)

func releaseMajor(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	m := javaVersionRE.FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no JAVA_VERSION in %s", path)
	}
	return strconv.Atoi(string(m[1]))
}

// ---------------------------------------------------------------------------
// Scenarios and compilation

// minJDKRE matches the marker a scenario uses to declare it needs a newer
// JDK, e.g. "// testjvm:min-jdk=21" (VirtualThreads).
var minJDKRE = regexp.MustCompile(`(?m)^//\s*testjvm:min-jdk=(\d+)\s*$`)

// scenarioFlags are extra JVM flags for specific scenarios.
var scenarioFlags = map[string][]string{
	// 4000 threads with the default 1 MiB (x86-64) stack reservation would be
	// wasteful; the program also asks for 256 KiB per thread explicitly.
	"ManyThreads": {"-Xss256k"},
	// Two virtual threads are pinned forever; keep carriers for the rest.
	"VirtualThreads": {"-Djdk.virtualThreadScheduler.parallelism=4"},
	// Counted loops without safepoint polls (the serial collector's
	// default, said here so that it holds whatever the defaults become).
	"SafepointStall": {"-XX:-UseCountedLoopSafepoints"},
	// Room for its live set (the first -Xmx, 256m, gives way to this).
	"LongGCPause": {"-Xms2g", "-Xmx2g"},
}

// readyTimeouts overrides the default wait for READY for slow scenarios.
var readyTimeouts = map[string]time.Duration{
	"ManyThreads": 120 * time.Second,
}

// DefaultReadyTimeout bounds how long Start waits for a scenario's READY line.
const DefaultReadyTimeout = 60 * time.Second

type scenarioSource struct {
	name     string
	path     string
	minMajor int
	content  []byte
}

// javaDir locates testdata/java. Tests run with the package directory as the
// working directory, so walk up to the module root; fall back to this source
// file's location for binaries run from elsewhere.
func javaDir() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			candidate := filepath.Join(d, "testdata", "java")
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				if st, err := os.Stat(candidate); err == nil && st.IsDir() {
					return candidate, nil
				}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("testdata/java not found above %v", starts)
}

func loadScenarios() ([]scenarioSource, error) {
	dir, err := javaDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.java"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no scenarios in %s", dir)
	}
	sort.Strings(paths)
	var out []scenarioSource
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		s := scenarioSource{name: strings.TrimSuffix(filepath.Base(p), ".java"), path: p, content: b}
		if m := minJDKRE.FindSubmatch(b); m != nil {
			s.minMajor, _ = strconv.Atoi(string(m[1]))
		}
		out = append(out, s)
	}
	return out, nil
}

// Scenarios lists the scenario names (testdata/java/<name>.java), sorted.
func Scenarios(t testing.TB) []string {
	t.Helper()
	srcs, err := loadScenarios()
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.name
	}
	return names
}

// Supports reports whether scenario can run on j (VirtualThreads needs 21+).
func Supports(t testing.TB, j JDK, scenario string) bool {
	t.Helper()
	s := mustScenario(t, scenario)
	return j.Major >= s.minMajor
}

func mustScenario(t testing.TB, scenario string) scenarioSource {
	t.Helper()
	srcs, err := loadScenarios()
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	var names []string
	for _, s := range srcs {
		if s.name == scenario {
			return s
		}
		names = append(names, s.name)
	}
	t.Fatalf("testjvm: unknown scenario %q (have %s)", scenario, strings.Join(names, ", "))
	return scenarioSource{}
}

// compileLocks serialises compilation of one class directory within this
// test binary; other binaries are handled by the atomic rename in Compile.
var compileLocks sync.Map // class dir -> *sync.Mutex

// readyMarker is written into a class directory before it is published, so a
// directory that has it is complete.
const readyMarker = ".complete"

// Compile compiles every scenario that j supports, in one javac run, and
// returns the class directory. The result is cached under os.TempDir(),
// keyed by the JDK and a hash of all sources, so it is shared by parallel
// tests, by the test binaries of other packages, and by later runs; a changed
// source gets a new directory. Safe for concurrent callers in any process.
func Compile(t testing.TB, j JDK) string {
	t.Helper()
	dir, err := compile(j)
	if err != nil {
		t.Fatalf("testjvm: compiling scenarios with %s: %v", j.Name, err)
	}
	return dir
}

func compile(j JDK) (string, error) {
	srcs, err := loadScenarios()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", j.Name, j.Home, j.Major)
	var files []string
	for _, s := range srcs {
		if j.Major < s.minMajor {
			continue
		}
		files = append(files, s.path)
		fmt.Fprintf(h, "%s\x00%d\x00", s.name, len(s.content))
		h.Write(s.content)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ctprof-testjvm-%s-%s", j.Name, hex.EncodeToString(h.Sum(nil))[:16]))
	return compileInto(j, dir, files, nil)
}

// compileInto compiles files with j's javac against classpath into dir,
// unless dir is already complete. dir's name must change whenever the
// sources, the JDK or the classpath do.
func compileInto(j JDK, dir string, files, classpath []string) (string, error) {
	mu, _ := compileLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	if _, err := os.Stat(filepath.Join(dir, readyMarker)); err == nil {
		return dir, nil
	}
	staging, err := os.MkdirTemp(os.TempDir(), "ctprof-testjvm-staging-")
	if err != nil {
		return "", err
	}
	// MkdirTemp makes it 0700; the published cache is shared, so let other
	// users of a shared /tmp read it too.
	if err := os.Chmod(staging, 0o755); err != nil {
		return "", err
	}
	defer os.RemoveAll(staging) // no-op once renamed into place

	args := append(toolJVMFlags("-J"), "-encoding", "UTF-8", "-nowarn", "-d", staging)
	if len(classpath) > 0 {
		args = append(args, "-cp", strings.Join(classpath, string(os.PathListSeparator)))
	}
	args = append(args, files...)
	cmd := exec.Command(j.Bin("javac"), args...)
	cmd.Env = toolEnv(j)
	out, err := runWithTimeout(cmd, 3*time.Minute)
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", j.Bin("javac"), strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(staging, readyMarker), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(staging, dir); err != nil {
		// Another process published the same sources first; theirs is as
		// good as ours.
		if _, statErr := os.Stat(filepath.Join(dir, readyMarker)); statErr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("publishing classes to %s: %w", dir, err)
	}
	return dir, nil
}

// toolJVMFlags keeps the short-lived tool JVMs (javac, jcmd) cheap on a
// 2-core machine; prefix is "-J" for launchers that forward JVM options.
func toolJVMFlags(prefix string) []string {
	flags := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = prefix + f
	}
	return out
}

// toolEnv is the environment for every JDK process we start. Options
// injected through the environment would change behaviour and add "Picked
// up ..." lines, and a non-UTF-8 locale makes jcmd print non-ASCII thread
// names as '?', which would defeat the HostileNames scenario.
func toolEnv(j JDK) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_HOME", "LANG", "LANGUAGE":
			continue
		}
		if strings.HasPrefix(k, "LC_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "JAVA_HOME="+j.Home)
}

// runWithTimeout runs cmd, returning stdout and stderr combined, and kills it
// (only it: it is our child) if it outlives the timeout.
func runWithTimeout(cmd *exec.Cmd, timeout time.Duration) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.Bytes(), err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return out.Bytes(), fmt.Errorf("timed out after %s", timeout)
	}
}

// ---------------------------------------------------------------------------
// Processes

// Process is a running scenario JVM, started by Start and killed by the
// test's cleanup.
type Process struct {
	PID      int
	JDK      JDK
	Scenario string

	cmd     *exec.Cmd
	logPath string // in a per-process t.TempDir(), also the JVM's cwd

	done    chan struct{} // closed when the JVM has exited and been reaped
	waitErr error         // valid after done is closed

	stopOnce sync.Once

	safepointLog string // Options.SafepointLog's file; "" without one
}

// Start compiles (or reuses) the scenarios for j, starts scenario with args,
// waits for its READY line and registers a cleanup that kills it. The
// JVM's stdout and stderr both go to LogPath(), which is also where SIGQUIT
// dumps land.
func Start(t testing.TB, j JDK, scenario string, args ...string) *Process {
	t.Helper()
	return StartWith(t, j, scenario, Options{}, args...)
}

// Options adjust how a scenario JVM starts.
type Options struct {
	// JVMFlags are added to the JVM's command line (e.g.
	// "-XX:+DisableAttachMechanism").
	JVMFlags []string
	// Credential runs the JVM as another user (the test must be root); its
	// working directory is then made accessible to that user.
	Credential *syscall.Credential
	// ClassPath entries follow the scenario classes on the JVM's class
	// path (third-party jars, see StartLib).
	ClassPath []string
	// Prioritized runs the JVM at a raised priority in a session of its
	// own (testprio.Prioritized), for a test whose figures the rest of
	// the machine's load would move. The pid is still the JVM's.
	Prioritized bool
	// SafepointLog has the JVM log its safepoints (-Xlog:safepoint) to a
	// file beside its output, for Process.ThreadDumpsLogged.
	SafepointLog bool

	// classDir, set by StartLib, is a class directory compiled from
	// testdata/javalibs; the scenario is then not looked up in testdata/java.
	classDir string
}

// StartWith is Start with options.
func StartWith(t testing.TB, j JDK, scenario string, o Options, args ...string) *Process {
	t.Helper()
	classes := o.classDir
	if classes == "" {
		src := mustScenario(t, scenario)
		if j.Major < src.minMajor {
			t.Fatalf("testjvm: scenario %s needs JDK %d+, %s is JDK %d", scenario, src.minMajor, j.Name, j.Major)
		}
		classes = Compile(t, j)
	}

	dir := t.TempDir()
	logPath := filepath.Join(dir, scenario+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("testjvm: creating log for %s: %v", scenario, err)
	}

	jvmArgs := []string{
		"-Xmx256m",
		// One GC thread instead of a pool sized for the machine. The JIT is
		// left alone: -XX:TieredStopAtLevel=1 would be cheaper but changes
		// the dump header to "mixed mode, emulated-client", which real
		// production dumps do not have.
		"-XX:+UseSerialGC",
		// Keep names and log text byte-exact regardless of the locale.
		"-Dfile.encoding=UTF-8", "-Dstdout.encoding=UTF-8", "-Dstderr.encoding=UTF-8",
		"-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8",
	}
	jvmArgs = append(jvmArgs, scenarioFlags[scenario]...)
	// A scenario's JNI library, built and passed by path (jni.go).
	jvmArgs = append(jvmArgs, jniFlags(t, j, scenario)...)
	jvmArgs = append(jvmArgs, o.JVMFlags...)
	safepointLog := ""
	if o.SafepointLog {
		safepointLog = filepath.Join(dir, "safepoints.log")
		jvmArgs = append(jvmArgs, "-Xlog:safepoint:file="+safepointLog)
	}
	classpath := strings.Join(append([]string{classes}, o.ClassPath...), string(os.PathListSeparator))
	jvmArgs = append(jvmArgs, "-cp", classpath, scenario)
	jvmArgs = append(jvmArgs, args...)

	command := append([]string{j.Bin("java")}, jvmArgs...)
	if o.Prioritized {
		command = testprio.Prioritized(t, command...)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = dir
	cmd.Env = toolEnv(j)
	// Handing the child the *os.File directly (no pipe, no copying goroutine)
	// means the VM's own SIGQUIT output and System.out interleave exactly as
	// they would in a real application's log file.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// If the test binary dies without running cleanups (e.g. -timeout
	// panic), the kernel kills the JVM instead of leaking it. (Linux ties
	// this to the forking OS thread; Go only retires threads whose goroutine
	// exits while LockOSThread'ed, so do not call Start from such a one.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: o.Credential}
	if o.Credential != nil {
		// The JVM must be able to enter its working directory, and the
		// test's temp directories are private to root.
		for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
			_ = os.Chmod(d, 0o755)
		}
	}
	err = cmd.Start()
	logFile.Close() // the child has its own descriptor
	if err != nil {
		t.Fatalf("testjvm: starting %s on %s: %v", scenario, j.Name, err)
	}

	p := &Process{
		PID:      cmd.Process.Pid,
		JDK:      j,
		Scenario: scenario,
		cmd:      cmd,
		logPath:  logPath,
		done:     make(chan struct{}),

		safepointLog: safepointLog,
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testjvm: %s on %s (pid %d) log tail:\n%s", scenario, j.Name, p.PID, tail(p.Log(), 4096))
		}
		p.Stop()
	})

	timeout := DefaultReadyTimeout
	if d, ok := readyTimeouts[scenario]; ok {
		timeout = d
	}
	if err := p.waitReady(timeout); err != nil {
		t.Fatalf("testjvm: %s on %s (pid %d): %v\nlog (%s):\n%s", scenario, j.Name, p.PID, err, logPath, tail(p.Log(), 8192))
	}
	return p
}

var readyRE = regexp.MustCompile(`(?m)^READY\r?$`)

func (p *Process) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if readyRE.Match(p.Log()) {
			return nil
		}
		select {
		case <-p.done:
			// Scenarios run until killed, so exiting at all is a failure,
			// even right after printing READY.
			return fmt.Errorf("exited early (READY seen: %v): %v", readyRE.Match(p.Log()), p.waitErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no READY line within %s", timeout)
		}
	}
}

// Exited reports whether the JVM has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop kills the JVM with SIGKILL and reaps it. Idempotent; also registered
// as a cleanup by Start, so calling it is only needed to free CPU early.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		// os.Process.Kill signals through a pidfd where available, so it
		// cannot hit a recycled pid.
		_ = p.cmd.Process.Kill()
		<-p.done
		p.removeRuntimeFiles()
	})
}

// removeRuntimeFiles deletes the per-pid files a HotSpot VM leaves in /tmp
// when it cannot shut down cleanly (SIGKILL): the attach socket and the
// perf-data file. Both are named after our (now reaped) child's pid.
func (p *Process) removeRuntimeFiles() {
	pid := strconv.Itoa(p.PID)
	_ = os.Remove(filepath.Join("/tmp", ".java_pid"+pid))
	// The JVM may have run as another user (StartWith), so look in every
	// user's perf-data directory for our child's pid.
	if files, err := filepath.Glob(filepath.Join("/tmp", "hsperfdata_*", pid)); err == nil {
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
}

// Log returns what the JVM has written to stdout and stderr so far.
func (p *Process) Log() []byte {
	b, _ := os.ReadFile(p.logPath)
	return b
}

// LogPath is the file receiving the JVM's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// ThreadDumpsLogged counts the thread dumps the JVM has made (each
// Thread.print is a "PrintThreads" safepoint) in its safepoint log
// (Options.SafepointLog). The JVM writes the line as the safepoint ends,
// which may be a moment after the reply: it waits, up to 10 s, until at
// least want are there, and returns the count then, so that more than
// want shows too.
func (p *Process) ThreadDumpsLogged(t testing.TB, want int) int {
	t.Helper()
	if p.safepointLog == "" {
		t.Fatalf("testjvm: %s was started without Options.SafepointLog", p.Scenario)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(p.safepointLog)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("testjvm: %v", err)
		}
		n := bytes.Count(b, []byte(`Safepoint "PrintThreads"`))
		if n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitForLog polls Log() until cond holds, failing the test after timeout.
func (p *Process) WaitForLog(t testing.TB, timeout time.Duration, cond func(log []byte) bool) []byte {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		log := p.Log()
		if cond(log) {
			return log
		}
		if p.Exited() {
			t.Fatalf("testjvm: %s on %s exited (%v) while waiting for log condition\nlog tail:\n%s", p.Scenario, p.JDK.Name, p.waitErr, tail(p.Log(), 4096))
		}
		if time.Now().After(deadline) {
			t.Fatalf("testjvm: log condition not met within %s for %s on %s\nlog tail:\n%s", timeout, p.Scenario, p.JDK.Name, tail(log, 4096))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SigQuit sends SIGQUIT (kill -3) to the JVM, which prints a thread dump to
// its stdout, i.e. into Log().
func (p *Process) SigQuit(t testing.TB) {
	t.Helper()
	if p.Exited() {
		t.Fatalf("testjvm: SIGQUIT to %s on %s: already exited (%v)", p.Scenario, p.JDK.Name, p.waitErr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatalf("testjvm: SIGQUIT to pid %d: %v", p.PID, err)
	}
}

// jcmdTimeout bounds one jcmd run; a Thread.print of thousands of threads on
// a loaded 2-core machine can take a while.
const jcmdTimeout = 2 * time.Minute

// transientAttachRE matches attach failures seen when the target or the
// machine is momentarily too busy to answer; those are worth a retry.
var transientAttachRE = regexp.MustCompile(`AttachNotSupportedException|Connection refused|Unable to open socket file|target process \d+ doesn't respond`)

// jcmd runs the JDK's jcmd against the process and returns its stdout. The
// error carries stderr, where jcmd reports failures.
func (p *Process) jcmd(args ...string) ([]byte, error) {
	full := append(toolJVMFlags("-J"),
		// Longer than the 10s default: attaching involves the target's
		// signal handler and a new thread, both slow under load.
		"-J-Dsun.tools.attach.attachTimeout=60000",
		"-J-Dstdout.encoding=UTF-8", "-J-Dsun.stdout.encoding=UTF-8",
		strconv.Itoa(p.PID))
	full = append(full, args...)
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		if p.Exited() {
			return nil, fmt.Errorf("jcmd %s: %s on %s already exited (%v)", strings.Join(args, " "), p.Scenario, p.JDK.Name, p.waitErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), jcmdTimeout)
		cmd := exec.CommandContext(ctx, p.JDK.Bin("jcmd"), full...)
		cmd.Env = toolEnv(p.JDK)
		var stdout, stderr bytes.Buffer
		cmd.Stdout = &stdout
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err == nil {
			return stdout.Bytes(), nil
		}
		lastErr = fmt.Errorf("jcmd %d %s (attempt %d): %v\nstdout:\n%s\nstderr:\n%s",
			p.PID, strings.Join(args, " "), attempt, err, tail(stdout.Bytes(), 2048), tail(stderr.Bytes(), 2048))
		if !transientAttachRE.Match(stderr.Bytes()) {
			break
		}
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
	return nil, lastErr
}

// Jcmd runs `jcmd <pid> args...` with the process's own JDK and returns
// stdout, which starts with the "<pid>:" line jcmd always prints.
func (p *Process) Jcmd(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := p.jcmd(args...)
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	return out
}

// ThreadPrint returns `jcmd <pid> Thread.print [extra...]` (e.g. extra "-l"
// adds "Locked ownable synchronizers"). The output is jcmd's verbatim,
// including its leading "<pid>:" line.
func (p *Process) ThreadPrint(t testing.TB, extra ...string) []byte {
	t.Helper()
	return p.Jcmd(t, append([]string{"Thread.print"}, extra...)...)
}

// DumpToFile runs `jcmd <pid> Thread.dump_to_file -format=<format> <file>`
// and returns the file's content. format is "text" or "json". JDK 21+ only:
// on JDK 17 the command does not exist and this fails the test.
func (p *Process) DumpToFile(t testing.TB, format string) []byte {
	t.Helper()
	if format != "text" && format != "json" {
		t.Fatalf("testjvm: DumpToFile format %q: want \"text\" or \"json\"", format)
	}
	if !p.JDK.SupportsDumpToFile() {
		t.Fatalf("testjvm: Thread.dump_to_file needs JDK 21+, %s is JDK %d (use ThreadPrint)", p.JDK.Name, p.JDK.Major)
	}
	ext := map[string]string{"text": "txt", "json": "json"}[format]
	// Absolute path: jcmd resolves a relative one against the target's cwd.
	// A fresh directory because the command refuses to overwrite a file.
	path := filepath.Join(t.TempDir(), "threads."+ext)
	p.Jcmd(t, "Thread.dump_to_file", "-format="+format, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testjvm: reading Thread.dump_to_file output: %v", err)
	}
	return b
}

// WaitForDump polls ThreadPrint(extra...) until cond accepts a dump, and
// returns that dump. Attach failures are retried until the timeout, since
// the target is sometimes too busy to answer; other jcmd failures fail the
// test at once. If the condition never holds, the test fails with the last
// dump (first 4 KiB) and the last error.
func (p *Process) WaitForDump(t testing.TB, timeout time.Duration, cond func(dump []byte) bool, extra ...string) []byte {
	t.Helper()
	deadline := time.Now().Add(timeout)
	args := append([]string{"Thread.print"}, extra...)
	var last []byte
	var lastErr error
	for attempt := 1; ; attempt++ {
		out, err := p.jcmd(args...)
		switch {
		case err == nil && cond(out):
			return out
		case err == nil:
			last = out
		case transientAttachRE.MatchString(err.Error()):
			lastErr = err // the target may just be busy; keep polling
		default:
			// Bad arguments and the like will not fix themselves.
			t.Fatalf("testjvm: %v", err)
		}
		if p.Exited() {
			t.Fatalf("testjvm: %s on %s exited (%v) while waiting for a dump condition\nlog tail:\n%s", p.Scenario, p.JDK.Name, p.waitErr, tail(p.Log(), 4096))
		}
		if time.Now().After(deadline) {
			t.Fatalf("testjvm: dump condition not met within %s after %d attempts on %s/%s (last error: %v)\nlast dump (first 4 KiB):\n%s",
				timeout, attempt, p.Scenario, p.JDK.Name, lastErr, head(last, 4096))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// CountLines counts the lines of dump that contain substr and every one of
// more, e.g. CountLines(d, "- locked <", "(a SyncSingleton)").
func CountLines(dump []byte, substr string, more ...string) int {
	n := 0
	for len(dump) > 0 {
		line := dump
		if i := bytes.IndexByte(dump, '\n'); i >= 0 {
			line, dump = dump[:i], dump[i+1:]
		} else {
			dump = nil
		}
		if !bytes.Contains(line, []byte(substr)) {
			continue
		}
		all := true
		for _, m := range more {
			if !bytes.Contains(line, []byte(m)) {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
