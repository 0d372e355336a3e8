package jvm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
)

// A live Java Flight Recorder recording of lock waits, driven through the
// attach socket's diagnostic commands (JFR.start, JFR.dump, JFR.stop), as
// jcmd would, without jcmd.
//
// What can outlive ctprof is bounded: the recording has a duration, so it
// ends by itself if ctprof is killed, and a destination of /dev/null, so
// that ending writes no file (JDK 21+ otherwise write one into the JVM's
// working directory). ctprof renews the recording before it ends for as
// long as it runs: it starts the next one, reads the old one a last time and
// stops it; the JVM shares its chunks between recordings, so nothing falls
// between them.
//
// New data is read by JFR.dump into a directory ctprof creates in the JVM's
// /tmp as the JVM's user, mode 0700: only that user (and root) can put
// anything there, and the file is read back through the confined opener
// (no link followed, a regular file of the JVM's user, bounded) and
// removed. A dump rotates the JVM's current chunk, so each dump ends with
// complete chunks; chunks are told apart by their start time, and only
// those not read before are returned.

// JFREvents are the event types a ctprof recording enables.
var JFREvents = []string{
	"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark",
	"jdk.VirtualThreadPinned", "jdk.GarbageCollection",
}

// Defaults of a ctprof recording.
const (
	// DefaultJFRThreshold: waits shorter than this are not recorded. The
	// JVM's own default for these events is 20 ms; 10 ms keeps the cost of
	// a contended workload within ctprof's budget (docs/PERFORMANCE.md).
	DefaultJFRThreshold = 10 * time.Millisecond
	// DefaultJFRDuration is how long a recording runs before ctprof renews
	// it, and so how long one outlives a killed ctprof at most.
	DefaultJFRDuration = 2 * time.Minute
	// DefaultJFRMaxAge and DefaultJFRMaxSize bound what the JVM keeps on
	// disk for the recording between reads.
	DefaultJFRMaxAge  = 2 * time.Minute
	DefaultJFRMaxSize = 32 << 20
)

// SettingsMode says how the event settings reach the JVM.
type SettingsMode int

const (
	// SettingsAuto: inline on JDK 17+, a .jfc file before.
	SettingsAuto SettingsMode = iota
	// SettingsInline passes "settings=none +event#setting=value ...": JDK 17+.
	SettingsInline
	// SettingsFile writes a .jfc file into ctprof's directory in the JVM's
	// /tmp and passes its path.
	SettingsFile
)

// RecordingOptions configure StartRecording.
type RecordingOptions struct {
	// Threshold is the shortest wait recorded; 0 records every wait. The
	// same value means the same in every layer: --jfr-threshold's default
	// (DefaultJFRThreshold) is set by the command line, nowhere else.
	Threshold time.Duration
	// Duration is how long each recording runs before ctprof renews it; a
	// killed ctprof leaves it running that long at most. The caller
	// chooses it (the sampler knows the run's length): it must be positive.
	Duration time.Duration
	MaxAge   time.Duration
	MaxSize  int64
	Settings SettingsMode
}

func (o *RecordingOptions) defaults() {
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultJFRMaxAge
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultJFRMaxSize
	}
}

// Recording is a running ctprof recording in one JVM.
type Recording struct {
	info *Info
	opts RecordingOptions

	// name is the current recording's name (ctprof-<ctprof's pid>-<seq>),
	// id the number the JVM gave it, used to address it since names need
	// not be unique; ends is when it stops by itself.
	name string
	id   string
	seq  int
	ends time.Time

	// dir is ctprof's directory in the JVM's /tmp (dirName below it).
	tmp     *targetDir
	dir     *targetDir
	dirName string
	dirSt   unix.Stat_t
	// held is a descriptor of dir with an exclusive flock, held while
	// ctprof runs: the kernel drops it when ctprof dies, and a later
	// ctprof takes a directory it can lock for the litter of a killed one
	// (removeStaleDirs).
	held int
	// jfc is the settings file's name in dir, when one was written.
	jfc   string
	jfcSt unix.Stat_t
	dumps int

	// lastChunk is the start (epoch ns) of the newest chunk returned;
	// lastEnd its end, where the next dump may begin.
	lastChunk int64
	lastEnd   time.Time
	stopped   bool
}

// recordingSeq numbers the recordings of this ctprof process (serve runs
// several samplers at once).
var recordingSeq atomic.Int64

// StartRecording starts a ctprof recording of lock waits in the JVM.
func StartRecording(ctx context.Context, i *Info, o RecordingOptions) (*Recording, error) {
	o.defaults()
	if o.Threshold < 0 || o.Duration <= 0 {
		return nil, fmt.Errorf("JFR recording: threshold %s must not be negative and duration %s must be positive", o.Threshold, o.Duration)
	}
	if i.Version > 0 && i.Version < 11 {
		return nil, fmt.Errorf("pid %d runs JDK %d: ctprof records with JFR on JDK 11 and later", i.PID, i.Version)
	}
	err := i.bounded(ctx, "the attach handshake", func(ctx context.Context) error {
		if err := i.checkRunning(); err != nil {
			return err
		}
		return i.ensureListener(ctx, nil)
	})
	if err != nil {
		return nil, err
	}
	r := &Recording{info: i, opts: o}
	if err := r.makeDir(); err != nil {
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		r.removeDir()
		return nil, err
	}
	return r, nil
}

// Name is the current recording's name, as JFR.check lists it.
func (r *Recording) Name() string { return r.name }

// Ends is when the current recording stops by itself unless renewed.
func (r *Recording) Ends() time.Time { return r.ends }

// Threshold is the shortest wait the recording was asked to keep. The JVM
// records an event once for all its recordings, at the lowest threshold
// any of them asked: a user's own recording can put shorter waits in what
// Read returns.
func (r *Recording) Threshold() time.Duration { return r.opts.Threshold }

func (r *Recording) inline() bool {
	switch r.opts.Settings {
	case SettingsInline:
		return true
	case SettingsFile:
		return false
	}
	return r.info.Version == 0 || r.info.Version >= 17
}

// start starts the next recording and makes it the current one.
func (r *Recording) start(ctx context.Context) error {
	r.seq = int(recordingSeq.Add(1))
	name := "ctprof-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(r.seq)
	args := []string{"JFR.start", "name=" + name}
	if r.inline() {
		args = append(args, "settings=none")
		args = append(args, inlineSettings(r.opts.Threshold)...)
	} else {
		if r.jfc == "" {
			if err := r.writeJFC(); err != nil {
				return err
			}
		}
		args = append(args, "settings="+r.jvmPath(r.jfc))
	}
	args = append(args,
		"maxage="+jfrSeconds(r.opts.MaxAge),
		"maxsize="+strconv.FormatInt(r.opts.MaxSize, 10),
		"duration="+jfrSeconds(r.opts.Duration),
		// Where the data goes when the recording ends by itself: nowhere.
		"filename=/dev/null")
	started := time.Now()
	limit := r.info.timeout()
	if r.id == "" {
		limit = max(limit, firstJFRStart) // no recording yet: see firstJFRStart
	}
	out, err := r.info.jcmd(ctx, limit, strings.Join(args, " "))
	if err != nil {
		return fmt.Errorf("start a JFR recording: %w", err)
	}
	r.name, r.id = name, name
	if id, ok := startedID(out); ok {
		r.id = id
	} else if !strings.Contains(string(out), "Started recording") {
		return fmt.Errorf("start a JFR recording: the JVM answered %q", truncateBytes(out, 200))
	}
	r.ends = started.Add(r.opts.Duration)
	return nil
}

// startedID reads the recording's number from JFR.start's answer
// ("Started recording 3."). Not a regular expression: package regexp
// would hold back the early dump's initializer (see connectUnix).
func startedID(out []byte) (string, bool) {
	const started = "Started recording "
	for rest := out; ; {
		k := bytes.Index(rest, []byte(started))
		if k < 0 {
			return "", false
		}
		rest = rest[k+len(started):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 {
			return string(rest[:n]), true
		}
	}
}

// inlineSettings enables exactly the events ctprof reads (JDK 17+ syntax:
// a '+' adds a setting to the empty configuration "none").
func inlineSettings(threshold time.Duration) []string {
	th := strconv.FormatInt(threshold.Nanoseconds(), 10) + "ns"
	var s []string
	for _, e := range JFREvents {
		s = append(s, "+"+e+"#enabled=true")
		if e == "jdk.GarbageCollection" {
			continue // every collection: there are few, and each is a pause
		}
		s = append(s, "+"+e+"#threshold="+th, "+"+e+"#stackTrace=true")
	}
	return s
}

// jfcSettings is the same configuration as a .jfc file (JDK 11 to 16).
func jfcSettings(threshold time.Duration) []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration version=\"2.0\" label=\"ctprof\" description=\"lock waits\" provider=\"ctprof\">\n")
	for _, e := range JFREvents {
		fmt.Fprintf(&b, "  <event name=%q>\n    <setting name=\"enabled\">true</setting>\n", e)
		if e != "jdk.GarbageCollection" {
			fmt.Fprintf(&b, "    <setting name=\"stackTrace\">true</setting>\n    <setting name=\"threshold\">%d ns</setting>\n", threshold.Nanoseconds())
		}
		b.WriteString("  </event>\n")
	}
	b.WriteString("</configuration>\n")
	return []byte(b.String())
}

// jfrSeconds renders d as JFR.start takes it (whole seconds, at least 1).
func jfrSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10) + "s"
}

// jvmPath is name inside ctprof's directory as the JVM sees it.
func (r *Recording) jvmPath(name string) string { return "/tmp/" + r.dirName + "/" + name }

// renewDue says whether the current recording ends too soon to wait for
// another read interval: margin covers one read interval and a slow reply.
func (r *Recording) renewDue(margin time.Duration) bool {
	return time.Until(r.ends) < margin
}

// Read returns the chunks recorded since the previous Read (the first
// returns everything since the start), as a JFR stream. margin is the
// time to the next Read: a recording that would end before it is renewed
// first. It returns nil and no error when there is nothing new.
func (r *Recording) Read(ctx context.Context, margin time.Duration) (b []byte, err error) {
	// One deadline for the read and the renewal it may take: a JVM that
	// does not answer costs the run one timeout, not one per command.
	err = r.info.bounded(ctx, "a JFR read", func(ctx context.Context) (err error) {
		b, err = r.read(ctx, margin)
		return err
	})
	return b, err
}

func (r *Recording) read(ctx context.Context, margin time.Duration) ([]byte, error) {
	if r.stopped {
		return nil, errors.New("the JFR recording was stopped")
	}
	old := r.id
	renewed := false
	if r.renewDue(margin + 5*time.Second) {
		if err := r.start(ctx); err != nil {
			return nil, err
		}
		renewed = true
	}
	b, err := r.dump(ctx, old)
	if renewed {
		r.stopID(ctx, old)
	}
	var refused *CommandError
	if errors.As(err, &refused) && !renewed && !r.running(ctx, old) {
		// The recording is gone (it ended while ctprof was stopped, or
		// someone stopped it): start another, and say so.
		if serr := r.start(ctx); serr != nil {
			return nil, errors.Join(err, serr)
		}
		return nil, fmt.Errorf("%w; a new recording was started", err)
	}
	if err != nil {
		return nil, err
	}
	return r.newChunks(b), nil
}

// running asks the JVM whether recording id still runs; an unclear answer
// counts as running, so that ctprof never starts recordings in a loop.
func (r *Recording) running(ctx context.Context, id string) bool {
	out, err := Jcmd(ctx, r.info, "JFR.check name="+id)
	var refused *CommandError
	if errors.As(err, &refused) {
		return false
	}
	return err != nil || strings.Contains(string(out), "(running)")
}

// dump has the JVM write recording id into ctprof's directory, from the
// end of the newest chunk already read, and reads the file back.
func (r *Recording) dump(ctx context.Context, id string) ([]byte, error) {
	r.dumps++
	name := "dump-" + strconv.Itoa(r.dumps) + ".jfr"
	args := []string{"JFR.dump", "name=" + id, "filename=" + r.jvmPath(name)}
	if !r.lastEnd.IsZero() && (r.info.Version == 0 || r.info.Version >= 17) {
		// JDK 17+ leave out chunks that end before this (the JVM's clock
		// is this host's).
		args = append(args, "begin="+r.lastEnd.UTC().Format(time.RFC3339Nano))
	}
	out, err := Jcmd(ctx, r.info, strings.Join(args, " "))
	if err == nil && !strings.Contains(string(out), "Dumped recording") {
		// The JVM reports a diagnostic command's failure as its output,
		// with status 0 ("No recordings to dump from").
		err = &CommandError{Command: "JFR.dump", Message: strings.TrimSpace(string(truncateBytes(out, 500)))}
	}
	if err != nil {
		r.removeFile(name)
		return nil, fmt.Errorf("dump the JFR recording: %w", err)
	}
	limit := max(2*r.opts.MaxSize, 64<<20)
	b, _, err := r.dir.readFile(name, r.info.UID, limit)
	r.removeFile(name)
	if err != nil {
		if !r.info.fs.Exists(r.info.PID) {
			return nil, fmt.Errorf("pid %d: %w", r.info.PID, procfs.ErrProcessGone)
		}
		if errors.Is(err, unix.ENOENT) {
			// Nothing recorded in the window: the JVM writes no file.
			return nil, nil
		}
		return nil, fmt.Errorf("read the JFR dump: %w", err)
	}
	return b, nil
}

// chunkHeaderSize is the fixed part of a chunk header: magic, version,
// size, two offsets, start nanos, duration nanos, start ticks, ticks per
// second, features.
const chunkHeaderSize = 68

// newChunks keeps the chunks of b that start after the newest chunk
// returned before; pkg/jfr judges everything else about them.
func (r *Recording) newChunks(b []byte) []byte {
	var out []byte
	for len(b) >= chunkHeaderSize && string(b[:4]) == "FLR\x00" {
		size := int64(binary.BigEndian.Uint64(b[8:16]))
		if size < chunkHeaderSize || size > int64(len(b)) {
			// Damaged or cut: leave the rest to the reader's judgement.
			size = int64(len(b))
		}
		start := int64(binary.BigEndian.Uint64(b[32:40]))
		dur := int64(binary.BigEndian.Uint64(b[40:48]))
		if start > r.lastChunk {
			out = append(out, b[:size]...)
			r.lastChunk = start
			r.lastEnd = time.Unix(0, start+dur)
		}
		b = b[size:]
	}
	return out
}

// Stop stops the current recording and removes ctprof's directory. It is
// safe to call more than once, and after the JVM exited.
func (r *Recording) Stop(ctx context.Context) error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	defer r.removeDir()
	return r.stopID(ctx, r.id)
}

func (r *Recording) stopID(ctx context.Context, id string) error {
	if !r.info.fs.Exists(r.info.PID) {
		return nil
	}
	if _, err := Jcmd(ctx, r.info, "JFR.stop name="+id); err != nil {
		if errors.Is(err, procfs.ErrProcessGone) {
			return nil
		}
		return fmt.Errorf("stop the JFR recording %s: %w", id, err)
	}
	return nil
}

// jfrDirPrefix starts the name of ctprof's directories in a JVM's /tmp.
const jfrDirPrefix = "ctprof-jfr-"

// staleDirAge is how old a directory that no ctprof holds must be to be
// taken for a killed ctprof's: a live one creates its directory and locks
// it microseconds apart.
var staleDirAge = 10 * time.Second

// makeDir creates ctprof's directory in the JVM's /tmp, as the JVM's user,
// mode 0700, under a name no one can guess, and holds it open and locked.
// The directories killed ctprofs left there are removed first.
func (r *Recording) makeDir() error {
	i := r.info
	tmp, err := openTargetRootDir(i.fs, i.PID, "tmp")
	if err != nil {
		return err
	}
	removeStaleDirs(tmp, i.UID, i.GID)
	n, err := nonce()
	if err != nil {
		tmp.Close()
		return err
	}
	name := jfrDirPrefix + strconv.Itoa(i.NSPID) + "-" + n
	err = asUser(i.UID, i.GID, func() error { return unix.Mkdirat(tmp.fd, name, 0o700) })
	if err != nil {
		tmp.Close()
		return fmt.Errorf("create %s/%s: %w", tmp.shown, name, err)
	}
	fd, st, err := tmp.lookup(name)
	if err == nil {
		err = checkOwned(&st, tmp.shown+"/"+name, unix.S_IFDIR, "directory", i.UID)
		if err == nil && st.Mode&0o077 != 0 {
			err = fmt.Errorf("%s/%s: %w: mode %o, not private", tmp.shown, name, errUnsafeFile, st.Mode&0o777)
		}
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		tmp.Close()
		return err
	}
	dir := &targetDir{fd: fd, shown: tmp.shown + "/" + name}
	held, err := dir.lock()
	if err != nil {
		unix.Close(fd)
		tmp.Close()
		return err
	}
	r.tmp, r.dirName, r.dirSt, r.held = tmp, name, st, held
	r.dir = dir
	return nil
}

// lock takes an exclusive flock of d without waiting and returns the
// descriptor that holds it (an O_PATH descriptor cannot be locked).
func (d *targetDir) lock() (int, error) {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(d.fd), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", d.shown, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lock %s: %w", d.shown, err)
	}
	return fd, nil
}

// removeStaleDirs removes from tmp the directories of killed ctprofs: a
// ctprof directory of the JVM's user that no process holds locked and that
// is older than staleDirAge. Inside it only what ctprof's runs put there
// goes (its settings file, dump files: regular files of the JVM's user),
// as the JVM's user, as removeDir does; a directory with anything else
// stays. Another user's directory is left alone.
func removeStaleDirs(tmp *targetDir, uid, gid int) {
	names, err := tmp.readDirNames(jfrDirPrefix)
	if err != nil {
		return
	}
	// The target's owner decides what /tmp holds: the work per start is
	// bounded.
	names = names[:min(len(names), maxStaleDirs)]
	for _, name := range names {
		fd, st, err := tmp.lookup(name)
		if err != nil {
			continue
		}
		dir := &targetDir{fd: fd, shown: tmp.shown + "/" + name}
		changed := time.Unix(st.Ctim.Unix())
		if checkOwned(&st, dir.shown, unix.S_IFDIR, "directory", uid) != nil || time.Since(changed) < staleDirAge {
			unix.Close(fd)
			continue
		}
		held, err := dir.lock()
		if err != nil {
			unix.Close(fd) // a live ctprof's
			continue
		}
		dir.removeOwnedFile(jfcName, uid, gid)
		dumps, _ := dir.readDirNames("dump-")
		for _, f := range dumps[:min(len(dumps), maxStaleDirs)] {
			if strings.HasSuffix(f, ".jfr") {
				dir.removeOwnedFile(f, uid, gid)
			}
		}
		unix.Close(fd)
		var now unix.Stat_t
		if unix.Fstatat(tmp.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == st.Dev && now.Ino == st.Ino {
			_ = asUser(uid, gid, func() error { return unix.Unlinkat(tmp.fd, name, unix.AT_REMOVEDIR) })
		}
		unix.Close(held) // after the directory is gone, as removeDir does
	}
}

// maxStaleDirs bounds the stale directories one start removes, and the
// dump files it removes from each (a killed ctprof leaves one or two).
const maxStaleDirs = 64

// writeJFC writes the settings file into ctprof's directory, as the JVM's
// user, exclusively and without following a link.
func (r *Recording) writeJFC() error {
	name := jfcName
	content := jfcSettings(r.opts.Threshold)
	err := asUser(r.info.UID, r.info.GID, func() error {
		fd, err := unix.Openat(r.dir.fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for b := content; len(b) > 0; {
			n, err := unix.Write(fd, b)
			if err != nil {
				return err
			}
			b = b[n:]
		}
		return unix.Fstat(fd, &r.jfcSt)
	})
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", r.dir.shown, name, err)
	}
	r.jfc = name
	return nil
}

// jfcName is the settings file ctprof writes into its directory.
const jfcName = "ctprof.jfc"

// removeFile removes a file the JVM wrote into ctprof's directory.
func (r *Recording) removeFile(name string) { r.dir.removeOwnedFile(name, r.info.UID, r.info.GID) }

// removeOwnedFile removes name from d if it is a regular file of uid (d is
// a directory of the JVM's user, so nothing else should be there), as
// uid:gid.
func (d *targetDir) removeOwnedFile(name string, uid, gid int) {
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == uid {
		_ = d.removeIfSame(name, st, uid, gid)
	}
}

// removeDir removes ctprof's directory: its settings file, a dump file a
// failed read left, then the directory itself if it is still the one
// ctprof made. Anything else found there stays, and so does the directory.
func (r *Recording) removeDir() {
	if r.dir == nil {
		return
	}
	if r.jfc != "" {
		_ = r.dir.removeIfSame(r.jfc, r.jfcSt, r.info.UID, r.info.GID)
	}
	if names, err := r.dir.readDirNames("dump-"); err == nil {
		for _, n := range names {
			if strings.HasSuffix(n, ".jfr") {
				r.removeFile(n)
			}
		}
	}
	r.dir.Close()
	r.dir = nil
	var now unix.Stat_t
	if unix.Fstatat(r.tmp.fd, r.dirName, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		now.Dev == r.dirSt.Dev && now.Ino == r.dirSt.Ino {
		_ = asUser(r.info.UID, r.info.GID, func() error { return unix.Unlinkat(r.tmp.fd, r.dirName, unix.AT_REMOVEDIR) })
	}
	unix.Close(r.held) // after the directory is gone, or another ctprof may take what stays
	r.tmp.Close()
}
