package procfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Reading /proc/<pid>/net/tcp makes the kernel walk its whole established
// hash table (262,144 buckets on a small VM: milliseconds per read, every
// tick). The sock_diag netlink interface returns the same sockets filtered
// by state in one pass, several times faster, but only for ctprof's own
// network namespace; a target in another namespace (a container) is read
// through its /proc view instead.

// sameNetNS reports whether pid lives in ctprof's network namespace.
func (f FS) sameNetNS(pid int) bool {
	if f.root != "/proc" {
		return false // a fixture tree: netlink would see this machine
	}
	self, err1 := os.Readlink("/proc/self/ns/net")
	target, err2 := os.Readlink(f.pidPath(pid, "ns", "net"))
	return err1 == nil && err2 == nil && self == target
}

// Constants of linux/sock_diag.h and linux/inet_diag.h.
const (
	sockDiagByFamily = unix.SOCK_DIAG_BY_FAMILY
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
)

var errNetlinkUnavailable = errors.New("sock_diag unavailable")

// openDiagSocket opens a NETLINK_SOCK_DIAG socket whose reads time out. A
// variable so a test can make it fail as a sandbox that forbids netlink
// would.
var openDiagSocket = func() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("%w: %v", errNetlinkUnavailable, err)
	}
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return fd, nil
}

// tcpSocketsNetlink lists the TCP sockets in state LISTEN or ESTABLISHED
// of ctprof's network namespace, IPv4 and IPv6.
func tcpSocketsNetlink(fn func(tcpEntry)) error {
	fd, err := openDiagSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := diagBuffers.Get().(*[]byte)
	defer diagBuffers.Put(buf)
	onMsg := func(m []byte) {
		if len(m) < inetDiagMsgLen {
			return
		}
		// inet_diag_msg: family, state, timer, retrans, then
		// inet_diag_sockid (sport, dport big-endian, src[16], dst[16],
		// if, cookie[2]), expires, rqueue, wqueue, uid, inode.
		fn(tcpEntry{
			state:      int(m[1]),
			localPort:  int(binary.BigEndian.Uint16(m[4:])),
			remoteAddr: append([]byte(nil), m[24:40]...),
			inode:      uint64(binary.NativeEndian.Uint32(m[68:])),
		})
	}
	for seq, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		var req [inetDiagReqLen]byte
		req[0] = family
		req[1] = unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[4:], 1<<tcpEstablished|1<<tcpListen) // states
		if err := sendDiagRequest(fd, uint32(seq+1), req[:]); err != nil {
			return fmt.Errorf("%w: %v", errNetlinkUnavailable, err)
		}
		if err := readDiagReplies(fd, *buf, onMsg); err != nil {
			return err
		}
	}
	return nil
}

// diagBuffers keeps the 64 KB receive buffers between reads (every tick,
// of every target): a buffer handed to readDiagReplies's callback escapes
// to the heap.
var diagBuffers = sync.Pool{New: func() any {
	b := make([]byte, 64<<10)
	return &b
}}

// sendDiagRequest sends one SOCK_DIAG_BY_FAMILY dump request whose body
// (inet_diag_req_v2, unix_diag_req) is req.
func sendDiagRequest(fd int, seq uint32, req []byte) error {
	msg := make([]byte, unix.NLMSG_HDRLEN+len(req))
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], sockDiagByFamily)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(msg[8:], seq)
	copy(msg[unix.NLMSG_HDRLEN:], req)
	return unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// readDiagReplies hands each reply's message (what follows the netlink
// header) to fn until NLMSG_DONE. fn's slice is only valid during the call.
func readDiagReplies(fd int, buf []byte, fn func(m []byte)) error {
	ne := binary.NativeEndian
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("sock_diag: %w", err)
		}
		b := buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(ne.Uint32(b[0:]))
			typ := ne.Uint16(b[4:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return fmt.Errorf("sock_diag: malformed reply")
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if l >= unix.NLMSG_HDRLEN+4 {
					if code := int32(ne.Uint32(b[unix.NLMSG_HDRLEN:])); code != 0 {
						return fmt.Errorf("%w: %v", errNetlinkUnavailable, unix.Errno(-code))
					}
				}
				return nil
			case sockDiagByFamily:
				fn(b[unix.NLMSG_HDRLEN:l])
			}
			b = b[min(nlmAlign(l), len(b)):]
		}
	}
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
