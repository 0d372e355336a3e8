package procfs

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// Process describes a process as ctprof shows it.
type Process struct {
	PID int
	// Name is the kernel's name for it (comm).
	Name string
	// Cmdline is the command line with arguments separated by spaces.
	Cmdline string
	// UID and GID are the effective ids; NSPID is the pid inside the
	// process's own pid namespace (the last NSpid entry).
	UID, GID int
	NSPID    int
	Threads  int
	// CPUsAllowed is the affinity list and CPUs the number of CPUs in it.
	CPUsAllowed string
	CPUs        int
}

// Process reads pid's status and cmdline.
func (f FS) Process(pid int) (*Process, error) {
	b, err := f.readFile(f.pidPath(pid, "status"))
	if err != nil {
		return nil, err
	}
	p := &Process{PID: pid, NSPID: pid}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "Name":
			p.Name = string(v)
		case "Uid":
			p.UID = nthField(v, 1)
		case "Gid":
			p.GID = nthField(v, 1)
		case "NSpid":
			if f := bytes.Fields(v); len(f) > 0 {
				p.NSPID = int(atou(f[len(f)-1]))
			}
		case "Threads":
			p.Threads = int(atou(v))
		case "Cpus_allowed_list":
			p.CPUsAllowed = string(v)
			p.CPUs = CountCPUs(p.CPUsAllowed)
		}
	}
	if c, err := f.readFile(f.pidPath(pid, "cmdline")); err == nil {
		p.Cmdline = strings.TrimSpace(string(bytes.ReplaceAll(c, []byte{0}, []byte{' '})))
	}
	return p, nil
}

// nthField returns the n-th (0-based) whitespace-separated number of v.
func nthField(v []byte, n int) int {
	f := bytes.Fields(v)
	if n >= len(f) {
		return 0
	}
	return int(atou(f[n]))
}

// CountCPUs counts the CPUs in a kernel CPU list such as "0-3,8,10-11".
func CountCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		if !isRange {
			if err1 == nil {
				n++
			}
			continue
		}
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && b >= a {
			n += b - a + 1
		}
	}
	return n
}

// IsJVM reports whether pid runs a HotSpot or OpenJ9 JVM: its maps hold
// libjvm.so (or libj9vm for OpenJ9). Unreadable maps say no; CheckJVM
// tells "no" from "cannot tell".
func (f FS) IsJVM(pid int) bool {
	ok, _ := f.CheckJVM(pid)
	return ok
}

// CheckJVM is IsJVM with the reason it could not tell: ErrPermission when
// ctprof may not read the process's maps (another user's process, and
// ctprof not root), ErrProcessGone when it exited.
func (f FS) CheckJVM(pid int) (bool, error) {
	libs, err := f.JVMLibraries(pid)
	return libs.HotSpot || libs.OpenJ9, err
}

// JVMLibraries are the JVM libraries a process maps.
type JVMLibraries struct {
	// HotSpot: libjvm.so; OpenJ9: libj9vm (OpenJ9 ships a libjvm.so too).
	HotSpot, OpenJ9 bool
	// LibJVM is libjvm.so's first mapping (Path "" without one): a
	// Symbolizer can load its symbols ahead (Symbolizer.Preload).
	LibJVM symbolize.Mapping
}

// JVMLibraries says which JVM libraries pid maps. The kernel lists the
// mapped files alone where it can (PROCMAP_QUERY: a 2,000-thread JVM maps
// 80 files among 4,200 mappings); otherwise the maps text is searched.
func (f FS) JVMLibraries(pid int) (JVMLibraries, error) {
	var libs JVMLibraries
	err := f.eachMappedFile(pid, func(m symbolize.Mapping) bool {
		libs.note(m)
		return !libs.OpenJ9 // OpenJ9 maps both
	})
	if !errors.Is(err, errNoProcmapQuery) {
		return libs, err
	}
	return f.jvmLibrariesInMapsText(pid)
}

func (libs *JVMLibraries) note(m symbolize.Mapping) {
	if strings.Contains(m.Path, libHotSpot) {
		if !libs.HotSpot {
			libs.LibJVM = m
		}
		libs.HotSpot = true
	}
	libs.OpenJ9 = libs.OpenJ9 || strings.Contains(m.Path, libOpenJ9)
}

// jvmLibrariesInMapsText is JVMLibraries on a kernel without
// PROCMAP_QUERY.
func (f FS) jvmLibrariesInMapsText(pid int) (JVMLibraries, error) {
	var libs JVMLibraries
	b, err := f.readFile(f.pidPath(pid, "maps"))
	if err != nil {
		return libs, err
	}
	for len(b) > 0 && !libs.OpenJ9 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if bytes.Contains(line, []byte(libHotSpot)) || bytes.Contains(line, []byte(libOpenJ9)) {
			if m, ok := parseMapsLine(line); ok {
				libs.note(m)
			}
		}
	}
	return libs, nil
}

// The libraries a JVM maps: HotSpot's, or OpenJ9's.
const (
	libHotSpot = "/libjvm.so"
	libOpenJ9  = "/libj9vm"
)

// TaskCount is the number of threads /proc/<pid>/task lists (0 when it
// cannot be read).
func (f FS) TaskCount(pid int) int {
	d, err := os.Open(f.pidPath(pid, "task"))
	if err != nil {
		return 0
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0
	}
	return len(names)
}
