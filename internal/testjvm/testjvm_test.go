package testjvm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// dumpTimeout is generous on purpose: the machine is small and shared, and a
// condition that is reached at all is normally reached on the first poll.
const dumpTimeout = 60 * time.Second

// scenarioCheck asserts the facts a scenario promises (see the comment at the
// top of each testdata/java file); other packages' tests rely on them.
type scenarioCheck func(t *testing.T, p *Process)

var scenarioChecks = map[string]scenarioCheck{
	"SyncSingleton":   checkSyncSingleton,
	"LockContention":  checkLockContention,
	"MonitorDeadlock": checkMonitorDeadlock,
	"LockDeadlock":    checkLockDeadlock,
	"VirtualThreads":  checkVirtualThreads,
	"ManyThreads":     checkManyThreads,
	"HostileNames":    checkHostileNames,
	"LogNoise":        checkLogNoise,
	"ClassInitWait":   checkClassInitWait,
	"ScaleWorkload":   checkScaleWorkload,
	"SessionServer":   checkSessionServer,
	"ForgedNames":     checkForgedNames,
	// Garbage only: the JVM's own safepoints (allocation_scenario_test.go).
	"AllocationChurn": checkAllocationChurn,
	// Lock instances and measured waits (contention_scenarios_test.go).
	"StripedLocks":       checkStripedLocks,
	"TwoMonitorsOneSite": checkTwoMonitorsOneSite,
	"MeasuredWaits":      checkMeasuredWaits,
	// Waits for a signal inside work (contention_scenarios_test.go).
	"GroupCommit": checkGroupCommit,
	"RowLocks":    checkRowLocks,
	// Before and after a fix, for ctprof diff (internal/cli/diff_test.go).
	"CapacityFix": checkCapacityFix,
	// Native locks in a JNI library (jnilocks_scenario_test.go).
	"JniLocks": checkJniLocks,
}

// scenarioArgs pins arguments whose defaults the checks depend on, so a
// changed default shows up as a failure here rather than elsewhere.
var scenarioArgs = map[string][]string{
	"SyncSingleton":  {"8"},
	"SessionServer":  {"5"},
	"LockContention": {"8"},
	"ManyThreads":    {"4000"},
	"VirtualThreads": {"100", "200"},
	"ClassInitWait":  {"3"},
	"ScaleWorkload":  {"contended"},
	"CapacityFix":    {"8"},
}

// TestScenarios starts every scenario on every JDK it targets and checks
// its documented facts. The subtests run in parallel, bounded by -parallel
// (GOMAXPROCS by default, i.e. 2 on the target machine).
func TestScenarios(t *testing.T) {
	for _, j := range All(t) {
		for _, sc := range Scenarios(t) {
			check, ok := scenarioChecks[sc]
			if !ok {
				t.Errorf("scenario %s has no check in scenarioChecks; add one", sc)
				continue
			}
			if !Supports(t, j, sc) {
				continue
			}
			t.Run(j.Name+"/"+sc, func(t *testing.T) {
				t.Parallel()
				p := Start(t, j, sc, scenarioArgs[sc]...)
				check(t, p)
				// Free the CPU now rather than at cleanup: the contention
				// scenarios keep a core busy.
				p.Stop()
			})
		}
	}
}

// checkScaleWorkload: one worker per CPU, throughput reported, and the
// workers serialized on the shared counter's monitor.
func checkScaleWorkload(t *testing.T, p *Process) {
	p.WaitForLog(t, 30*time.Second, func(log []byte) bool { return bytes.Count(log, []byte("throughput ")) >= 2 })
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "\"worker-0\"") == 1 && CountLines(d, "- locked <", "(a ScaleWorkload$SharedCounter)") == 1
	})
}

func checkSyncSingleton(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a SyncSingleton)") >= 3 &&
			CountLines(d, "- locked <", "(a SyncSingleton)") == 1
	})
	// Nothing but the singleton is contended. (JDK threads such as
	// "Finalizer" do show "- locked" lines for other objects.)
	if got, want := CountLines(dump, "- waiting to lock <", "(a SyncSingleton)"), CountLines(dump, "- waiting to lock <"); got != want {
		t.Errorf("waiting-to-lock lines naming SyncSingleton = %d, want all %d", got, want)
	}
	for i := 1; i <= 8; i++ {
		if !bytes.Contains(dump, []byte(fmt.Sprintf("\"request-%d\" #", i))) {
			t.Errorf("no header for request-%d", i)
		}
	}
	if !bytes.Contains(dump, []byte("at SyncSingleton.handle(")) {
		t.Error("no SyncSingleton.handle frame")
	}
}

// checkCapacityFix: unsplit, the workers queue on the one Catalog and
// never on Stats.
func checkCapacityFix(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting to lock <", "(a CapacityFix$Catalog)") >= 3 &&
			CountLines(d, "- locked <", "(a CapacityFix$Catalog)") == 1
	})
	if n := CountLines(dump, "(a CapacityFix$Stats)"); n != 0 {
		t.Errorf("unsplit, no thread touches Stats; %d lines name it", n)
	}
	if !bytes.Contains(dump, []byte("at CapacityFix$Catalog.lookup(")) || !bytes.Contains(dump, []byte("\"worker-8\" #")) {
		t.Errorf("missing Catalog.lookup frames or worker-8:\n%s", head(dump, 4096))
	}
}

func checkLockContention(t *testing.T, p *Process) {
	const nonfairSync = "(a java.util.concurrent.locks.ReentrantLock$NonfairSync)"
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- parking to wait for  <") >= 3 &&
			ownedSynchronizers(d, nonfairSync) == 1
	}, "-l")
	if !bytes.Contains(dump, []byte("at LockContention.work(")) || !bytes.Contains(dump, []byte("\"worker-8\" #")) {
		t.Errorf("missing LockContention.work frames or worker-8:\n%s", head(dump, 4096))
	}
}

// ownedSynchronizers counts entries under "Locked ownable synchronizers:"
// that mention class, e.g. "\t- <0x...> (a ...ReentrantLock$NonfairSync)".
func ownedSynchronizers(dump []byte, class string) int {
	n := 0
	for _, line := range strings.Split(string(dump), "\n") {
		if strings.HasPrefix(line, "\t- <0x") && strings.Contains(line, class) {
			n++
		}
	}
	return n
}

func checkMonitorDeadlock(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return bytes.Contains(d, []byte("Found one Java-level deadlock:"))
	})
	for _, want := range []string{
		"which is held by \"deadlock-A\"",
		"which is held by \"deadlock-B\"",
		"- waiting to lock <", "(a MonitorDeadlock$LockA)", "(a MonitorDeadlock$LockB)",
		"at MonitorDeadlock.lockAThenB(", "at MonitorDeadlock.lockBThenA(",
		"\"bystander\" #", "- waiting on <", "(a MonitorDeadlock$Idle)", "at MonitorDeadlock.idle(",
		"Found 1 deadlock.",
	} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("dump lacks %q", want)
		}
	}
	if p.JDK.SupportsDumpToFile() {
		doc := parseJSONDump(t, p.DumpToFile(t, "json"))
		byName := threadsByName(doc)
		if got := byName["deadlock-A"]["state"]; got != "BLOCKED" {
			t.Errorf("JSON state of deadlock-A = %v, want BLOCKED", got)
		}
		if got := byName["bystander"]["state"]; got != "WAITING" {
			t.Errorf("JSON state of bystander = %v, want WAITING", got)
		}
		text := p.DumpToFile(t, "text")
		if !bytes.Contains(text, []byte("deadlock-A")) {
			t.Errorf("text Thread.dump_to_file lacks deadlock-A:\n%s", head(text, 4096))
		}
	}
}

func checkLockDeadlock(t *testing.T, p *Process) {
	const nonfairSync = "(a java.util.concurrent.locks.ReentrantLock$NonfairSync)"
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return bytes.Contains(d, []byte("Found one Java-level deadlock:"))
	}, "-l")
	for i := 1; i <= 3; i++ {
		if !bytes.Contains(dump, []byte(fmt.Sprintf("which is held by \"cycle-%d\"", i))) {
			t.Errorf("deadlock report does not name cycle-%d as an owner", i)
		}
	}
	if got := CountLines(dump, "waiting for ownable synchronizer"); got != 3 {
		t.Errorf("'waiting for ownable synchronizer' lines = %d, want 3", got)
	}
	if got := ownedSynchronizers(dump, nonfairSync); got != 3 {
		t.Errorf("owned ReentrantLock$NonfairSync = %d, want 3", got)
	}
	if got := CountLines(dump, "at LockDeadlock$Cycle.run("); got < 3 {
		t.Errorf("LockDeadlock$Cycle.run frames = %d, want >= 3", got)
	}
}

func checkVirtualThreads(t *testing.T, p *Process) {
	p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "Carrying virtual thread #") >= 2 &&
			CountLines(d, "(a VirtualThreads$PinMonitor)") >= 2
	})
	// Unmounted virtual threads only show up in Thread.dump_to_file.
	counts := map[string]int{}
	for name := range threadsByName(parseJSONDump(t, p.DumpToFile(t, "json"))) {
		if i := strings.LastIndex(name, "-"); i > 0 && strings.HasPrefix(name, "vt-") {
			counts[name[:i]]++
		}
	}
	for prefix, want := range map[string]int{"vt-lock-waiter": 100, "vt-sleeper": 200, "vt-pinned": 2} {
		if counts[prefix] != want {
			t.Errorf("JSON dump has %d %s-N threads, want %d (all counts: %v)", counts[prefix], prefix, want, counts)
		}
	}
}

func checkManyThreads(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "\"conn-") >= 4000
	})
	headers := 0
	for _, line := range bytes.Split(dump, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("\"conn-")) {
			headers++
		}
	}
	if headers != 4000 {
		t.Errorf("conn-* thread headers = %d, want 4000", headers)
	}
	for _, want := range []string{"\"conn-4000-reader\" #", "at ManyThreads.awaitData(", "at ManyThreads.flushLater(", "at ManyThreads.heartbeatLoop("} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("dump lacks %q", want)
		}
	}
	t.Logf("%s ManyThreads Thread.print: %d bytes", p.JDK.Name, len(dump))
}

// hostileNames mirrors HostileNames.java: [gate holder, gate waiters...,
// deadlock left, deadlock right, sleepers...].
var (
	hostileGateHolder  = "</script><script>alert(1)</script>"
	hostileGateWaiters = []string{"quote\"inside", "comma, colon: semi;", "[brackets] {braces} (parens) <angles>", "Ünïcødé-线程", "tab\there"}
	hostileLeft        = "\"left\" 'owner', #1 [0x0]"
	hostileRight       = "right: Ünï \"线程\"\t- locked <0x0>"
	hostileSleepers    = []string{"fake\" #999 daemon prio=5 os_prio=0 tid=0x0 nid=0x0 waiting on condition", "back\\slash & ampersand", "   leading and trailing spaces   ", "emoji-\U0001F680-rocket", ""}
)

func checkHostileNames(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return bytes.Contains(d, []byte("Found one Java-level deadlock:"))
	})
	names := append([]string{hostileGateHolder, hostileLeft, hostileRight}, hostileGateWaiters...)
	// The emoji is not in this list: HotSpot writes a supplementary
	// character as two encoded surrogates, which jcmd turns into two U+FFFD.
	names = append(names, hostileSleepers[0], hostileSleepers[1], hostileSleepers[2], hostileSleepers[4])
	for _, n := range names {
		if !bytes.Contains(dump, []byte("\n\""+n+"\" #")) {
			t.Errorf("no thread header for name %q", n)
		}
	}
	if !bytes.Contains(dump, []byte("\n\"emoji-\uFFFD\uFFFD-rocket\" #")) {
		t.Errorf("emoji name not printed as two U+FFFD by jcmd (behaviour changed?)")
	}
	if got := CountLines(dump, "(a HostileNames$Gate)"); got != 1+len(hostileGateWaiters) {
		t.Errorf("lines naming HostileNames$Gate = %d, want %d", got, 1+len(hostileGateWaiters))
	}
	for _, owner := range []string{hostileLeft, hostileRight} {
		if !bytes.Contains(dump, []byte("which is held by \""+owner+"\"\n")) {
			t.Errorf("deadlock report does not name %q as owner", owner)
		}
	}
	if p.JDK.SupportsDumpToFile() {
		// JSON keeps every name exactly, the emoji included.
		byName := threadsByName(parseJSONDump(t, p.DumpToFile(t, "json")))
		for _, n := range append(names, hostileSleepers[3]) {
			if _, ok := byName[n]; !ok {
				t.Errorf("JSON dump lacks thread %q", n)
			}
		}
		if got := byName[hostileGateWaiters[0]]["blockedOn"]; !strings.HasPrefix(fmt.Sprint(got), "HostileNames$Gate@") {
			t.Errorf("JSON blockedOn of %q = %v, want HostileNames$Gate@...", hostileGateWaiters[0], got)
		}
	}
}

func checkLogNoise(t *testing.T, p *Process) {
	p.WaitForLog(t, dumpTimeout, func(l []byte) bool {
		return bytes.Contains(l, []byte("handled \"GET /orders/"))
	})
	p.SigQuit(t)
	// The dump is complete once its trailer is out; the application keeps
	// logging afterwards, so the dump ends up embedded in the log.
	log := p.WaitForLog(t, dumpTimeout, func(l []byte) bool {
		_, after, ok := bytes.Cut(l, []byte("JNI global refs"))
		return bytes.Contains(l, []byte("Full thread dump")) && ok &&
			bytes.Contains(after, []byte("handled \"GET /orders/"))
	})
	before, _, _ := bytes.Cut(log, []byte("Full thread dump"))
	if !bytes.Contains(before, []byte("handled \"GET /orders/")) {
		t.Error("no log lines before the dump")
	}
	if !bytes.Contains(log, []byte("\"log-worker\" #")) {
		t.Error("SIGQUIT dump lacks the log-worker thread")
	}
	if CountLines(log, "Full thread dump") != 1 {
		t.Errorf("want exactly one dump in the log, got %d", CountLines(log, "Full thread dump"))
	}
}

func checkClassInitWait(t *testing.T, p *Process) {
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return CountLines(d, "- waiting on the Class initialization monitor for ClassInitWait$SlowInit") == 3
	})
	for _, want := range []string{"\"init-runner\" #", "at ClassInitWait$SlowInit.<clinit>(", "\"init-waiter-3\" #", "(a java.util.concurrent.CountDownLatch$Sync)"} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("dump lacks %q", want)
		}
	}
}

func parseJSONDump(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("Thread.dump_to_file JSON does not parse: %v\n%s", err, head(b, 2048))
	}
	if _, ok := doc["threadDump"]; !ok {
		t.Fatalf("JSON dump has no threadDump key: %s", head(b, 2048))
	}
	return doc
}

// threadsByName flattens threadDump.threadContainers[].threads[] by name.
func threadsByName(doc map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	td, _ := doc["threadDump"].(map[string]any)
	containers, _ := td["threadContainers"].([]any)
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		threads, _ := cm["threads"].([]any)
		for _, th := range threads {
			if m, ok := th.(map[string]any); ok {
				name, _ := m["name"].(string)
				out[name] = m
			}
		}
	}
	return out
}

// TestCompileAll checks that every scenario compiles on every JDK it
// targets (and only there) and that the class cache is reused.
func TestCompileAll(t *testing.T) {
	for _, j := range All(t) {
		dir := Compile(t, j)
		for _, sc := range Scenarios(t) {
			_, err := os.Stat(filepath.Join(dir, sc+".class"))
			switch supported := Supports(t, j, sc); {
			case supported && err != nil:
				t.Errorf("%s: %s did not compile: %v", j.Name, sc, err)
			case !supported && err == nil:
				t.Errorf("%s: %s compiled although it targets a newer JDK", j.Name, sc)
			}
		}
		if again := Compile(t, j); again != dir {
			t.Errorf("%s: second Compile gave %s, want cached %s", j.Name, again, dir)
		}
	}
	if Supports(t, JDK17(t), "VirtualThreads") || !Supports(t, JDK25(t), "VirtualThreads") {
		t.Error("VirtualThreads must target JDK 21+ only")
	}
}

// TestCompileConcurrent hammers the cache from several goroutines against a
// fresh cache root, as parallel tests and test binaries do.
func TestCompileConcurrent(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // os.TempDir() honours TMPDIR
	j := JDK17(t)
	var wg sync.WaitGroup
	dirs := make([]string, 4)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], _ = compile(j)
		}()
	}
	wg.Wait()
	for _, d := range dirs {
		if d == "" || d != dirs[0] {
			t.Fatalf("concurrent compiles disagree or failed: %q", dirs)
		}
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "SyncSingleton.class")); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "ctprof-testjvm-staging-*"))
	if len(left) != 0 {
		t.Errorf("staging directories left behind: %v", left)
	}
}

// TestStop checks that Stop reaps the JVM, is idempotent, and removes the
// per-pid files HotSpot leaves behind after SIGKILL.
func TestStop(t *testing.T) {
	j := JDK17(t)
	p := Start(t, j, "MonitorDeadlock")
	p.ThreadPrint(t) // creates the attach socket
	sock := filepath.Join("/tmp", ".java_pid"+fmt.Sprint(p.PID))
	if _, err := os.Stat(sock); err != nil {
		t.Logf("attach socket not where expected (%v); not checking its removal", err)
		sock = ""
	}
	p.Stop()
	p.Stop()
	if !p.Exited() {
		t.Fatal("Exited() is false after Stop")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID)); err == nil {
		t.Errorf("/proc/%d still exists after Stop", p.PID)
	}
	if sock != "" {
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("%s left behind", sock)
		}
	}
}

// fakeTB records Fatalf instead of failing the real test, to check the
// helpers' failure messages. Fatalf must not return, like testing.T's.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func fatalMessage(t *testing.T, fn func(tb testing.TB)) string {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestFailureMessages(t *testing.T) {
	t.Run("missing JDK", func(t *testing.T) {
		t.Setenv("CTPROF_JDK17_HOME", filepath.Join(t.TempDir(), "nope"))
		msg := fatalMessage(t, func(tb testing.TB) { JDK17(tb) })
		if !strings.Contains(msg, "OpenJDK 17 not found at") || !strings.Contains(msg, "run `make test`, which installs it") {
			t.Errorf("unexpected message: %q", msg)
		}
	})
	t.Run("wrong JDK behind override", func(t *testing.T) {
		t.Setenv("CTPROF_JDK17_HOME", JDK25(t).Home)
		msg := fatalMessage(t, func(tb testing.TB) { JDK17(tb) })
		if !strings.Contains(msg, "want 17") {
			t.Errorf("unexpected message: %q", msg)
		}
	})
	t.Run("scenario too new", func(t *testing.T) {
		msg := fatalMessage(t, func(tb testing.TB) { Start(tb, JDK17(t), "VirtualThreads") })
		if !strings.Contains(msg, "needs JDK 21+") {
			t.Errorf("unexpected message: %q", msg)
		}
	})
	t.Run("unknown scenario", func(t *testing.T) {
		msg := fatalMessage(t, func(tb testing.TB) { Start(tb, JDK17(t), "NoSuchScenario") })
		if !strings.Contains(msg, "unknown scenario") || !strings.Contains(msg, "SyncSingleton") {
			t.Errorf("unexpected message: %q", msg)
		}
	})
	t.Run("dump_to_file on JDK 17", func(t *testing.T) {
		p := Start(t, JDK17(t), "MonitorDeadlock")
		msg := fatalMessage(t, func(tb testing.TB) { p.DumpToFile(tb, "json") })
		if !strings.Contains(msg, "needs JDK 21+") {
			t.Errorf("unexpected message: %q", msg)
		}
		// And that is a real limitation of JDK 17, not of this package.
		if help := p.Jcmd(t, "help"); bytes.Contains(help, []byte("Thread.dump_to_file")) {
			t.Errorf("JDK 17 jcmd now lists Thread.dump_to_file; enable DumpToFile for it:\n%s", help)
		}
	})
}

func TestCountLines(t *testing.T) {
	dump := []byte("a x\nb\nx x\n\nlast x")
	if got := CountLines(dump, "x"); got != 3 {
		t.Errorf("CountLines = %d, want 3", got)
	}
	if got := CountLines(dump, "x", "a"); got != 2 {
		t.Errorf("CountLines(x, a) = %d, want 2", got)
	}
	if got := CountLines([]byte("x\r\n"), "x"); got != 1 {
		t.Errorf("CountLines with CRLF = %d, want 1", got)
	}
	if got := CountLines(nil, "x"); got != 0 {
		t.Errorf("CountLines(nil) = %d, want 0", got)
	}
}

// checkSessionServer connects two clients and expects each to get 5
// threads: a reader and 4 pollers in a timed wait on the shared board.
func checkSessionServer(t *testing.T, p *Process) {
	m := regexp.MustCompile(`(?m)^PORT (\d+)`).FindSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no PORT line in %s", p.Log())
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", string(m[1])))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	// A poller that has just started is not in poll() yet: wait for all 8
	// there (a third client's threads would show as well).
	dump := p.WaitForDump(t, dumpTimeout, func(d []byte) bool {
		return bytes.Contains(d, []byte(`"sess-2-poll-4" #`)) && bytes.Contains(d, []byte(`"sess-2-reader" #`)) &&
			CountLines(d, "at SessionServer.poll(") >= 8
	})
	for c := 1; c <= 2; c++ {
		for i := 1; i <= 4; i++ {
			if !bytes.Contains(dump, []byte(fmt.Sprintf("\"sess-%d-poll-%d\" #", c, i))) {
				t.Errorf("no poller sess-%d-poll-%d", c, i)
			}
		}
	}
	if bytes.Contains(dump, []byte(`"sess-3-`)) {
		t.Error("threads for a third client that never connected")
	}
	if got := CountLines(dump, "at SessionServer.poll("); got != 8 {
		t.Errorf("threads in SessionServer.poll = %d, want 8", got)
	}
}

// checkForgedNames: ten waiters and the holder on the gate, and the forged
// entries and deadlock report printed inside two names.
func checkForgedNames(t *testing.T, p *Process) {
	dump := p.ThreadPrint(t)
	if got := CountLines(dump, "(a ForgedNames$Gate)"); got != 11 {
		t.Errorf("lines naming ForgedNames$Gate = %d, want 11 (10 waiters, 1 holder)", got)
	}
	for _, s := range []string{"\"evil1\" #9", "\"evil4\" #9", "Found one Java-level deadlock:", "\nend of forger-closed\" #", "\n\"end of forger-open\" #"} {
		if !bytes.Contains(dump, []byte(s)) {
			t.Errorf("dump lacks %q", s)
		}
	}
}
