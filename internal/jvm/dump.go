package jvm

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/procfs"
)

// DumpMode says how a thread dump is taken.
type DumpMode int

const (
	// ModeThreadPrint is the classic dump (jstack, Thread.print): native
	// thread ids, lock owners, the JVM's deadlock report; one safepoint.
	ModeThreadPrint DumpMode = iota
	// ModeDumpToFile is Thread.dump_to_file -format=json (JDK 21+):
	// virtual threads too, no global safepoint, but no native ids.
	ModeDumpToFile
)

// DumpOptions tune ThreadDump.
type DumpOptions struct {
	Mode DumpMode
	// Locks asks for "Locked ownable synchronizers" (-l): owners of
	// java.util.concurrent locks, at the cost of a heap scan while the JVM
	// is stopped.
	Locks bool
	// AllowJcmd lets ThreadDump fall back to the jcmd tool when attach
	// fails for a reason jcmd might not share.
	AllowJcmd bool
	// Sent, when set, is called once: as soon as the request is on its
	// way to the JVM, when it must first wait (for the JVM's attach
	// listener to start, for jcmd), or when ThreadDump returns. A caller
	// that works beside the dump starts that work then: started at once,
	// it would compete for the CPU with the goroutine about to send the
	// request, and on a busy machine the request could wait milliseconds.
	Sent func()

	// liveThreads is the JVM's thread count before the dump (0:
	// unknown), which sizes a first reply (Info.replyHint).
	liveThreads int64
}

// Dump methods, in DumpResult.Method.
const (
	MethodAttach     = "attach"
	MethodDumpToFile = "dump_to_file"
	MethodJcmd       = "jcmd"
)

// DumpResult is one thread dump and what it cost.
type DumpResult struct {
	// Text is the dump as the JVM printed it.
	Text   []byte
	Method string
	// Wall is the request's duration.
	Wall time.Duration
	// Pause is the safepoint time, synchronization included, the JVM
	// accumulated during the request (hsperfdata): the pause ctprof
	// caused. PauseKnown says whether it could be read.
	Pause      time.Duration
	PauseKnown bool
	// Protocol is the attach protocol version used (1, or 2 on JDK 24+
	// where the dump is asked for buffered: "streaming=0").
	Protocol int
	// Fallback says why jcmd was used instead of attach.
	Fallback string
	// Before are the JVM's counters read just before the request (nil
	// without hsperfdata): the counters a sample that includes the dump
	// starts from.
	Before *Counters
}

// ThreadDump takes a thread dump of the JVM.
func ThreadDump(ctx context.Context, i *Info, o DumpOptions) (*DumpResult, error) {
	if o.Sent == nil {
		o.Sent = func() {}
	}
	o.Sent = sync.OnceFunc(o.Sent)
	defer o.Sent()
	before, beforeErr := i.ReadPerfData()
	if beforeErr == nil {
		o.liveThreads = before.Counters().LiveThreads
	}
	start := time.Now()
	var res *DumpResult
	err := i.bounded(ctx, "a thread dump", func(ctx context.Context) (err error) {
		res, err = i.attachDump(ctx, o)
		return err
	})
	if err != nil && o.AllowJcmd && errors.Is(err, ErrAttachFailed) {
		reason := err.Error()
		o.Sent()
		var jerr error
		jerr = i.bounded(ctx, "jcmd Thread.print", func(ctx context.Context) (err error) {
			res, err = jcmdDump(ctx, i, o)
			return err
		})
		if jerr != nil {
			return nil, fmt.Errorf("%v; the jcmd fallback failed too: %w", err, jerr)
		}
		res.Fallback = reason
	} else if err != nil {
		return nil, err
	}
	res.Wall = time.Since(start)
	if beforeErr == nil {
		c := before.Counters()
		res.Before = &c
		if after, err := i.ReadPerfData(); err == nil {
			res.Pause, res.PauseKnown = PauseBetween(before.Counters(), after.Counters()), true
		}
	}
	return res, nil
}

func (i *Info) attachDump(ctx context.Context, o DumpOptions) (*DumpResult, error) {
	if err := i.checkRunning(); err != nil {
		return nil, err
	}
	if err := i.ensureListener(ctx, o.Sent); err != nil {
		return nil, err
	}
	v := i.protocolVersion(ctx)
	if o.Mode == ModeDumpToFile {
		return i.dumpToFile(ctx, v, o.Sent)
	}
	cmd := "threaddump"
	if v == 2 && i.streaming {
		// Buffered output: streamed output keeps the JVM at its safepoint
		// while the reply crosses the socket.
		cmd += " streaming=0"
	}
	opt := ""
	if o.Locks {
		opt = "-l"
	}
	i.replyHint(cmd, o.liveThreads)
	out, err := i.request(ctx, o.Sent, v, cmd, opt)
	if err != nil {
		return nil, err
	}
	return &DumpResult{Text: out, Method: MethodAttach, Protocol: v}, nil
}

// dumpToFile asks the JVM to write a JSON dump into its own /tmp, reads it
// through the safe opener (a regular file of the JVM's user, at most
// maxReply bytes) and removes it through the same directory descriptor.
func (i *Info) dumpToFile(ctx context.Context, v int, sent func()) (*DumpResult, error) {
	if i.Version > 0 && i.Version < 21 {
		return nil, fmt.Errorf("Thread.dump_to_file needs JDK 21 or later; pid %d runs JDK %d", i.PID, i.Version)
	}
	n, err := nonce()
	if err != nil {
		return nil, err
	}
	name := "ctprof-threads-" + strconv.Itoa(i.NSPID) + "-" + n + ".json"
	tmp, err := openTargetRootDir(i.fs, i.PID, "tmp")
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	cmd := "jcmd"
	if v == 2 && i.streaming {
		cmd += " streaming=0"
	}
	if _, err := i.request(ctx, sent, v, cmd, "Thread.dump_to_file -format=json /tmp/"+name); err != nil {
		return nil, err
	}
	b, st, err := tmp.readFile(name, i.UID, maxReply)
	if st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == i.UID {
		// The JVM's own file, even when too large to read.
		_ = tmp.removeIfSame(name, st, i.UID, i.GID)
	}
	if err != nil {
		if !i.fs.Exists(i.PID) {
			return nil, fmt.Errorf("pid %d: %w", i.PID, procfs.ErrProcessGone)
		}
		return nil, fmt.Errorf("read the JVM's dump file: %w", err)
	}
	return &DumpResult{Text: b, Method: MethodDumpToFile, Protocol: v}, nil
}

// nonce is 16 random hex digits for the name of a file or directory
// ctprof creates in the target's /tmp. It asks the kernel (getrandom)
// rather than crypto/rand: that package would hold back the early dump's
// initializer (see connectUnix).
func nonce() (string, error) {
	var b [8]byte
	for n := 0; n < len(b); {
		k, err := unix.Getrandom(b[n:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("random bytes for a file name (getrandom): %w", err)
		}
		n += k
	}
	return hex.EncodeToString(b[:]), nil
}

// Jcmd runs a diagnostic command (as `jcmd <pid> <command>` would) over the
// attach protocol and returns its output.
// The request has the JVM's deadline (Info.Timeout), and a stopped
// process is sent nothing (ErrTargetStopped).
func Jcmd(ctx context.Context, i *Info, command string) ([]byte, error) {
	return i.jcmd(ctx, i.timeout(), command)
}

// jcmd is Jcmd with deadline d.
func (i *Info) jcmd(ctx context.Context, d time.Duration, command string) (out []byte, err error) {
	name, _, _ := strings.Cut(command, " ")
	err = i.boundedFor(ctx, d, name, func(ctx context.Context) error {
		if err := i.checkRunning(); err != nil {
			return err
		}
		if err := i.ensureListener(ctx, nil); err != nil {
			return err
		}
		v := i.protocolVersion(ctx)
		cmd := "jcmd"
		if v == 2 && i.streaming {
			cmd += " streaming=0"
		}
		out, err = i.request(ctx, nil, v, cmd, command)
		return err
	})
	return out, err
}
