package jvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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
	// ErrNoQuitHandler: the attach listener is not running and the
	// process does not catch SIGQUIT (-Xrs, or not a JVM after all):
	// signalling it would kill it, so ctprof does not. (-Xrs JVMs open
	// their attach socket at start; this is one whose socket was deleted.)
	ErrNoQuitHandler = errors.New("the process does not catch SIGQUIT (-Xrs?) and has no attach socket open; ctprof will not signal it")
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

	// NoPerfData says why the JVM's hsperfdata could not be read (it was
	// started with -XX:+PerfDisableSharedMem or -XX:-UsePerfData, or the
	// file was refused); empty when it was read. Attach needs no
	// hsperfdata, so such a JVM is still dumped; its counters and the
	// pause each dump caused are unknown.
	NoPerfData string

	// Timeout bounds each request to the JVM: the attach handshake, a
	// dump, a JFR command (0: DefaultTimeout). A request past it is
	// abandoned (deadline.go).
	Timeout time.Duration

	fs procfs.FS
	// perfName is the hsperfdata file below the JVM's /tmp; empty without
	// one.
	perfName string
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
	return InspectMapped(procfs.NewFS(procRoot), pid, nil)
}

// InspectMapped is Inspect with hotSpot answering whether pid maps
// HotSpot's libjvm.so (nil: Inspect finds out), which it asks only of a
// process without hsperfdata: a caller that finds out anyway (the sampler,
// to tell a JVM) runs both at once and walks the mappings once. fs is the
// caller's view of /proc, so that every read of one run goes through the
// same root.
func InspectMapped(fs procfs.FS, pid int, hotSpot func() bool) (*Info, error) {
	if hotSpot == nil {
		hotSpot = func() bool { return hotSpotMapped(fs, pid) }
	}
	p, err := fs.Process(pid)
	if err != nil {
		return nil, err
	}
	info := &Info{PID: pid, NSPID: p.NSPID, UID: p.UID, GID: p.GID, fs: fs}
	info.perfName, err = findPerfData(fs, pid, p.NSPID, p.UID)
	if err != nil {
		if !errors.Is(err, ErrNotJVM) || !hotSpot() {
			return nil, err
		}
		return inspectWithoutPerfData(info, p.Cmdline, err)
	}
	info.PerfDataPath = fs.Path(strconv.Itoa(pid), "root", "tmp", info.perfName)
	pd, err := info.ReadPerfData()
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
	if info.MainClass == "" {
		// A JVM met in its first moments may not have written its
		// command into hsperfdata yet (serve --java discovers JVMs as
		// they start): its command line says it already.
		info.MainClass = mainClassOf(strings.Fields(p.Cmdline))
	}
	info.AttachSupported = pd.AttachSupported()
	info.CatchesQuit, err = catchesQuit(fs, pid)
	if err != nil {
		return nil, err
	}
	return info, nil
}

// ErrNoPerfData is what ReadPerfData returns for a JVM without a readable
// hsperfdata file.
var ErrNoPerfData = errors.New("no hsperfdata")

// hotSpotMapped reports whether pid has HotSpot's libjvm.so mapped (OpenJ9
// ships a libjvm.so too, beside its libj9vm, and speaks another attach
// protocol).
func hotSpotMapped(fs procfs.FS, pid int) bool {
	libs, err := fs.JVMLibraries(pid)
	return err == nil && libs.HotSpot && !libs.OpenJ9
}

// inspectWithoutPerfData describes a HotSpot JVM that has no hsperfdata
// file (-XX:+PerfDisableSharedMem, -XX:-UsePerfData): the attach protocol
// does not need it, as jcmd shows. What hsperfdata would have said comes
// from the command line where it can: the main class, and whether attach
// was disabled there (a flag set through JAVA_TOOL_OPTIONS or a flags file
// is only found when attach is refused).
func inspectWithoutPerfData(info *Info, cmdline string, why error) (*Info, error) {
	args := strings.Fields(cmdline)
	info.NoPerfData = "the JVM has no hsperfdata file"
	for _, a := range args {
		if a == "-XX:+PerfDisableSharedMem" || a == "-XX:-UsePerfData" {
			info.NoPerfData += " (it runs with " + a + ")"
			break
		}
	}
	// A planted file was refused (findPerfData appends the reason): say
	// which.
	if msg, mark := why.Error(), ErrNotJVM.Error()+": "; strings.Contains(msg, mark) {
		info.NoPerfData = "its hsperfdata file was refused: " + msg[strings.Index(msg, mark)+len(mark):]
	}
	info.AttachSupported = true
	for _, a := range args {
		if a == "-XX:+DisableAttachMechanism" {
			info.AttachSupported = false
		}
	}
	info.MainClass = mainClassOf(args)
	var err error
	if info.CatchesQuit, err = catchesQuit(info.fs, info.PID); err != nil {
		return nil, err
	}
	return info, nil
}

// mainClassOf finds what a java command line runs: the argument of -jar
// or -m/--module, or the first argument that is not an option (skipping
// the values of options that take one).
func mainClassOf(args []string) string {
	withValue := map[string]bool{"-cp": true, "-classpath": true, "--class-path": true, "-p": true, "--module-path": true,
		"--add-modules": true, "--add-opens": true, "--add-exports": true, "--add-reads": true, "--patch-module": true,
		"--limit-modules": true, "--upgrade-module-path": true, "--enable-native-access": true}
	for k := 1; k < len(args); k++ {
		a := args[k]
		switch {
		case (a == "-jar" || a == "-m" || a == "--module") && k+1 < len(args):
			return args[k+1]
		case withValue[a]:
			k++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
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

// findPerfData locates <root>/tmp/hsperfdata_<user>/<nspid> and returns
// its name below the JVM's /tmp. The user directory is named after the
// JVM's user as its own /etc/passwd knows it; rather than read that file
// of the target's, findPerfData tries the name ctprof's own passwd gives
// the JVM's uid, then scans the hsperfdata_* directories. The file must be a regular file of the
// JVM's user reached without a link (HotSpot refuses linked directories
// too): a link or a FIFO planted there is neither followed nor opened.
func findPerfData(fs procfs.FS, pid, nspid, uid int) (string, error) {
	tmp, err := openTargetRootDir(fs, pid, "tmp")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	// HotSpot names the directory after its user as getpwuid knows it.
	// For a JVM that shares ctprof's /etc/passwd that is the name below:
	// tried first, it saves listing the whole /tmp (thousands of entries
	// on a busy host, milliseconds before a one-shot's request).
	if hint := perfDirOfUser(uid); hint != "" {
		name := hint + "/" + strconv.Itoa(nspid)
		if fd, st, err := tmp.lookup(name); err == nil {
			unix.Close(fd)
			if checkOwned(&st, tmp.shown+"/"+name, unix.S_IFREG, "regular file", uid) == nil {
				return name, nil
			}
		}
	}
	names, err := tmp.readDirNames("hsperfdata_")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	var refused error
	for _, d := range names {
		name := d + "/" + strconv.Itoa(nspid)
		fd, st, err := tmp.lookup(name)
		if err != nil {
			if errors.Is(err, errUnsafeFile) && refused == nil {
				refused = err
			}
			continue
		}
		unix.Close(fd)
		if err := checkOwned(&st, tmp.shown+"/"+name, unix.S_IFREG, "regular file", uid); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		return name, nil
	}
	if !fs.Exists(pid) {
		return "", fmt.Errorf("pid %d: %w", pid, procfs.ErrProcessGone)
	}
	if refused != nil {
		return "", fmt.Errorf("pid %d: %w: %w", pid, ErrNotJVM, refused)
	}
	return "", fmt.Errorf("pid %d: %w", pid, ErrNotJVM)
}

// perfDirOfUser is "hsperfdata_<name>" for the user uid has in ctprof's
// own /etc/passwd, or "" when it has none there. Only a hint: the file in
// it is checked as any other.
func perfDirOfUser(uid int) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	if name := userName(b, uid); name != "" {
		return "hsperfdata_" + name
	}
	return ""
}

// userName finds uid's name in a passwd file (name:password:uid:gid:...):
// the first entry with that uid, as getpwuid answers; "" when none has.
func userName(passwd []byte, uid int) string {
	id := strconv.Itoa(uid)
	for line := range bytes.Lines(passwd) {
		f := bytes.SplitN(bytes.TrimRight(line, "\r\n"), []byte(":"), 4)
		if len(f) == 4 && len(f[0]) > 0 && string(f[2]) == id {
			return string(f[0])
		}
	}
	return ""
}

// readPerfDataFile reads and parses the JVM's hsperfdata file, name below
// its /tmp, through the safe opener.
func readPerfDataFile(fs procfs.FS, pid int, name string, uid int) (*PerfData, error) {
	tmp, err := openTargetRootDir(fs, pid, "tmp")
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	b, _, err := tmp.readFile(name, uid, maxPerfData)
	if err != nil {
		return nil, err
	}
	return ParsePerfData(b)
}

// ReadPerfData reads the JVM's hsperfdata now.
func (i *Info) ReadPerfData() (*PerfData, error) {
	if i.perfName == "" {
		return nil, fmt.Errorf("pid %d: %w: %s", i.PID, ErrNoPerfData, i.NoPerfData)
	}
	return readPerfDataFile(i.fs, i.PID, i.perfName, i.UID)
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
