package procfs

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// What golang.org/x/sys/unix lacks of linux/unix_diag.h.
const (
	unixDiagReqLen   = 24  // struct unix_diag_req
	unixDiagMsgLen   = 16  // struct unix_diag_msg
	udiagShowName    = 0x1 // UDIAG_SHOW_NAME
	unixDiagAttrName = 0   // UNIX_DIAG_NAME, the first attribute of enum unix_diag
)

// unixSocketsNetlink lists the Unix sockets in state LISTEN or ESTABLISHED
// of ctprof's network namespace, each with its name. The name is all the
// join needs: the peer (UDIAG_SHOW_PEER) would name the other socket's
// inode, not its process, and an accepted socket keeps its peer until it
// is closed, so it tells nothing the state does not.
func unixSocketsNetlink(fn func(unixEntry)) error {
	fd, err := openDiagSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// struct unix_diag_req: family, protocol, pad, states, ino, show,
	// cookie[2].
	var req [unixDiagReqLen]byte
	req[0] = unix.AF_UNIX
	ne := binary.NativeEndian
	ne.PutUint32(req[4:], 1<<tcpEstablished|1<<tcpListen)
	ne.PutUint32(req[12:], udiagShowName)
	if err := sendDiagRequest(fd, 1, req[:]); err != nil {
		return fmt.Errorf("%w: %v", errNetlinkUnavailable, err)
	}
	buf := diagBuffers.Get().(*[]byte)
	defer diagBuffers.Put(buf)
	return readDiagReplies(fd, *buf, func(m []byte) {
		if e, ok := parseUnixDiagMsg(m); ok {
			fn(e)
		}
	})
}

// parseUnixDiagMsg reads a struct unix_diag_msg (family, type, state, pad,
// inode, cookie[2]) and its attributes (struct nlattr: length, type,
// payload padded to 4 bytes), of which only the name is asked for.
func parseUnixDiagMsg(m []byte) (unixEntry, bool) {
	if len(m) < unixDiagMsgLen || m[0] != unix.AF_UNIX {
		return unixEntry{}, false
	}
	ne := binary.NativeEndian
	e := unixEntry{
		sockType:  int(m[1]),
		listening: m[2] == tcpListen,
		connected: m[2] == tcpEstablished,
		inode:     uint64(ne.Uint32(m[4:])),
	}
	for a := m[unixDiagMsgLen:]; len(a) >= unix.SizeofNlAttr; {
		l := int(ne.Uint16(a[0:]))
		if l < unix.SizeofNlAttr || l > len(a) {
			break
		}
		if ne.Uint16(a[2:])&nlaTypeMask == unixDiagAttrName {
			e.name = unixDiagName(a[unix.SizeofNlAttr:l])
		}
		a = a[min((l+unix.NLA_ALIGNTO-1)&^(unix.NLA_ALIGNTO-1), len(a)):]
	}
	return e, true
}
