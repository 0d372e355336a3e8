package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
)

// Connections are a process's TCP sockets, and the clients on its Unix
// sockets, at one instant.
type Connections struct {
	// Established counts established TCP connections (only those whose
	// local port is the chosen one, when a port was given) plus the
	// inbound Unix clients (UnixEstablished), which a port does not
	// filter: both are connected users to relate the thread count to. The
	// Unix sockets the process connected itself (to syslog, D-Bus, a
	// database) are not counted, as they are not its users.
	Established int
	// Inbound counts the established connections accepted on a port the
	// process listens on: its connected clients, as opposed to
	// connections it opened itself (to a database, say). It includes the
	// inbound Unix clients.
	Inbound int
	// ByLocalPort counts established TCP connections by local port.
	ByLocalPort map[int]int
	// Listening are the TCP ports the process listens on, ascending.
	Listening []int
	// Peers is the number of distinct remote TCP addresses (a Unix client
	// has none).
	Peers int
	// UnixEstablished counts the inbound Unix clients: the process's
	// connected stream (or seqpacket) Unix sockets named after a path it
	// listens on, which is what accept() gives them. A client that hung
	// up counts until the process closes its end: a Unix socket has no
	// CLOSE_WAIT state to tell it apart. A JVM's attach listener
	// (.java_pid<pid>) and its clients (ctprof's own thread dumps) are
	// left out.
	UnixEstablished int
	// ByPath counts the inbound Unix clients by listening path (an
	// abstract name as '@' and the rest, as ss shows it). Paths are the
	// target's choice: arbitrary bytes, at most 108 of them.
	ByPath map[string]int
	// ListeningPaths are the Unix socket paths the process listens on,
	// sorted.
	ListeningPaths []string
}

// TCP states in /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0a
)

// Connections reads pid's TCP and Unix sockets: its socket inodes from
// fd/, joined with the sockets of its network namespace — from sock_diag
// netlink when it shares ctprof's namespace, otherwise from its own
// net/tcp, net/tcp6 and net/unix, so a process in a container is seen
// from its side. port > 0 counts only TCP connections whose local port is
// port (the clients of one server port); the inbound Unix clients count
// whatever the port, since they are clients too. Reading fd/ needs the
// target's user or root: ErrPermission otherwise.
func (f FS) Connections(pid, port int) (*Connections, error) {
	inodes, err := f.socketInodes(pid)
	if err != nil {
		return nil, err
	}
	return f.connectionsOf(pid, port, inodes)
}

// TreeConnections counts the sockets of a tree of processes as one
// server's: pids[0] is its root, whose namespace the sockets are looked up
// in. A connection is inbound when its local port is one that any process
// of the tree listens on (PostgreSQL's postmaster listens, and each
// backend it forks holds one client's socket); a socket that several
// processes share counts once. Processes that exit meanwhile, or whose
// fd/ is unreadable, are left out; the root's errors are returned.
func (f FS) TreeConnections(pids []int, port int) (*Connections, error) {
	if len(pids) == 0 {
		return nil, ErrProcessGone
	}
	inodes, err := f.socketInodes(pids[0])
	if err != nil {
		return nil, err
	}
	for _, p := range pids[1:] {
		more, err := f.socketInodes(p)
		if err != nil {
			continue
		}
		for ino := range more {
			inodes[ino] = struct{}{}
		}
	}
	return f.connectionsOf(pids[0], port, inodes)
}

// connectionsOf counts the sockets inodes names, looked up in pid's
// network namespace.
func (f FS) connectionsOf(pid, port int, inodes map[uint64]struct{}) (*Connections, error) {
	sameNS := f.sameNetNS(pid)
	c, err := f.tcpConnections(pid, port, inodes, sameNS)
	if err != nil {
		return nil, err
	}
	u, err := f.readUnixClients(pid, inodes, sameNS)
	if err != nil {
		return nil, err
	}
	c.UnixEstablished = u.inbound
	c.ByPath = u.byPath
	c.ListeningPaths = u.listening
	c.Established += u.inbound
	c.Inbound += u.inbound
	return c, nil
}

// tcpConnections counts pid's TCP sockets among those of its namespace.
func (f FS) tcpConnections(pid, port int, inodes map[uint64]struct{}, sameNS bool) (*Connections, error) {
	c := &Connections{ByLocalPort: map[int]int{}}
	peers := map[string]struct{}{}
	type conn struct{ local int }
	var est []conn
	listening := map[int]bool{}
	visit := func(e tcpEntry) {
		if _, ok := inodes[e.inode]; !ok {
			return
		}
		switch e.state {
		case tcpListen:
			listening[e.localPort] = true
		case tcpEstablished:
			if port > 0 && e.localPort != port {
				return
			}
			est = append(est, conn{e.localPort})
			peers[string(e.remoteAddr)] = struct{}{}
		}
	}
	netlinkDone := false
	if sameNS {
		switch err := tcpSocketsNetlink(visit); {
		case err == nil:
			netlinkDone = true
		case errors.Is(err, errNetlinkUnavailable):
			// Fall back to /proc below, from scratch.
			est, peers, listening = est[:0], map[string]struct{}{}, map[int]bool{}
		default:
			return nil, err
		}
	}
	for _, file := range []string{"tcp", "tcp6"} {
		if netlinkDone {
			break
		}
		path := f.pidPath(pid, "net", file)
		b, err := f.readFile(path)
		if err != nil {
			if errors.Is(err, ErrProcessGone) && file == "tcp6" && f.Exists(pid) {
				continue // IPv6 disabled
			}
			return nil, err
		}
		if err := scanTCP(b, visit); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, e := range est {
		c.Established++
		c.ByLocalPort[e.local]++
		if listening[e.local] {
			c.Inbound++
		}
	}
	for p := range listening {
		c.Listening = append(c.Listening, p)
	}
	sort.Ints(c.Listening)
	c.Peers = len(peers)
	return c, nil
}

// socketInodes lists the inodes of pid's sockets from fd/ links
// ("socket:[12345]").
func (f FS) socketInodes(pid int) (map[uint64]struct{}, error) {
	dir := f.pidPath(pid, "fd")
	d, err := os.Open(dir)
	if err != nil {
		return nil, classify(dir, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, classify(dir, err)
	}
	out := make(map[uint64]struct{}, len(names))
	buf := make([]byte, 0, len(dir)+16)
	for _, n := range names {
		buf = append(append(append(buf[:0], dir...), '/'), n...)
		target, err := os.Readlink(string(buf))
		if err != nil {
			continue // closed meanwhile
		}
		const prefix = "socket:["
		if len(target) > len(prefix)+1 && target[:len(prefix)] == prefix && target[len(target)-1] == ']' {
			if ino, err := strconv.ParseUint(target[len(prefix):len(target)-1], 10, 64); err == nil {
				out[ino] = struct{}{}
			}
		}
	}
	return out, nil
}

type tcpEntry struct {
	localPort  int
	remoteAddr []byte // hex, as printed; only compared
	state      int
	inode      uint64
}

// scanTCP walks /proc/net/tcp{,6} lines:
// "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...".
func scanTCP(b []byte, fn func(tcpEntry)) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 10 {
			continue
		}
		local, remote := fields[1], fields[2]
		lc := bytes.LastIndexByte(local, ':')
		rc := bytes.LastIndexByte(remote, ':')
		if lc < 0 || rc < 0 {
			continue
		}
		fn(tcpEntry{
			localPort:  int(hexu(local[lc+1:])),
			remoteAddr: remote[:rc],
			state:      int(hexu(fields[3])),
			inode:      atou(fields[9]),
		})
	}
	return sc.Err()
}
