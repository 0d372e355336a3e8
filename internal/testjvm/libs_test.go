package testjvm

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every workload names jars that are pinned, and the jars `make javalibs`
// fetched match their pins.
func TestLibWorkloadJarsArePinnedAndIntact(t *testing.T) {
	ws, err := loadLibWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) < 2 {
		t.Fatalf("%d library workloads, want at least 2", len(ws))
	}
	for _, w := range ws {
		jars := LibJars(t, w.jars...)
		if len(jars) == 0 {
			t.Errorf("%s needs no jar", w.name)
		}
		for _, j := range jars {
			if filepath.Base(j.Path) != j.FileName() || !strings.HasPrefix(j.FileName(), j.Artifact+"-"+j.Version) {
				t.Errorf("%s: jar path %s", w.name, j.Path)
			}
		}
	}
}

// A jar whose bytes differ from its pin is refused, with the way out named.
func TestLibJarChecksumMismatchIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lib-1.0.jar")
	content := []byte("not the pinned jar")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	good := Jar{Artifact: "lib", Version: "1.0", Path: path, SHA256: hex.EncodeToString(sum[:])}
	if err := verify(good); err != nil {
		t.Fatalf("matching checksum refused: %v", err)
	}
	bad := good
	bad.SHA256 = hex.EncodeToString(make([]byte, 32))
	err := verify(bad)
	if err == nil {
		t.Fatal("a jar with the wrong checksum was accepted")
	}
	for _, want := range []string{path, bad.SHA256, "make javalibs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	missing := good
	missing.Path = filepath.Join(t.TempDir(), "absent.jar")
	if err := verify(missing); err == nil || !strings.Contains(err.Error(), "make javalibs") {
		t.Errorf("missing jar: %v", err)
	}
}
