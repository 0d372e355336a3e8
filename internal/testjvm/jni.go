package testjvm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// jniLibrary is a JNI library a scenario loads: testdata/c/<source>.c built
// into lib<name>.so, whose absolute path the JVM gets in the system
// property <property> (the scenario calls System.load with it).
type jniLibrary struct {
	source, name, property string
}

// jniLibraries are the scenarios' JNI libraries, by scenario.
var jniLibraries = map[string]jniLibrary{
	"JniLocks": {source: "jni_locks", name: "jnilocks", property: "jnilocks.lib"},
}

// jniFlags are the JVM flags that hand scenario its JNI library, built
// first (BuildJNI); none for a scenario without one.
func jniFlags(t testing.TB, j JDK, scenario string) []string {
	t.Helper()
	lib, ok := jniLibraries[scenario]
	if !ok {
		return nil
	}
	return []string{"-D" + lib.property + "=" + BuildJNI(t, j, lib.source, lib.name)}
}

var jniMu sync.Mutex

// BuildJNI compiles testdata/c/<source>.c into the shared library
// lib<name>.so against j's JNI headers (cc -shared -fPIC -O1 -g -pthread
// -I$JAVA_HOME/include -I$JAVA_HOME/include/linux) and returns its
// absolute path. The result is cached under os.TempDir(), keyed by the
// source, the name and the JDK, and shared by test binaries (published
// by an atomic rename). A missing compiler fails the test, naming what to
// install; it never skips.
func BuildJNI(t testing.TB, j JDK, source, name string) string {
	t.Helper()
	path, err := buildJNI(j, source, name)
	if err != nil {
		t.Fatalf("testjvm: building lib%s.so: %v", name, err)
	}
	return path
}

func buildJNI(j JDK, source, name string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "testdata", "c", source+".c")
	code, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("no C compiler (cc) on PATH: install Debian's gcc (make test does) — %v", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00", name, j.Home, j.Major, cc)
	h.Write(code)
	dir := filepath.Join(os.TempDir(), "ctprof-testjvm-jni-"+hex.EncodeToString(h.Sum(nil))[:16])
	out := filepath.Join(dir, "lib"+name+".so")
	jniMu.Lock()
	defer jniMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	// World-readable: a JVM run as another user (Options.Credential)
	// loads it too.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	// -g keeps the symbol table the futex symbolizer reads, as an
	// unstripped development build of a JNI library would.
	args := []string{"-shared", "-fPIC", "-O1", "-g", "-Wall", "-pthread",
		"-I" + filepath.Join(j.Home, "include"), "-I" + filepath.Join(j.Home, "include", "linux"),
		"-o", tmp, src}
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}
