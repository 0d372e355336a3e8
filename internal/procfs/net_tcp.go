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

// Connections are a process's TCP sockets at one instant.
type Connections struct {
	// Established counts established connections (only those whose local
	// port is the chosen one, when a port was given).
	Established int
	// Inbound counts the established connections accepted on a port the
	// process listens on: its connected clients, as opposed to
	// connections it opened itself (to a database, say).
	Inbound int
	// ByLocalPort counts established connections by local port.
	ByLocalPort map[int]int
	// Listening are the ports the process listens on, ascending.
	Listening []int
	// Peers is the number of distinct remote addresses.
	Peers int
}

// TCP states in /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0a
)

// Connections reads pid's TCP sockets: its socket inodes from fd/, joined
// with the sockets of its network namespace — from sock_diag netlink when
// it shares ctprof's namespace, otherwise from its own net/tcp and
// net/tcp6, so a process in a container is seen from its side. port > 0 counts only connections whose
// local port is port (the clients of one server port). Reading fd/ needs
// the target's user or root: ErrPermission otherwise.
func (f FS) Connections(pid, port int) (*Connections, error) {
	inodes, err := f.socketInodes(pid)
	if err != nil {
		return nil, err
	}
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
	if f.sameNetNS(pid) {
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
