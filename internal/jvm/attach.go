package jvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
)

// The HotSpot attach protocol on Linux: the JVM listens on the UNIX socket
// /tmp/.java_pid<nspid> once its attach listener runs. A client starts the
// listener by creating .attach_pid<nspid> in the JVM's working directory
// (or /tmp) and sending SIGQUIT. A request is NUL-terminated strings:
// version 1 is "1", the command and exactly three arguments; version 2
// (JDK 24+) is "2", the byte size of what follows, the command (with
// options after a space, such as "streaming=0") and its arguments. The
// reply is a status line ("0" for success) and the output, to EOF.

// ErrAttachFailed wraps failures of the attach protocol itself (no socket,
// a protocol error): the jcmd fallback may still work.
var ErrAttachFailed = errors.New("attach failed")

// listenerTimeout bounds the wait for the attach listener to start; the
// JDK's own client waits 10 s, and a loaded JVM can take most of that.
const listenerTimeout = 10 * time.Second

// socketName is the attach socket's name in the JVM's /tmp.
func (i *Info) socketName() string { return ".java_pid" + strconv.Itoa(i.NSPID) }

// socketShown is the attach socket as messages name it: through the
// target's root, so JVMs in containers and with a private /tmp work.
func (i *Info) socketShown() string {
	return i.fs.Path(strconv.Itoa(i.PID), "root", "tmp", i.socketName())
}

// openSocket opens the attach socket as an O_PATH descriptor inside the
// JVM's root, following no link, and accepts it only when it is a socket
// owned by the JVM's user: anyone else's file there could be a trap. The
// caller connects to that descriptor (connectTarget), so the inode checked
// is the inode connected to.
func (i *Info) openSocket() (int, error) {
	tmp, err := openTargetRootDir(i.fs, i.PID, "tmp")
	if err != nil {
		return -1, err
	}
	defer tmp.Close()
	fd, st, err := tmp.lookup(i.socketName())
	if err != nil {
		return -1, err
	}
	if err := checkOwned(&st, i.socketShown(), unix.S_IFSOCK, "socket", i.UID); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// listenerRunning says whether the JVM's attach socket exists and passes
// openSocket's checks.
func (i *Info) listenerRunning() error {
	fd, err := i.openSocket()
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// DumpPossible says whether a thread dump can be asked for now: attach is
// enabled, and either the listener already runs (its socket exists, as
// with -XX:+StartAttachListener, even under -Xrs) or the JVM catches the
// SIGQUIT that starts it.
func (i *Info) DumpPossible() bool {
	if !i.AttachSupported {
		return false
	}
	if i.CatchesQuit || i.listenerRunning() == nil {
		return true
	}
	// A JVM found in its first milliseconds (serve --java discovers new
	// JVMs as they start) has not installed its SIGQUIT handler yet:
	// look again rather than give up on it for good.
	if ok, err := catchesQuit(i.fs, i.PID); err == nil && ok {
		i.CatchesQuit = true
		return true
	}
	return false
}

// ensureListener starts the JVM's attach listener if it is not running:
// only after checking that the JVM allows attach and catches SIGQUIT,
// since SIGQUIT kills a process that does not catch it. starting, when
// set, is called before it waits for the listener.
func (i *Info) ensureListener(ctx context.Context, starting func()) error {
	if err := i.listenerRunning(); err == nil {
		return nil
	}
	if starting != nil {
		starting()
	}
	if !i.AttachSupported {
		return ErrAttachDisabled
	}
	if err := i.checkRunning(); err != nil {
		return err // no SIGQUIT to a stopped process: see ErrTargetStopped
	}
	ok, err := catchesQuit(i.fs, i.PID)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoQuitHandler
	}
	triggers, err := i.createTriggers()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAttachFailed, err)
	}
	defer triggers.remove()
	if err := unix.Kill(i.PID, unix.SIGQUIT); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
		}
		return fmt.Errorf("%w: signal pid %d: %v", ErrAttachFailed, i.PID, err)
	}
	// The request's own deadline (ctx) may come first: the wait ends
	// then, and the deferred remove takes the triggers away.
	wait := listenerTimeout
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	deadline := time.Now().Add(wait)
	delay := 10 * time.Millisecond
	// One signal only. The JDK's client sends a second in case the first
	// came before the JVM could handle it; ctprof signals only a JVM whose
	// handler is installed (SigCgt), and HotSpot counts pending signals, so
	// the first is handled once the signal dispatcher runs. A JVM that
	// cannot reach a safepoint (or is stopped) runs it only later: by then
	// the trigger is gone, and each signal prints a thread dump into the
	// JVM's output, as kill -3 does.
	for {
		lastErr := i.listenerRunning()
		if lastErr == nil {
			return nil
		}
		if !i.fs.Exists(i.PID) {
			return fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
		}
		left := time.Until(deadline)
		if left <= 0 {
			if expired(ctx) {
				return context.DeadlineExceeded
			}
			if errors.Is(lastErr, errUnsafeFile) {
				return fmt.Errorf("%w: pid %d: %v", ErrAttachFailed, i.PID, lastErr)
			}
			return fmt.Errorf("%w: pid %d did not open %s within %s", ErrAttachFailed, i.PID, i.socketShown(), wait.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(delay, left)):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// trigger is one .attach_pid file ctprof created, to be removed.
type trigger struct {
	dir  *targetDir
	name string
	st   unix.Stat_t
}

type triggers struct {
	made     []trigger
	uid, gid int
}

// remove removes the triggers ctprof created, and only those.
func (t *triggers) remove() {
	for _, m := range t.made {
		_ = m.dir.removeIfSame(m.name, m.st, t.uid, t.gid)
		m.dir.Close()
	}
}

// createTriggers makes .attach_pid<nspid> available in the JVM's working
// directory and in its /tmp. HotSpot looks in the working directory first
// and in /tmp when it cannot stat the file there, and accepts a file owned
// by its own user: the JVM may be unable to write its working directory,
// so both are tried. Each is created as the JVM's user, exclusively and
// without following a link. A regular file of the JVM's user already
// there is used as it is and left in place; anything else (a link, a file
// of another user) makes ctprof skip that location.
func (i *Info) createTriggers() (*triggers, error) {
	name := ".attach_pid" + strconv.Itoa(i.NSPID)
	t := &triggers{uid: i.UID, gid: i.GID}
	usable := 0
	var reasons []string
	for _, open := range []func() (*targetDir, error){
		func() (*targetDir, error) { return openTargetCwd(i.fs, i.PID) },
		func() (*targetDir, error) { return openTargetRootDir(i.fs, i.PID, "tmp") },
	} {
		dir, err := open()
		if err != nil {
			if errors.Is(err, procfs.ErrProcessGone) || errors.Is(err, ErrNoOpenat2) {
				t.remove()
				return nil, err
			}
			reasons = append(reasons, err.Error())
			continue
		}
		st, err := dir.createExclusive(name, i.UID, i.GID)
		if err == nil {
			t.made = append(t.made, trigger{dir: dir, name: name, st: st})
			usable++
			continue
		}
		if errors.Is(err, unix.EEXIST) {
			err = i.existingTrigger(dir, name)
			if err == nil {
				usable++
			}
		}
		if err != nil {
			reasons = append(reasons, err.Error())
		}
		dir.Close()
	}
	if usable == 0 {
		return nil, fmt.Errorf("no usable place for the attach trigger file: %s", strings.Join(reasons, "; "))
	}
	return t, nil
}

// existingTrigger accepts a trigger file that is already there when it is
// a regular file of the JVM's user.
func (i *Info) existingTrigger(dir *targetDir, name string) error {
	fd, st, err := dir.lookup(name)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return checkOwned(&st, dir.shown+"/"+name, unix.S_IFREG, "regular file", i.UID)
}

// request sends one command and returns its output. The reply is read to
// EOF with a deadline that moves forward while data arrives.
func (i *Info) request(ctx context.Context, sent func(), version int, cmd string, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // not even a connection: the listener would serve it
	}
	sock, err := i.openSocket()
	if err != nil {
		if errors.Is(err, procfs.ErrProcessGone) || !i.fs.Exists(i.PID) {
			return nil, fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
		}
		return nil, fmt.Errorf("%w: %v", ErrAttachFailed, err)
	}
	// Connect to the inode just checked, through its descriptor: the path
	// is never looked up again.
	conn, err := dialAs(ctx, "/proc/self/fd/"+strconv.Itoa(sock), i.UID, i.GID)
	unix.Close(sock)
	if err != nil {
		if !i.fs.Exists(i.PID) {
			return nil, fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrAttachFailed, i.socketShown(), err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	var req bytes.Buffer
	field := func(s string) { req.WriteString(s); req.WriteByte(0) }
	switch version {
	case 2:
		size := len(cmd) + 1
		for _, a := range args {
			size += len(a) + 1
		}
		field("2")
		field(strconv.Itoa(size))
		field(cmd)
		for _, a := range args {
			field(a)
		}
	default:
		field("1")
		field(cmd)
		for k := 0; k < 3; k++ {
			a := ""
			if k < len(args) {
				a = args[k]
			}
			field(a)
		}
	}
	conn.SetWriteDeadline(ioDeadline(ctx, 5*time.Second))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		if expired(ctx) {
			return nil, context.DeadlineExceeded
		}
		return nil, i.ioError("send", err)
	}
	if sent != nil {
		sent()
	}
	// Read straight into a buffer sized from the last reply (or, for a
	// first dump, from the thread count: replyHint): a dump of thousands
	// of threads is megabytes. A reply that outgrows it goes on in
	// further chunks, assembled once at the exact size: a buffer that
	// doubles would copy the reply several times and keep up to twice its
	// size alive for as long as the dump is (the parsed dump points into it).
	hint := i.lastReply[cmd]
	cur := make([]byte, 0, max(hint+hint/4, 64<<10))
	// The JVM now works on the request, a dump for tens of milliseconds:
	// meanwhile the pages the reply is expected to fill are taken, each
	// a fault (2 µs here) the reply would otherwise wait for.
	touchPages(cur[:min(hint, cap(cur))])
	var full [][]byte // chunks filled before cur
	total := 0
	defer func() {
		if i.lastReply == nil {
			i.lastReply = map[string]int{}
		}
		i.lastReply[cmd] = total
	}()
	for {
		// A large dump of a loaded JVM may pause between chunks; 30 s
		// without a byte means the JVM is not answering. The request's
		// deadline (ctx) comes first.
		conn.SetReadDeadline(ioDeadline(ctx, 30*time.Second))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if len(cur) == cap(cur) {
			full = append(full, cur)
			// Chunks grow with the reply (few reads, few chunks), up to
			// 4 MB so that the last one's unused end stays small.
			cur = make([]byte, 0, min(max(total, 64<<10), 4<<20))
		}
		n, err := conn.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		total += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if expired(ctx) {
				return nil, context.DeadlineExceeded
			}
			return nil, i.ioError("read the reply", err)
		}
		if total > maxReply {
			return nil, fmt.Errorf("%w: the reply exceeds %d MB", ErrAttachFailed, maxReply>>20)
		}
	}
	b := cur
	if len(full) > 0 {
		b = make([]byte, 0, total)
		for _, c := range full {
			b = append(b, c...)
		}
		b = append(b, cur...)
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		nl = len(b)
	}
	status, err := strconv.Atoi(strings.TrimSpace(string(b[:nl])))
	if err != nil {
		return nil, fmt.Errorf("%w: the reply does not start with a status: %q", ErrAttachFailed, truncateBytes(b, 60))
	}
	body := b[min(nl+1, len(b)):]
	if status != 0 {
		return nil, &CommandError{Command: cmd, Status: status, Message: strings.TrimSpace(string(truncateBytes(body, 500)))}
	}
	return body, nil
}

// touchPages writes to every page of b, so that the kernel gives it memory
// now rather than at the first write that needs it.
func touchPages(b []byte) {
	for k := 0; k < len(b); k += 4096 {
		b[k] = 0
	}
}

// replyHint sets the expected size of cmd's reply when none came yet: a
// thread dump's first reply is about 2 KB per thread (1.7 KB with 30
// frames), which saves joining the chunks a reply larger than 64 KB grows
// into (a copy of the whole reply).
func (i *Info) replyHint(cmd string, threads int64) {
	if _, ok := i.lastReply[cmd]; ok || threads <= 0 {
		return
	}
	if i.lastReply == nil {
		i.lastReply = map[string]int{}
	}
	i.lastReply[cmd] = int(min(threads, 1<<20)) * 2048
}

// maxReply bounds a reply: a 100,000-thread dump is about 100 MB.
const maxReply = 1 << 30

func (i *Info) ioError(what string, err error) error {
	if !i.fs.Exists(i.PID) {
		return fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
	}
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%w: %s: the JVM closed the connection", ErrAttachFailed, what)
	}
	return fmt.Errorf("%w: %s: %v", ErrAttachFailed, what, err)
}

// CommandError is a command the JVM ran and refused.
type CommandError struct {
	Command string
	Status  int
	Message string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("the JVM refused %q (status %d): %s", e.Command, e.Status, e.Message)
}

// protocolVersion probes the attach protocol once: JDK 24+ answer
// "getversion" with 2 (and "getversion options" with the options they
// take); older JVMs refuse the command and speak version 1. A JVM whose
// hsperfdata says it is older is not asked: the probe is a round trip
// through its attach listener, milliseconds of a one-shot's wait.
func (i *Info) protocolVersion(ctx context.Context) int {
	if i.protocol != 0 {
		return i.protocol
	}
	if i.Version > 0 && i.Version < 24 {
		i.protocol = 1
		return 1
	}
	out, err := i.request(ctx, nil, 1, "getversion", "options")
	var refused *CommandError
	if err != nil && !errors.As(err, &refused) {
		return 1 // not answered: try again next time
	}
	i.protocol = 1
	if err == nil {
		f := strings.Fields(string(out))
		if len(f) > 0 && f[0] == "2" {
			i.protocol = 2
			for _, opt := range f[1:] {
				if opt == "streaming" {
					i.streaming = true
				}
			}
		}
	}
	return i.protocol
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
