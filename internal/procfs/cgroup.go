package procfs

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CPUQuota is a cgroup's CPU bandwidth limit and its throttling counters.
type CPUQuota struct {
	// Cgroup is the cgroup's path in its hierarchy, as the target's
	// /proc/<pid>/cgroup gives it ("/system.slice/app.service"). The
	// owner of a delegated subtree names its cgroups: hostile text.
	Cgroup string
	// Version is the cgroup version: 2 (cpu.max) or 1
	// (cpu.cfs_quota_us, cpu.cfs_period_us).
	Version int
	// The cgroup's threads may run Quota of CPU time in every Period:
	// Quota/Period CPUs.
	Quota, Period time.Duration
	// Periods counts the periods in which the cgroup had runnable threads,
	// Throttled those in which it used up its quota and was held back,
	// and ThrottledTime the time it was held back (cpu.stat, cumulative).
	Periods, Throttled uint64
	ThrottledTime      time.Duration
}

// quotaDir is a cgroup directory that sets a CPU quota, relative to the
// root of its hierarchy's mount in ctprof's own mount namespace.
type quotaDir struct {
	mount   string // the mount point
	rel     string // the directory below it ("." for the mount's root)
	cgroup  string // the cgroup's path as /proc/<pid>/cgroup gives it
	version int
	quota   time.Duration
	period  time.Duration
}

// maxCgroupDepth bounds the walk from the target's cgroup up to the root.
const maxCgroupDepth = 32

// findQuotas finds the cgroups that limit pid's CPU time: its own cgroup
// in the hierarchy that holds the cpu controller and each ancestor up to
// that hierarchy's mount, those among them that set a quota.
//
// The hierarchy is located through ctprof's own mounts (this FS's
// self/mountinfo), never through the target's root or mounts, and every
// file below the mount is opened with openat2 confined to it, with no
// symlinks and no other mounts: where the path comes from the target's
// side, its owner cannot lead the read elsewhere.
func (f FS) findQuotas(pid int) []quotaDir {
	cg, err := f.readFile(f.pidPath(pid, "cgroup"))
	if err != nil {
		return nil
	}
	mi, err := f.readFile(f.Path("self", "mountinfo"))
	if err != nil {
		return nil
	}
	m, rel, ok := cpuHierarchy(cg, mi)
	if !ok {
		return nil
	}
	version := m.version
	mfd, err := unix.Open(m.point, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(mfd)
	var out []quotaDir
	for depth := 0; depth < maxCgroupDepth; depth++ {
		d := quotaDir{mount: m.point, rel: rel, cgroup: path.Join(m.root, rel), version: version}
		if d.readLimit(mfd) {
			out = append(out, d)
		}
		if rel == "." {
			break
		}
		rel = path.Dir(rel)
	}
	return out
}

// cpuHierarchy picks, from a process's /proc/<pid>/cgroup and ctprof's
// mountinfo, the mount that shows the process's cgroup in the hierarchy
// holding the cpu controller, and the cgroup's directory below it. A
// hybrid host mounts the v2 hierarchy beside v1 ones, and the controller
// belongs to v1 when the process is in a v1 cpu hierarchy ctprof can see;
// otherwise to v2 (where a cgroup without the controller enabled has no
// cpu.max, hence no quota).
func cpuHierarchy(procCgroup, mountinfo []byte) (cgroupMount, string, bool) {
	v1, v2, hasV2 := parseProcCgroup(procCgroup)
	mounts := parseCgroupMounts(mountinfo)
	below := func(version int, cgroup string) (cgroupMount, string, bool) {
		for _, m := range mounts {
			if m.version != version {
				continue
			}
			if rel, ok := cgroupBelow(cgroup, m.root); ok {
				return m, rel, true
			}
		}
		return cgroupMount{}, "", false
	}
	if v1 != "" {
		if m, rel, ok := below(1, v1); ok {
			return m, rel, true
		}
	}
	if hasV2 {
		return below(2, v2)
	}
	return cgroupMount{}, "", false
}

// readLimit reads the directory's quota; false when it sets none (or
// cannot be read: not every cgroup has the cpu controller enabled).
func (d *quotaDir) readLimit(mfd int) bool {
	if d.version == 2 {
		b, err := readBeneath(mfd, path.Join(d.rel, "cpu.max"))
		if err != nil {
			return false
		}
		f := bytes.Fields(b)
		if len(f) < 2 || string(f[0]) == "max" {
			return false
		}
		d.quota, d.period = usec(f[0]), usec(f[1])
	} else {
		q, err := readBeneath(mfd, path.Join(d.rel, "cpu.cfs_quota_us"))
		if err != nil || len(q) == 0 || q[0] == '-' {
			return false
		}
		p, err := readBeneath(mfd, path.Join(d.rel, "cpu.cfs_period_us"))
		if err != nil {
			return false
		}
		d.quota, d.period = usec(trim(q)), usec(trim(p))
	}
	return d.quota > 0 && d.period > 0
}

// maxMicros bounds a time in microseconds read from a cgroup, so that it
// converts to a time.Duration (at most 292 years) without overflow.
const maxMicros = 1 << 53

func usec(b []byte) time.Duration {
	n := atou(b)
	if n > maxMicros {
		return 0
	}
	return time.Duration(n) * time.Microsecond
}

// readQuotas reads the throttling counters of the quotas found at the
// latest sweep. A cgroup that went away is left out until the next sweep
// looks again.
func (r *HostReader) readQuotas() []CPUQuota {
	if len(r.quotas) == 0 {
		return nil
	}
	out := make([]CPUQuota, 0, len(r.quotas))
	mfd := -1
	mount := ""
	defer func() {
		if mfd >= 0 {
			unix.Close(mfd)
		}
	}()
	for _, d := range r.quotas {
		if d.mount != mount {
			if mfd >= 0 {
				unix.Close(mfd)
			}
			fd, err := unix.Open(d.mount, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil
			}
			mfd, mount = fd, d.mount
		}
		b, err := readBeneath(mfd, path.Join(d.rel, "cpu.stat"))
		if err != nil {
			continue
		}
		q := CPUQuota{Cgroup: d.cgroup, Version: d.version, Quota: d.quota, Period: d.period}
		parseCPUStat(b, &q)
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// parseCPUStat reads the throttling counters of a cgroup's cpu.stat (v2:
// throttled_usec; v1: throttled_time in nanoseconds).
func parseCPUStat(b []byte, q *CPUQuota) {
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		if !ok {
			continue
		}
		n := atou(v)
		switch string(k) {
		case "nr_periods":
			q.Periods = n
		case "nr_throttled":
			q.Throttled = n
		case "throttled_usec":
			if n <= maxMicros {
				q.ThrottledTime = time.Duration(n) * time.Microsecond
			}
		case "throttled_time":
			if n <= 1<<62 {
				q.ThrottledTime = time.Duration(n)
			}
		}
	}
}

// readBeneath reads a small file below the directory dirfd, confined to
// it: no "..", no symlinks, no crossing into another mount.
func readBeneath(dirfd int, name string) ([]byte, error) {
	fd, err := Openat2(dirfd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 512)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// parseProcCgroup reads /proc/<pid>/cgroup: the path in the v1 hierarchy
// that holds the cpu controller ("" when none) and the v2 path.
func parseProcCgroup(b []byte) (v1, v2 string, hasV2 bool) {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		_, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		ctrls, p, ok := bytes.Cut(rest, []byte{':'})
		if !ok {
			continue
		}
		if len(ctrls) == 0 {
			v2, hasV2 = string(p), true
			continue
		}
		for c := range bytes.SplitSeq(ctrls, []byte{','}) {
			if string(c) == "cpu" {
				v1 = string(p)
			}
		}
	}
	return v1, v2, hasV2
}

// cgroupMount is a mount of a cgroup hierarchy: v2, or v1 with the cpu
// controller.
type cgroupMount struct {
	version int
	root    string // the cgroup the mount shows at its top
	point   string
}

// parseCgroupMounts picks the cgroup2 mounts and the v1 mounts that carry
// the cpu controller out of a mountinfo (proc(5)): "id parent maj:min root
// point options [optional...] - fstype source superoptions".
func parseCgroupMounts(b []byte) []cgroupMount {
	var out []cgroupMount
	for line := range bytes.Lines(b) {
		pre, post, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(" - "))
		if !ok {
			continue
		}
		f, g := bytes.Fields(pre), bytes.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch string(g[0]) {
		case "cgroup2":
			m.version = 2
		case "cgroup":
			if len(g) < 3 {
				continue
			}
			for o := range bytes.SplitSeq(g[2], []byte{','}) {
				if string(o) == "cpu" {
					m.version = 1
				}
			}
		}
		if m.version != 0 {
			out = append(out, m)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(b []byte) string {
	if !bytes.Contains(b, []byte{'\\'}) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+3 < len(b) {
			if v, err := strconv.ParseUint(string(b[i+1:i+4]), 8, 8); err == nil {
				sb.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		sb.WriteByte(b[i])
	}
	return sb.String()
}

// cgroupBelow returns the cgroup's directory relative to a mount showing
// the hierarchy from root; false when the mount does not show it (a path
// that climbs out of ctprof's cgroup namespace, "/../x", or lies beside
// the mount's root).
func cgroupBelow(cgroup, root string) (string, bool) {
	if !strings.HasPrefix(cgroup, "/") || !strings.HasPrefix(root, "/") {
		return "", false
	}
	for _, c := range strings.Split(cgroup, "/") {
		if c == ".." {
			return "", false
		}
	}
	p, root := path.Clean(cgroup), path.Clean(root)
	switch {
	case p == root:
		return ".", true
	case root == "/":
		return p[1:], true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root)+1:], true
	}
	return "", false
}
