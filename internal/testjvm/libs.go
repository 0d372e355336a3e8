package testjvm

// Workloads on real third-party libraries (testdata/javalibs): Apache Derby,
// H2, Log4j, HikariCP, HSQLDB, Jetty and the others of the labelled corpus.
// Their jars are fetched by `make javalibs` (mvn dependency:copy) into
// build/javalibs, pinned by version and sha256 in
// testdata/javalibs/libraries.txt; nothing fetched is committed. The tests
// check the same pins before a jar goes on a class path, so a stale or
// altered build directory fails loudly instead of testing something else.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Jar is one pinned third-party jar.
type Jar struct {
	Group, Artifact, Version string
	// Classifier names a variant of the artifact, as Maven's
	// group:artifact:version:jar:classifier does (rocksdbjni's linux64
	// jar holds only the Linux x86-64 library); empty for the main jar.
	Classifier string
	SHA256     string // hex, as pinned
	// Path is build/javalibs/<artifact>-<version>[-<classifier>].jar
	// (absolute).
	Path string
}

// FileName is the jar's name as Maven copies it.
func (j Jar) FileName() string {
	if j.Classifier != "" {
		return j.Artifact + "-" + j.Version + "-" + j.Classifier + ".jar"
	}
	return j.Artifact + "-" + j.Version + ".jar"
}

// jarsRE matches the marker a workload uses to name the artifacts it needs,
// e.g. "// testjvm:jars=derby,derbyshared".
var jarsRE = regexp.MustCompile(`(?m)^//\s*testjvm:jars=([A-Za-z0-9._,-]+)\s*$`)

// moduleRoot is the directory holding go.mod (and testdata/).
func moduleRoot() (string, error) {
	dir, err := javaDir()
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(dir)), nil
}

// libPaths returns testdata/javalibs and build/javalibs.
func libPaths() (src, jars string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(root, "testdata", "javalibs"), filepath.Join(root, "build", "javalibs"), nil
}

// pins reads testdata/javalibs/libraries.txt: "group:artifact:version sha256"
// or "group:artifact:version:jar:classifier sha256" per line, '#' comments.
func pins() (map[string]Jar, error) {
	src, jarDir, err := libPaths()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(src, "libraries.txt")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Jar{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		coord := strings.Split(fields[0], ":")
		if len(fields) != 2 || !(len(coord) == 3 || len(coord) == 5 && coord[3] == "jar" && coord[4] != "") || len(fields[1]) != 64 {
			return nil, fmt.Errorf("%s:%d: want \"group:artifact:version[:jar:classifier] sha256\", got %q", path, n, line)
		}
		j := Jar{Group: coord[0], Artifact: coord[1], Version: coord[2], SHA256: fields[1]}
		if len(coord) == 5 {
			j.Classifier = coord[4]
		}
		j.Path = filepath.Join(jarDir, j.FileName())
		out[j.Artifact] = j
	}
	return out, sc.Err()
}

// verifiedJars caches jars whose checksum matched in this process, keyed by
// path, size and modification time, so a jar is hashed once per test binary.
var verifiedJars sync.Map

func verify(j Jar) error {
	st, err := os.Stat(j.Path)
	if err != nil {
		return fmt.Errorf("%s: %w: run `make javalibs`, which fetches it from Maven Central", j.Path, err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d\x00%s", j.Path, st.Size(), st.ModTime().UnixNano(), j.SHA256)
	if _, ok := verifiedJars.Load(key); ok {
		return nil
	}
	f, err := os.Open(j.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%s: %w", j.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != j.SHA256 {
		return fmt.Errorf("%s has sha256 %s, want %s (testdata/javalibs/libraries.txt): run `make javalibs`", j.Path, got, j.SHA256)
	}
	verifiedJars.Store(key, true)
	return nil
}

// LibJars returns the pinned jars with the given artifact ids (e.g. "h2"),
// each checked against its pinned sha256; a missing or altered jar fails the
// test with a hint to run `make javalibs`.
func LibJars(t testing.TB, artifacts ...string) []Jar {
	t.Helper()
	all, err := pins()
	if err != nil {
		t.Fatalf("testjvm: reading library pins: %v", err)
	}
	out := make([]Jar, 0, len(artifacts))
	for _, a := range artifacts {
		j, ok := all[a]
		if !ok {
			t.Fatalf("testjvm: no pinned jar %q in testdata/javalibs/libraries.txt", a)
		}
		if err := verify(j); err != nil {
			t.Fatalf("testjvm: %v", err)
		}
		out = append(out, j)
	}
	return out
}

type libWorkload struct {
	name, path string
	content    []byte
	jars       []string // artifact ids from the testjvm:jars marker
}

func loadLibWorkloads() ([]libWorkload, error) {
	src, _, err := libPaths()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(src, "*.java"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no workloads in %s", src)
	}
	sort.Strings(paths)
	var out []libWorkload
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		w := libWorkload{name: strings.TrimSuffix(filepath.Base(p), ".java"), path: p, content: b}
		m := jarsRE.FindSubmatch(b)
		if m == nil {
			return nil, fmt.Errorf("%s has no \"// testjvm:jars=...\" line naming the jars it needs", p)
		}
		w.jars = strings.Split(string(m[1]), ",")
		out = append(out, w)
	}
	return out, nil
}

// LibWorkloads lists the workload names (testdata/javalibs/<name>.java).
func LibWorkloads(t testing.TB) []string {
	t.Helper()
	ws, err := loadLibWorkloads()
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.name
	}
	return names
}

// CompileLibs compiles every workload in testdata/javalibs with j's javac
// against the pinned jars they name, and returns the class directory. Like
// Compile, the result is cached under os.TempDir(), keyed by the JDK, the
// sources and the jars' checksums.
func CompileLibs(t testing.TB, j JDK) string {
	t.Helper()
	ws, err := loadLibWorkloads()
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	need := map[string]bool{}
	var artifacts []string
	for _, w := range ws {
		for _, a := range w.jars {
			if !need[a] {
				need[a] = true
				artifacts = append(artifacts, a)
			}
		}
	}
	sort.Strings(artifacts)
	jars := LibJars(t, artifacts...)

	h := sha256.New()
	fmt.Fprintf(h, "javalibs\x00%s\x00%s\x00%d\x00", j.Name, j.Home, j.Major)
	var files, classpath []string
	for _, jar := range jars {
		fmt.Fprintf(h, "%s\x00%s\x00", jar.Path, jar.SHA256)
		classpath = append(classpath, jar.Path)
	}
	for _, w := range ws {
		files = append(files, w.path)
		fmt.Fprintf(h, "%s\x00%d\x00", w.name, len(w.content))
		h.Write(w.content)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ctprof-testjvm-libs-%s-%s", j.Name, hex.EncodeToString(h.Sum(nil))[:16]))
	dir, err = compileInto(j, dir, files, classpath)
	if err != nil {
		t.Fatalf("testjvm: compiling library workloads with %s: %v", j.Name, err)
	}
	return dir
}

// StartLib starts the library workload testdata/javalibs/<workload>.java on
// j with the jars it names on its class path, like Start does for the
// scenarios: it waits for READY, its log is LogPath(), its working
// directory is a per-process temp dir, and a cleanup kills it.
func StartLib(t testing.TB, j JDK, workload string, args ...string) *Process {
	t.Helper()
	return StartLibWith(t, j, workload, Options{}, args...)
}

// StartLibWith is StartLib with options; o.ClassPath is appended after the
// workload's jars.
func StartLibWith(t testing.TB, j JDK, workload string, o Options, args ...string) *Process {
	t.Helper()
	ws, err := loadLibWorkloads()
	if err != nil {
		t.Fatalf("testjvm: %v", err)
	}
	var w *libWorkload
	var names []string
	for i := range ws {
		if ws[i].name == workload {
			w = &ws[i]
		}
		names = append(names, ws[i].name)
	}
	if w == nil {
		t.Fatalf("testjvm: unknown library workload %q (have %s)", workload, strings.Join(names, ", "))
	}
	o.classDir = CompileLibs(t, j)
	var cp []string
	for _, jar := range LibJars(t, w.jars...) {
		cp = append(cp, jar.Path)
	}
	o.ClassPath = append(cp, o.ClassPath...)
	return StartWith(t, j, workload, o, args...)
}

// ThreadStacks splits a HotSpot thread dump into its threads' text blocks,
// keyed by thread name (the quoted text on the header line), in dump order.
// It is a plain text split for tests that establish the truth from the dump
// themselves, independent of ctprof's parser. The JVM's deadlock report, if
// any, is not part of it.
func ThreadStacks(dump []byte) []ThreadStack {
	if i := bytes.Index(dump, []byte("\nFound one Java-level deadlock")); i >= 0 {
		dump = dump[:i]
	}
	var out []ThreadStack
	for _, line := range strings.Split(string(dump), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "\"") {
			name := line[1:]
			// The name ends at the last '"' before the thread's " #<id>".
			if k := strings.LastIndex(name, "\" #"); k >= 0 {
				name = name[:k]
			} else if k := strings.LastIndex(name, "\" "); k >= 0 {
				name = name[:k]
			}
			out = append(out, ThreadStack{Name: name, Header: line})
			continue
		}
		if len(out) == 0 {
			continue
		}
		cur := &out[len(out)-1]
		if line == "" {
			continue
		}
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "java.lang.Thread.State: "); ok {
			cur.State = s
			continue
		}
		cur.Lines = append(cur.Lines, strings.TrimSpace(line))
	}
	return out
}

// ThreadStack is one thread of a dump as text.
type ThreadStack struct {
	Name   string
	Header string
	State  string   // e.g. "BLOCKED (on object monitor)"
	Lines  []string // frames and lock lines, trimmed, in order
}

// Has reports whether any line of the stack contains substr.
func (s ThreadStack) Has(substr string) bool {
	for _, l := range s.Lines {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}
