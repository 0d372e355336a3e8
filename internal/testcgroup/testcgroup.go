// Package testcgroup is test support: it creates a cgroup with a CPU
// quota under the host's cpu hierarchy (cgroup v2 when the cpu controller
// is there, v1 otherwise), moves processes into it, and removes it when
// the test ends. A test that cannot (not root, no writable hierarchy with
// the cpu controller) is skipped, saying why.
package testcgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Cgroup is a cgroup a test made.
type Cgroup struct {
	// Dir is its directory; Path its path in the hierarchy, as
	// /proc/<pid>/cgroup shows it.
	Dir, Path string
	// Version is 1 or 2.
	Version int
}

var seq atomic.Int64

// New creates a cgroup whose threads may run quota of CPU time every
// period, and registers its removal. Register it before starting the
// processes moved into it: cleanups run last first, so they are killed
// before it is removed.
func New(t testing.TB, quota, period time.Duration) *Cgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testcgroup: creating a cgroup needs root")
	}
	mount, version, err := cpuHierarchy()
	if err != nil {
		t.Skipf("testcgroup: %v", err)
	}
	name := fmt.Sprintf("ctprof-test-%d-%d", os.Getpid(), seq.Add(1))
	c := &Cgroup{Dir: filepath.Join(mount, name), Path: "/" + name, Version: version}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		t.Skipf("testcgroup: the cpu hierarchy at %s is not writable here: %v", mount, err)
	}
	t.Cleanup(func() { c.remove(t) })
	q, p := quota.Microseconds(), period.Microseconds()
	if version == 2 {
		c.write(t, "cpu.max", fmt.Sprintf("%d %d", q, p))
	} else {
		c.write(t, "cpu.cfs_period_us", strconv.FormatInt(p, 10))
		c.write(t, "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
	}
	return c
}

// Add moves a process (all its threads) into the cgroup.
func (c *Cgroup) Add(t testing.TB, pid int) {
	t.Helper()
	c.write(t, "cgroup.procs", strconv.Itoa(pid))
}

func (c *Cgroup) write(t testing.TB, file, value string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.Dir, file), []byte(value), 0); err != nil {
		t.Fatalf("testcgroup: write %q to %s: %v", value, file, err)
	}
}

// remove removes the cgroup once the processes in it have gone (a killed
// process leaves it a moment after it is reaped).
func (c *Cgroup) remove(t testing.TB) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(c.Dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("testcgroup: remove %s: %v", c.Dir, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpuHierarchy finds where the cpu controller is mounted: the cgroup2
// mount when its root's children have the controller, else a v1 mount
// carrying it.
func cpuHierarchy() (string, int, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || a[3] != "/" {
			continue
		}
		switch b[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = a[4]
			}
		case "cgroup":
			for _, o := range strings.Split(b[2], ",") {
				if o == "cpu" && v1 == "" {
					v1 = a[4]
				}
			}
		}
	}
	if v2 != "" {
		// The controller must be enabled for the root's children already:
		// enabling it would change the host for every other cgroup.
		cur, err := os.ReadFile(filepath.Join(v2, "cgroup.subtree_control"))
		if err == nil && hasWord(string(cur), "cpu") {
			return v2, 2, nil
		}
	}
	if v1 != "" {
		return v1, 1, nil
	}
	return "", 0, errors.New("no cgroup hierarchy here offers the cpu controller to new cgroups (v2 with cpu in the root's cgroup.subtree_control, or a v1 cpu mount); the test does not enable it")
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}
