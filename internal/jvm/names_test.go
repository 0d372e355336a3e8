package jvm

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUserName(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\r\n" +
		"broken line\n" +
		":x:7:7::/:/bin/sh\n" + // no name: skipped
		"first:x:1000:1000::/home/first:/bin/sh\n" +
		"second:x:1000:1000::/home/second:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"
	for uid, want := range map[int]string{0: "root", 1: "daemon", 1000: "first", 65534: "nobody", 7: "", 2: "", 100: ""} {
		assert.Equal(t, want, userName([]byte(passwd), uid), "uid %d", uid)
	}
	assert.Equal(t, "", userName(nil, 0))
	assert.Equal(t, "", userName([]byte("root:x:00:0::/:/bin/sh\n"), 0), "uids are compared as the kernel prints them")
}

func TestStartedID(t *testing.T) {
	for out, want := range map[string]string{
		"Started recording 3.\n\nUse jcmd 1 JFR.dump name=3 to copy recording data to file.\n": "3",
		"Started recording 42. The result will be written to:\n":                               "42",
		"Started recording x. Started recording 7.":                                            "7",
		"Started recording .": "",
		"Recording started":   "",
		"":                    "",
	} {
		id, ok := startedID([]byte(out))
		assert.Equal(t, want, id, "%q", out)
		assert.Equal(t, want != "", ok, "%q", out)
	}
}

// The names ctprof gives what it creates in a target's /tmp differ from
// one call to the next.
func TestNonce(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n, err := nonce()
		require.NoError(t, err)
		require.Len(t, n, 16)
		require.False(t, seen[n], "%s twice", n)
		seen[n] = true
	}
}

// The answers these read come from the target (a JVM's reply) or from a
// file: none may panic, and what they return is taken from the input.
func FuzzNames(f *testing.F) {
	f.Add([]byte("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/bin/sh\n"), 65534)
	f.Add([]byte("Started recording 12.\n"), 0)
	f.Fuzz(func(t *testing.T, b []byte, uid int) {
		if name := userName(b, uid); name != "" && (strings.ContainsAny(name, ":\n") || !bytes.Contains(b, []byte(name+":"))) {
			t.Fatalf("user name %q", name)
		}
		if id, ok := startedID(b); ok {
			if id == "" || strings.Trim(id, "0123456789") != "" || !bytes.Contains(b, []byte("Started recording "+id)) {
				t.Fatalf("recording id %q", id)
			}
		}
	})
}

// The hsperfdata directory named after the JVM's user comes first: a
// stale or planted copy of the JVM's file in a directory that sorts
// before it, as the JVM's user could leave one, is not what Inspect
// reads.
func TestPerfDataOfTheUsersDirectoryFirst(t *testing.T) {
	p, info, _ := startNobodyJVM(t)
	want := "hsperfdata_nobody/" + strconv.Itoa(p.PID)
	require.Equal(t, want, info.perfName)
	decoy := filepath.Join("/tmp", "hsperfdata_"+strings.Repeat("a", 8)+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.Mkdir(decoy, 0o755))
	t.Cleanup(func() { os.RemoveAll(decoy) })
	plant(t, filepath.Join(decoy, strconv.Itoa(p.PID)), fileOf(65534))
	require.NoError(t, os.Chown(decoy, 65534, 65534))

	again := inspect(t, p.PID)
	assert.Equal(t, want, again.perfName)
	assert.Equal(t, "hsperfdata_nobody", perfDirOfUser(65534), "this machine's passwd names uid 65534 nobody")
}
