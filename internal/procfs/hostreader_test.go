package procfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testcgroup"
	"github.com/ctprof/ctprof/internal/testnative"
)

// readHostUntil reads the host through r every 200 ms until ok accepts a
// reading, for at most timeout.
func readHostUntil(t *testing.T, r *HostReader, timeout time.Duration, ok func(*Host) bool) *Host {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h, err := r.Read()
		require.NoError(t, err)
		if ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("no host reading within %s satisfied the test; last: %+v", timeout, h)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func consumer(h *Host, pid int) (ProcCPU, bool) {
	for _, c := range h.Consumers {
		if c.PID == pid {
			return c, true
		}
	}
	return ProcCPU{}, false
}

// Two threads that compute without pause are among the host's biggest CPU
// users over a window, named and with a CPU time that fits the window;
// the target itself is never listed, and the first reading, with nothing
// to compare with, lists nobody.
func TestHostReaderNamesTheBusiestProcesses(t *testing.T) {
	// Raised above the machine's other load (other tests, builds), so
	// that it is among the biggest users whatever else runs.
	busy := testnative.StartWith(t, testnative.Options{Prioritized: true}, "spinners", "2")
	target := testnative.Start(t, "spinners", "1")
	r := NewFS("/proc").NewHostReader(target.PID)
	first, err := r.Read()
	require.NoError(t, err)
	assert.Empty(t, first.Consumers, "the first sweep is the baseline")
	assert.Zero(t, first.ConsumersWindow)
	assert.Positive(t, first.BusyTicks)

	h := readHostUntil(t, r, 15*time.Second, func(h *Host) bool {
		_, ok := consumer(h, busy.PID)
		return ok
	})
	t.Logf("window %s, sweep %s: %+v", h.ConsumersWindow, r.SweepCost, h.Consumers)
	assert.GreaterOrEqual(t, h.ConsumersWindow, consumersEvery-50*time.Millisecond)
	assert.LessOrEqual(t, len(h.Consumers), MaxConsumers)
	for i := 1; i < len(h.Consumers); i++ {
		assert.GreaterOrEqual(t, h.Consumers[i-1].CPU, h.Consumers[i].CPU, "biggest first")
	}
	_, listed := consumer(h, target.PID)
	assert.False(t, listed, "the target is not its own neighbour")
	c, _ := consumer(h, busy.PID)
	assert.Equal(t, "spinners", c.Name)
	// Two busy threads on a loaded two-CPU host: a share of the CPUs, and
	// never more than two CPUs' worth of the window (plus a tick each way).
	assert.Greater(t, c.CPU, h.ConsumersWindow/10)
	assert.LessOrEqual(t, c.CPU, 2*h.ConsumersWindow+20*time.Millisecond)

	// Between sweeps only /proc/stat is read.
	next, err := r.Read()
	require.NoError(t, err)
	if next.ConsumersWindow == 0 {
		assert.Nil(t, next.Consumers)
	}
	assert.GreaterOrEqual(t, next.BusyTicks, h.BusyTicks)
}

// A one-shot reads /proc/stat alone.
func TestHostReaderOneSampleSweepsNothing(t *testing.T) {
	r := NewFS("/proc").NewHostReader(os.Getpid())
	r.OneSample = true
	for range 2 {
		h, err := r.Read()
		require.NoError(t, err)
		assert.Nil(t, h.Consumers)
		assert.Nil(t, h.Quotas)
	}
	assert.Zero(t, r.SweepCost)
}

// A process in a cgroup the test made, with a quota of a tenth of a CPU
// for two busy threads: the reader finds the cgroup through the process's
// /proc/<pid>/cgroup and ctprof's own mounts, reads the quota as set, and
// its throttling counters grow.
func TestHostReaderReadsTheCgroupQuota(t *testing.T) {
	cg := testcgroup.New(t, 10*time.Millisecond, 100*time.Millisecond)
	p := testnative.Start(t, "spinners", "2")
	cg.Add(t, p.PID)
	r := NewFS("/proc").NewHostReader(p.PID)
	first, err := r.Read()
	require.NoError(t, err)
	require.NotEmpty(t, first.Quotas, "cgroup %s (v%d)", cg.Path, cg.Version)
	q := first.Quotas[0]
	assert.Equal(t, cg.Path, q.Cgroup, "the innermost quota first")
	assert.Equal(t, cg.Version, q.Version)
	assert.Equal(t, 10*time.Millisecond, q.Quota)
	assert.Equal(t, 100*time.Millisecond, q.Period)

	last := readHostUntil(t, r, 10*time.Second, func(h *Host) bool {
		return len(h.Quotas) > 0 && h.Quotas[0].Throttled >= q.Throttled+5
	})
	l := last.Quotas[0]
	t.Logf("first %+v\nlast %+v", q, l)
	assert.Greater(t, l.Periods, q.Periods)
	assert.Greater(t, l.ThrottledTime, q.ThrottledTime)
}

// A process in no quota's cgroup has none.
func TestHostReaderWithoutQuota(t *testing.T) {
	p := testnative.Start(t, "spinners", "1")
	r := NewFS("/proc").NewHostReader(p.PID)
	h, err := r.Read()
	require.NoError(t, err)
	for _, q := range h.Quotas {
		// The host's own cgroups may set one; the test's did not.
		assert.NotContains(t, q.Cgroup, "ctprof-test-")
	}
}

func TestParseProcCgroup(t *testing.T) {
	hybrid := "9:name=systemd:/\n4:memory:/x\n2:cpu,cpuacct:/svc/app\n0::/\n"
	v1, v2, hasV2 := parseProcCgroup([]byte(hybrid))
	assert.Equal(t, "/svc/app", v1)
	assert.Equal(t, "/", v2)
	assert.True(t, hasV2)
	v1, v2, hasV2 = parseProcCgroup([]byte("0::/system.slice/app.service\n"))
	assert.Empty(t, v1)
	assert.Equal(t, "/system.slice/app.service", v2)
	assert.True(t, hasV2)
	// "cpuacct" alone is not the cpu controller.
	v1, _, hasV2 = parseProcCgroup([]byte("2:cpuacct:/a\n"))
	assert.Empty(t, v1)
	assert.False(t, hasV2)
}

func TestParseCgroupMounts(t *testing.T) {
	mi := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 /kubepods/pod1 /sys/fs/cgroup/my\040mount rw,relatime shared:5 - cgroup2 cgroup2 rw
`
	got := parseCgroupMounts([]byte(mi))
	assert.Equal(t, []cgroupMount{
		{version: 1, root: "/", point: "/sys/fs/cgroup/cpu"},
		{version: 2, root: "/kubepods/pod1", point: "/sys/fs/cgroup/my mount"},
	}, got)
}

// The cpu controller's hierarchy: v1's on a hybrid host whose v1 cpu
// mount shows the process, v2's otherwise; a mount that does not show the
// process's cgroup (another namespace's subtree) is passed over.
func TestCPUHierarchy(t *testing.T) {
	hybrid := `32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`
	m, rel, ok := cpuHierarchy([]byte("2:cpu,cpuacct:/svc/app\n0::/svc/app\n"), []byte(hybrid))
	require.True(t, ok)
	assert.Equal(t, cgroupMount{version: 1, root: "/", point: "/sys/fs/cgroup/cpu"}, m)
	assert.Equal(t, "svc/app", rel)

	// In a v1 cpu cgroup no visible mount shows: v2 is tried.
	m, rel, ok = cpuHierarchy([]byte("2:cpu:/x\n0::/svc/app\n"), []byte("41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"))
	require.True(t, ok)
	assert.Equal(t, 2, m.version)
	assert.Equal(t, "svc/app", rel)

	v2 := `50 1 0:40 /other /mnt/other rw - cgroup2 cgroup2 rw
51 1 0:40 /kubepods /sys/fs/cgroup rw - cgroup2 cgroup2 rw
`
	m, rel, ok = cpuHierarchy([]byte("0::/kubepods/pod1/ctr\n"), []byte(v2))
	require.True(t, ok)
	assert.Equal(t, "/sys/fs/cgroup", m.point)
	assert.Equal(t, "pod1/ctr", rel)

	_, _, ok = cpuHierarchy([]byte("0::/elsewhere\n"), []byte(v2))
	assert.False(t, ok)
	_, _, ok = cpuHierarchy([]byte("1:name=systemd:/\n"), []byte(hybrid))
	assert.False(t, ok, "no cpu controller line, no v2 line")
}

// A cgroup path comes from the target's side: one that climbs out of the
// mount, or lies beside its root, is refused.
func TestCgroupBelow(t *testing.T) {
	for _, tt := range []struct {
		cgroup, root, rel string
		ok                bool
	}{
		{"/", "/", ".", true},
		{"/a/b", "/", "a/b", true},
		{"/kubepods/pod1/c", "/kubepods/pod1", "c", true},
		{"/kubepods/pod1", "/kubepods/pod1", ".", true},
		{"/kubepods/pod10", "/kubepods/pod1", "", false},
		{"/../../etc", "/", "", false},
		{"/a/../../b", "/", "", false},
		{"a/b", "/", "", false},
		{"", "/", "", false},
	} {
		rel, ok := cgroupBelow(tt.cgroup, tt.root)
		assert.Equal(t, tt.ok, ok, "%q below %q", tt.cgroup, tt.root)
		assert.Equal(t, tt.rel, rel, "%q below %q", tt.cgroup, tt.root)
	}
}

func TestParseCPUStat(t *testing.T) {
	var v2 CPUQuota
	parseCPUStat([]byte("usage_usec 100\nnr_periods 40\nnr_throttled 30\nthrottled_usec 2500000\nnr_bursts 0\n"), &v2)
	assert.Equal(t, CPUQuota{Periods: 40, Throttled: 30, ThrottledTime: 2500 * time.Millisecond}, v2)
	var v1 CPUQuota
	parseCPUStat([]byte("nr_periods 23\nnr_throttled 13\nthrottled_time 302214958\n"), &v1)
	assert.Equal(t, CPUQuota{Periods: 23, Throttled: 13, ThrottledTime: 302214958}, v1)
}

func TestParseHostStatCPUTime(t *testing.T) {
	h := parseHostStat([]byte("cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 50 2 25 500 10 1 1 3 0 0\ncpu1 50 3 25 500 10 2 1 4 0 0\nctxt 99\n"))
	assert.Equal(t, 2, h.CPUs)
	assert.Equal(t, uint64(100+5+50+3+2), h.BusyTicks)
	assert.Equal(t, uint64(7), h.StealTicks)
	assert.Equal(t, uint64(99), h.ContextSwitches)
}

// fixtureV2 lays out a /proc tree and a cgroup2 hierarchy under dir: the
// target (pid 4242) in /app/web, a quota on /app (cpu.max) and none on
// /app/web, and returns the FS and the cgroup directory of /app.
func fixtureV2(t *testing.T) (FS, string) {
	t.Helper()
	dir := t.TempDir()
	proc, cg := filepath.Join(dir, "proc"), filepath.Join(dir, "cg")
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write(filepath.Join(proc, "stat"), "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 10 0 10 100 0 0 0 0 0 0\n")
	write(filepath.Join(proc, "4242", "cgroup"), "0::/app/web\n")
	write(filepath.Join(proc, "self", "mountinfo"),
		"30 1 0:26 / "+strings.ReplaceAll(cg, " ", `\040`)+" rw,nosuid - cgroup2 cgroup2 rw\n")
	write(filepath.Join(cg, "cpu.stat"), "usage_usec 1\n")
	write(filepath.Join(cg, "app", "cpu.max"), "50000 100000\n")
	write(filepath.Join(cg, "app", "cpu.stat"), "usage_usec 900\nnr_periods 40\nnr_throttled 30\nthrottled_usec 2500000\n")
	write(filepath.Join(cg, "app", "web", "cpu.max"), "max 100000\n")
	write(filepath.Join(cg, "app", "web", "cpu.stat"), "usage_usec 900\nnr_periods 40\nnr_throttled 0\nthrottled_usec 0\n")
	return NewFS(proc), filepath.Join(cg, "app")
}

// On a cgroup v2 host the quota is cpu.max of the target's cgroup or an
// ancestor: here the parent's, found from the target's /proc/<pid>/cgroup
// and the FS's self/mountinfo.
func TestHostReaderReadsACgroupV2Quota(t *testing.T) {
	fs, _ := fixtureV2(t)
	h, err := fs.NewHostReader(4242).Read()
	require.NoError(t, err)
	assert.Equal(t, []CPUQuota{{Cgroup: "/app", Version: 2, Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond,
		Periods: 40, Throttled: 30, ThrottledTime: 2500 * time.Millisecond}}, h.Quotas)
}

// A symlink in the cgroup tree (which a delegated subtree's owner might
// try to plant) is not followed: the quota's counters are left out rather
// than read from elsewhere.
func TestHostReaderFollowsNoSymlinkInTheCgroupTree(t *testing.T) {
	fs, app := fixtureV2(t)
	elsewhere := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(elsewhere, []byte("nr_periods 1\nnr_throttled 1\nthrottled_usec 1\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(app, "cpu.stat")))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(app, "cpu.stat")))
	h, err := fs.NewHostReader(4242).Read()
	require.NoError(t, err)
	assert.Empty(t, h.Quotas)

	// Nor is a cgroup path that climbs out of the mount.
	require.NoError(t, os.WriteFile(fs.Path("4242", "cgroup"), []byte("0::/../../etc\n"), 0o644))
	h, err = fs.NewHostReader(4242).Read()
	require.NoError(t, err)
	assert.Empty(t, h.Quotas)
}
