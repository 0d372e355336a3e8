package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"sort"
	"strings"
)

// A server whose clients connect over its Unix socket (MariaDB's
// mysqld.sock, PostgreSQL's .s.PGSQL.5432, Redis's unixsocket) has no TCP
// connection for them, yet they are its users. The kernel copies a
// listening Unix socket's address to every socket accept() returns, so
// the target's connected sockets named after a path it listens on are its
// inbound clients; the sockets it connected itself (to syslog, D-Bus, a
// database) carry no name, or another process's.

// maxUnixName bounds a socket name taken from the kernel: the size of
// sockaddr_un's sun_path (an abstract name's leading NUL becomes the '@').
// A name is the target's choice, arbitrary bytes: it is kept as a string,
// compared, escaped where shown, and never opened.
const maxUnixName = 108

// Socket types in /proc/net/unix and unix_diag (include/linux/net.h).
// A SOCK_SEQPACKET listener accepts clients as a stream one does.
const (
	sockStream    = 1
	sockSeqPacket = 5
)

// Columns of /proc/net/unix (net/unix/af_unix.c unix_seq_show): "St" is
// the socket's SS_* state, and a listener is an unconnected socket with
// __SO_ACCEPTCON (include/linux/net.h) in its flags.
const (
	ssUnconnected = 1
	ssConnected   = 3
	soAcceptCon   = 1 << 16
)

// unixEntry is one Unix socket of a network namespace. name is only valid
// during the callback that receives it (it points into a read buffer).
type unixEntry struct {
	inode     uint64
	sockType  int
	listening bool
	connected bool
	// name is as ss and /proc/net/unix show it: a path, '@' and the rest
	// of an abstract name, or empty for an unnamed socket; at most
	// maxUnixName bytes.
	name []byte
}

// unixClients is what Connections adds for the target's Unix sockets.
type unixClients struct {
	inbound   int
	byPath    map[string]int
	listening []string
}

// readUnixClients finds pid's inbound Unix clients among the sockets of
// its namespace: with sock_diag netlink when it shares ctprof's (sameNS),
// otherwise from its own /proc/<pid>/net/unix.
func (f FS) readUnixClients(pid int, inodes map[uint64]struct{}, sameNS bool) (unixClients, error) {
	var j unixJoin
	j.inodes = inodes
	if sameNS {
		err := unixSocketsNetlink(j.visit)
		if err == nil {
			return j.clients(), nil
		}
		if !errors.Is(err, errNetlinkUnavailable) {
			return unixClients{}, err
		}
		j = unixJoin{inodes: inodes} // from scratch below
	}
	path := f.pidPath(pid, "net", "unix")
	b, err := f.readFile(path)
	if err != nil {
		if errors.Is(err, ErrProcessGone) && f.Exists(pid) {
			return unixClients{}, nil // a kernel without Unix sockets
		}
		return unixClients{}, err
	}
	scanUnix(b, j.visit)
	return j.clients(), nil
}

// unixJoin keeps the target's own sockets (by fd/ inode) of a namespace's
// list. An inode listed twice is left out: /proc/net/unix prints a name's
// bytes raw, so a name holding a newline can forge a line for another
// process's socket (sock_diag has no such ambiguity).
type unixJoin struct {
	inodes map[uint64]struct{}
	mine   map[uint64]unixSocket
}

type unixSocket struct {
	listening, connected, twice bool
	name                        string
}

func (j *unixJoin) visit(e unixEntry) {
	if _, ok := j.inodes[e.inode]; !ok || (e.sockType != sockStream && e.sockType != sockSeqPacket) {
		return
	}
	if j.mine == nil {
		j.mine = map[uint64]unixSocket{}
	}
	if s, seen := j.mine[e.inode]; seen {
		s.twice = true
		j.mine[e.inode] = s
		return
	}
	j.mine[e.inode] = unixSocket{listening: e.listening, connected: e.connected, name: string(e.name)}
}

// clients counts the connected sockets named after a path the target
// listens on.
func (j *unixJoin) clients() unixClients {
	c := unixClients{byPath: map[string]int{}}
	listening := map[string]bool{}
	for _, s := range j.mine {
		if s.listening && !s.twice && s.name != "" && !isJVMAttachSocket(s.name) {
			listening[s.name] = true
		}
	}
	for _, s := range j.mine {
		if s.connected && !s.twice && listening[s.name] {
			c.inbound++
			c.byPath[s.name]++
		}
	}
	for p := range listening {
		c.listening = append(c.listening, p)
	}
	sort.Strings(c.listening)
	return c
}

// isJVMAttachSocket tells HotSpot's attach listener (/tmp/.java_pid<pid>,
// seen from the JVM's own mount namespace): its clients are diagnostic
// tools, ctprof's own thread dumps first (read while the connections are),
// not the JVM's users, so neither it nor they count.
func isJVMAttachSocket(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	pid, ok := strings.CutPrefix(base, ".java_pid")
	return ok && isDigits([]byte(pid))
}

// scanUnix walks /proc/net/unix lines:
// "Num: RefCount Protocol Flags Type St Inode [Path]", numbers in hex but
// the inode (decimal, padded to 5 columns), and the path after one space,
// to the end of the line (it may hold spaces). Lines that do not parse are
// skipped.
func scanUnix(b []byte, fn func(unixEntry)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for first := true; sc.Scan(); first = false {
		if first { // header
			continue
		}
		if e, ok := parseUnixLine(sc.Bytes()); ok {
			fn(e)
		}
	}
}

func parseUnixLine(line []byte) (unixEntry, bool) {
	var f [7][]byte
	rest := line
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		f[i], rest = rest[:end], rest[end:]
		if len(f[i]) == 0 || len(f[i]) > 20 {
			return unixEntry{}, false
		}
	}
	if f[0][len(f[0])-1] != ':' || !isDigits(f[6]) {
		return unixEntry{}, false
	}
	var name []byte
	if len(rest) > 1 { // ' ' then the name
		name = boundUnixName(rest[1:])
	}
	flags, st := hexu(f[3]), hexu(f[5])
	return unixEntry{
		inode:     atou(f[6]),
		sockType:  int(hexu(f[4])),
		listening: st == ssUnconnected && flags&soAcceptCon != 0,
		connected: st == ssConnected,
		name:      name,
	}, true
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// unixDiagName turns a UNIX_DIAG_NAME attribute (sun_path's bytes as bound)
// into the form /proc/net/unix and ss print: a path ends at its NUL; an
// abstract name starts with a NUL, shown as '@', as are the NULs within it.
// It rewrites raw in place (the netlink receive buffer: no allocation per
// socket of the namespace).
func unixDiagName(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	if raw[0] != 0 {
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		return boundUnixName(raw)
	}
	raw = boundUnixName(raw)
	for i, c := range raw {
		if c == 0 {
			raw[i] = '@'
		}
	}
	return raw
}

func boundUnixName(b []byte) []byte {
	if len(b) > maxUnixName {
		return b[:maxUnixName]
	}
	return b
}
