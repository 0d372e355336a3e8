package jvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ctprof/ctprof/internal/procfs"
)

// Errors callers act on.
var (
	// ErrNotJVM: the process is not a HotSpot JVM with performance data
	// (no hsperfdata file: not a JVM, or one started with -XX:-UsePerfData).
	ErrNotJVM = errors.New("not a HotSpot JVM with performance data")
	// ErrAttachDisabled: the JVM was started with
	// -XX:+DisableAttachMechanism.
	ErrAttachDisabled = errors.New("the JVM's attach mechanism is disabled (-XX:+DisableAttachMechanism)")
	// ErrNoQuitHandler: the process does not catch SIGQUIT (-Xrs, or not a
	// JVM after all): signalling it would kill it, so ctprof does not.
	ErrNoQuitHandler = errors.New("the process does not catch SIGQUIT (-Xrs?); ctprof will not signal it")
)

// Info describes a JVM found on this host.
type Info struct {
	PID int
	// NSPID is its pid inside its own pid namespace: the JVM names its
	// files after it.
	NSPID    int
	UID, GID int
	// PerfDataPath is the hsperfdata file, seen through /proc/<pid>/root.
	PerfDataPath string
	// Version is the JDK feature release (8, 17, 25); 0 when unknown.
	Version int
	// VM is "OpenJDK 64-Bit Server VM 25.0.3+9-LTS"; MainClass the
	// command's first word (sun.rt.javaCommand).
	VM        string
	MainClass string
	JavaHome  string
	// AttachSupported and CatchesQuit must both hold before ctprof sends
	// the SIGQUIT that starts the attach listener.
	AttachSupported bool
	CatchesQuit     bool

	fs procfs.FS
	// protocol caches the attach protocol version once probed (1 or 2);
	// streaming says whether v2 offers the streaming option.
	protocol  int
	streaming bool
	// lastReply is the size of each command's last reply, to size the
	// next.
	lastReply map[string]int
}

// Inspect finds out whether pid is a HotSpot JVM ctprof can attach to. It
// returns ErrNotJVM when the process has no hsperfdata file.
func Inspect(procRoot string, pid int) (*Info, error) {
	fs := procfs.NewFS(procRoot)
	p, err := fs.Process(pid)
	if err != nil {
		return nil, err
	}
	info := &Info{PID: pid, NSPID: p.NSPID, UID: p.UID, GID: p.GID, fs: fs}
	info.PerfDataPath, err = findPerfData(fs, pid, p.NSPID)
	if err != nil {
		return nil, err
	}
	pd, err := readPerfDataFile(info.PerfDataPath)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	name, _ := pd.String("java.property.java.vm.name")
	ver, _ := pd.String("java.property.java.vm.version")
	info.VM = strings.TrimSpace(name + " " + ver)
	if spec, ok := pd.String("java.property.java.vm.specification.version"); ok {
		info.Version = featureVersion(spec)
	}
	info.JavaHome, _ = pd.String("java.property.java.home")
	if cmd, ok := pd.String("sun.rt.javaCommand"); ok {
		if f := strings.Fields(cmd); len(f) > 0 {
			info.MainClass = f[0]
		}
	}
	info.AttachSupported = pd.AttachSupported()
	info.CatchesQuit, err = catchesQuit(fs, pid)
	if err != nil {
		return nil, err
	}
	return info, nil
}

// featureVersion reads "1.8" as 8 and "17" as 17.
func featureVersion(spec string) int {
	spec = strings.TrimPrefix(spec, "1.")
	if i := strings.IndexAny(spec, ".+-"); i >= 0 {
		spec = spec[:i]
	}
	n, _ := strconv.Atoi(spec)
	return n
}

// findPerfData locates /proc/<pid>/root/tmp/hsperfdata_<user>/<nspid>. The
// user directory is named after the JVM's user as its own /etc/passwd
// knows it; scanning the hsperfdata_* directories avoids reading that.
func findPerfData(fs procfs.FS, pid, nspid int) (string, error) {
	tmp := fs.Path(strconv.Itoa(pid), "root", "tmp")
	dirs, err := filepath.Glob(filepath.Join(tmp, "hsperfdata_*"))
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		path := filepath.Join(d, strconv.Itoa(nspid))
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			return path, nil
		}
	}
	if !fs.Exists(pid) {
		return "", fmt.Errorf("pid %d: %w", pid, procfs.ErrProcessGone)
	}
	return "", fmt.Errorf("pid %d: %w", pid, ErrNotJVM)
}

// readPerfDataFile reads and parses an hsperfdata file.
func readPerfDataFile(path string) (*PerfData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	// Sized from the file (its size is fixed when the JVM starts), so a
	// read every tick is one allocation.
	size := int64(64 << 10)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		size = min(st.Size(), maxPerfData)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, maxPerfData)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ParsePerfData(buf.Bytes())
}

// ReadPerfData reads the JVM's hsperfdata now.
func (i *Info) ReadPerfData() (*PerfData, error) {
	return readPerfDataFile(i.PerfDataPath)
}

// catchesQuit reads SigCgt from /proc/<pid>/status: bit 3 is SIGQUIT.
func catchesQuit(fs procfs.FS, pid int) (bool, error) {
	b, err := os.ReadFile(fs.Path(strconv.Itoa(pid), "status"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("pid %d: %w", pid, procfs.ErrProcessGone)
		}
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<2) != 0, nil
		}
	}
	return false, nil
}

// List finds the HotSpot JVMs of this host (those with hsperfdata).
func List(procRoot string) ([]*Info, error) {
	entries, err := os.ReadDir(procfs.NewFS(procRoot).Root())
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []*Info
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if info, err := Inspect(procRoot, pid); err == nil {
			out = append(out, info)
		}
	}
	return out, nil
}
