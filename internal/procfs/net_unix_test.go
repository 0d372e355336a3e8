package procfs

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctprof/ctprof/internal/testnative"
)

// unixFixtureTree builds a /proc tree holding one process (pid 4242)
// whose fd/ has the given socket inodes and whose net/unix is
// testdata/net_unix (real lines of this machine's /proc/net/unix: a
// MariaDB server on /tmp/mdb1/sock with its clients, and sockets ss and
// python made: a path with a space, a seqpacket listener and its accepted
// socket, a datagram pair, an abstract listener) or unixText when given.
func unixFixtureTree(t *testing.T, unixText string, inodes ...int) FS {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "4242")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "net"), 0o755))
	for i, ino := range inodes {
		require.NoError(t, os.Symlink(fmt.Sprintf("socket:[%d]", ino), filepath.Join(dir, "fd", strconv.Itoa(i+3))))
	}
	const tcpHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for _, f := range []string{"tcp", "tcp6"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "net", f), []byte(tcpHeader), 0o644))
	}
	if unixText == "" {
		b, err := os.ReadFile("testdata/net_unix")
		require.NoError(t, err)
		unixText = string(b)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "net", "unix"), []byte(unixText), 0o644))
	return NewFS(root)
}

func TestUnixClientsFromProcNetUnix(t *testing.T) {
	forged := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"000000000e327e72: 00000002 00000000 00010000 0001 01 10784 /tmp/mdb1/sock\n" +
		"0000000028a240ff: 00000003 00000000 00000000 0001 03 11664 /tmp/mdb1/sock\n" +
		// A name holding a newline prints a second line for 10784.
		"00000000b2cf2b29: 00000002 00000000 00010000 0001 01 999 /tmp/x\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 10784 /forged\n"
	for _, tc := range []struct {
		name      string
		text      string
		inodes    []int
		inbound   int
		byPath    map[string]int
		listening []string
	}{
		{
			name: "server with clients, seqpacket, abstract and a path with a space",
			// 11637 is a client of the same path held by another
			// process; 10839 a socket the server connected itself;
			// 24638 a datagram socket.
			inodes:    []int{10784, 11664, 11662, 10824, 10839, 23813, 23832, 23834, 24638, 24640},
			inbound:   4,
			byPath:    map[string]int{"/tmp/mdb1/sock": 3, "/tmp/ux/seq.sock": 1},
			listening: []string{"/tmp/mdb1/sock", "/tmp/ux/seq.sock", "/tmp/ux/with space.sock", "@ctprof-fixture"},
		},
		{
			name:    "accepted sockets without the listener are not inbound",
			inodes:  []int{11664, 11662},
			inbound: 0,
			byPath:  map[string]int{},
		},
		{
			name:    "the other end of a connection (a client) has no name",
			inodes:  []int{10839, 638},
			inbound: 0,
			byPath:  map[string]int{},
		},
		{
			name:    "a forged line makes its inode ambiguous: left out",
			text:    forged,
			inodes:  []int{10784, 11664},
			inbound: 0,
			byPath:  map[string]int{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := unixFixtureTree(t, tc.text, tc.inodes...)
			c, err := fs.Connections(4242, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.inbound, c.UnixEstablished)
			assert.Equal(t, tc.inbound, c.Established, "established counts the Unix clients")
			assert.Equal(t, tc.inbound, c.Inbound)
			assert.Equal(t, tc.byPath, c.ByPath)
			assert.Equal(t, tc.listening, c.ListeningPaths)
			assert.Zero(t, c.Peers)

			onPort, err := fs.Connections(4242, 3306)
			require.NoError(t, err)
			assert.Equal(t, tc.inbound, onPort.Established, "a TCP port does not filter the Unix clients")
		})
	}
}

func TestScanUnix(t *testing.T) {
	in := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"000000001d7b1596: 00000003 00000000 00000000 0001 03   638\n" +
		"00000000134aa7bc: 00000002 00000000 00010000 0001 01 23813 /tmp/ux/with space.sock\n" +
		"000000003b309531: 00000002 00000000 00010000 0001 01 24640 @ctprof@fixture\n" +
		"0000000028a240ff: 00000003 00000000 00000000 0001 03 11664 /" + strings.Repeat("a", 200) + "\n" +
		"short: 1 2\n" +
		"0000000028a240ff 00000003 00000000 00000000 0001 03 11664 /no-colon\n" +
		"0000000028a240ff: 00000003 00000000 00000000 0001 03 1x664 /bad-inode\n"
	type entry struct {
		inode               uint64
		sockType            int
		listening, connectd bool
		name                string
	}
	var got []entry
	scanUnix([]byte(in), func(e unixEntry) {
		got = append(got, entry{e.inode, e.sockType, e.listening, e.connected, string(e.name)})
	})
	assert.Equal(t, []entry{
		{638, sockStream, false, true, ""},
		{23813, sockStream, true, false, "/tmp/ux/with space.sock"},
		{24640, sockStream, true, false, "@ctprof@fixture"},
		{11664, sockStream, false, true, "/" + strings.Repeat("a", maxUnixName-1)},
	}, got)
}

func TestIsJVMAttachSocket(t *testing.T) {
	for name, want := range map[string]bool{
		"/tmp/.java_pid4242":       true,
		".java_pid1":               true,
		"/tmp/.java_pid":           false,
		"/tmp/.java_pid42.sock":    false,
		"/run/mysqld/mysqld.sock":  false,
		"@.java_pid42":             false,
		"/tmp/x/.java_pid42/inner": false,
	} {
		assert.Equal(t, want, isJVMAttachSocket(name), name)
	}
}

func TestUnixDiagName(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{"", ""},
		{"/run/mysqld/mysqld.sock\x00", "/run/mysqld/mysqld.sock"},
		{"/run/x.sock", "/run/x.sock"},
		{"\x00ctprof\x00test", "@ctprof@test"},
		{"\x00", "@"},
		{"/" + strings.Repeat("p", 300), "/" + strings.Repeat("p", maxUnixName-1)},
		{"\x00" + strings.Repeat("a", 300), "@" + strings.Repeat("a", maxUnixName-1)},
	} {
		assert.Equal(t, tc.want, string(unixDiagName([]byte(tc.raw))), "%q", tc.raw)
	}
}

// unixServer listens on path (or an abstract name, "@..."), accepts
// every client and keeps it open until the test ends.
func unixServer(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	done := make(chan []net.Conn)
	go func() {
		var conns []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				done <- conns
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range <-done {
			c.Close()
		}
	})
}

func dialUnix(t *testing.T, path string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", path)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
	}
}

// pollUnixClients waits until fs counts want Unix clients of pid.
func pollUnixClients(t *testing.T, fs FS, pid, want int) *Connections {
	t.Helper()
	var c *Connections
	require.NoError(t, testnative.PollUntil(20*time.Second, func() error {
		var err error
		c, err = fs.Connections(pid, 0)
		if err != nil {
			return err
		}
		if c.UnixEstablished != want {
			return fmt.Errorf("%d Unix clients, want %d", c.UnixEstablished, want)
		}
		return nil
	}))
	return c
}

// The test process is the target and holds both ends: only the accepted
// ends carry the listener's name, so each client counts once. The same
// through sock_diag and through /proc/<pid>/net/unix. A socket named as a
// JVM's attach listener is not a service: neither it nor its clients
// count.
func TestUnixClientsOfThisProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.sock")
	abstract := fmt.Sprintf("@ctprof-test-%d", os.Getpid())
	attach := filepath.Join(dir, fmt.Sprintf(".java_pid%d", os.Getpid()))
	unixServer(t, path)
	unixServer(t, abstract)
	unixServer(t, attach)
	dialUnix(t, path, 4)
	dialUnix(t, abstract, 2)
	dialUnix(t, attach, 1)

	fs := NewFS("/proc")
	require.True(t, fs.sameNetNS(os.Getpid()))
	c := pollUnixClients(t, fs, os.Getpid(), 6)
	assert.Equal(t, map[string]int{path: 4, abstract: 2}, c.ByPath)
	assert.Equal(t, []string{path, abstract}, c.ListeningPaths)
	assert.Equal(t, 6, c.Inbound)
	assert.Equal(t, 6, c.Established)

	// Those numbers came from sock_diag, not from a silent fallback.
	listeners := 0
	require.NoError(t, unixSocketsNetlink(func(e unixEntry) {
		if e.listening && (string(e.name) == path || string(e.name) == abstract) {
			listeners++
		}
	}))
	assert.Equal(t, 2, listeners)

	// A root other than "/proc" never uses netlink: the /proc path.
	viaProc, err := NewFS("/proc/").Connections(os.Getpid(), 0)
	require.NoError(t, err)
	assert.Equal(t, c.UnixEstablished, viaProc.UnixEstablished)
	assert.Equal(t, c.ByPath, viaProc.ByPath)
	assert.Equal(t, c.ListeningPaths, viaProc.ListeningPaths)
}

// A sandbox may forbid netlink sockets (seccomp, an LSM): Connections then
// reads /proc/<pid>/net/{tcp,tcp6,unix} and counts the same.
func TestConnectionsFallBackWhenSockDiagIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.sock")
	unixServer(t, path)
	dialUnix(t, path, 3)
	fs := NewFS("/proc")
	want := pollUnixClients(t, fs, os.Getpid(), 3)

	open := openDiagSocket
	t.Cleanup(func() { openDiagSocket = open })
	opened := 0
	openDiagSocket = func() (int, error) {
		opened++
		return -1, fmt.Errorf("%w: %v", errNetlinkUnavailable, unix.EPERM)
	}
	got, err := fs.Connections(os.Getpid(), 0)
	require.NoError(t, err)
	assert.Equal(t, 2, opened, "both TCP and Unix asked netlink first")
	assert.Equal(t, want, got)
}

// A kernel's refusal in a netlink reply (no unix_diag module, EPERM) is
// "unavailable", so the caller falls back; a reply that does not parse is
// an error.
func TestReadDiagRepliesErrors(t *testing.T) {
	refusal := func(e syscall.Errno) []byte {
		b := make([]byte, 2*unix.NLMSG_HDRLEN+4) // header, error code, the request's header
		binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
		binary.NativeEndian.PutUint16(b[4:], unix.NLMSG_ERROR)
		binary.NativeEndian.PutUint32(b[unix.NLMSG_HDRLEN:], uint32(-int32(e)))
		return b
	}
	truncated := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(truncated[0:], 200) // claims more than was sent
	binary.NativeEndian.PutUint16(truncated[4:], sockDiagByFamily)
	for _, tc := range []struct {
		name        string
		reply       []byte
		unavailable bool
	}{
		{"ENOENT: no unix_diag in the kernel", refusal(unix.ENOENT), true},
		{"EPERM", refusal(unix.EPERM), true},
		{"length beyond the reply", truncated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			_, err = unix.Write(fds[1], tc.reply)
			require.NoError(t, err)
			err = readDiagReplies(fds[0], make([]byte, 4096), func([]byte) { t.Error("no message expected") })
			require.Error(t, err)
			assert.Equal(t, tc.unavailable, errors.Is(err, errNetlinkUnavailable), "%v", err)
		})
	}
}

// unixDiagMsg is a unix_diag reply message as the kernel lays it out: a
// unix_diag_msg, then the name attribute (raw sun_path bytes) when given.
func unixDiagMsg(sockType, state byte, inode uint32, name string) []byte {
	m := make([]byte, unixDiagMsgLen)
	m[0], m[1], m[2] = unix.AF_UNIX, sockType, state
	binary.NativeEndian.PutUint32(m[4:], inode)
	if name != "" {
		a := make([]byte, unix.SizeofNlAttr+len(name), nlmAlign(unix.SizeofNlAttr+len(name)))
		binary.NativeEndian.PutUint16(a[0:], uint16(len(a)))
		binary.NativeEndian.PutUint16(a[2:], unixDiagAttrName)
		copy(a[unix.SizeofNlAttr:], name)
		m = append(m, a[:cap(a)]...)
	}
	return m
}

func TestParseUnixDiagMsg(t *testing.T) {
	e, ok := parseUnixDiagMsg(unixDiagMsg(sockStream, tcpListen, 10784, "/tmp/mdb1/sock\x00"))
	require.True(t, ok)
	assert.Equal(t, unixEntry{inode: 10784, sockType: sockStream, listening: true, name: []byte("/tmp/mdb1/sock")}, e)
	e, ok = parseUnixDiagMsg(unixDiagMsg(sockSeqPacket, tcpEstablished, 7, "\x00abs\x00x"))
	require.True(t, ok)
	assert.Equal(t, unixEntry{inode: 7, sockType: sockSeqPacket, connected: true, name: []byte("@abs@x")}, e)
	e, ok = parseUnixDiagMsg(unixDiagMsg(sockStream, tcpEstablished, 8, ""))
	require.True(t, ok)
	assert.Empty(t, e.name)
	_, ok = parseUnixDiagMsg(unixDiagMsg(sockStream, tcpEstablished, 8, "")[:unixDiagMsgLen-1])
	assert.False(t, ok)
}

// TestUnixServerChild is the server of TestUnixClientsOfAnotherProcess,
// run in a child of the test binary; it does nothing in a normal run.
func TestUnixServerChild(t *testing.T) {
	path := os.Getenv("CTPROF_TEST_UNIX_SERVER")
	if path == "" {
		return
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	go func() {
		var conns []net.Conn // kept open until the parent closes stdin
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	fmt.Println("READY")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// A separate process serves on a Unix socket; this process connects. The
// server counts the clients, this process (a client, whose sockets have
// no name) counts none.
func TestUnixClientsOfAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "child.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnixServerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CTPROF_TEST_UNIX_SERVER="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "READY\n", line)

	const clients = 5
	dialUnix(t, path, clients)
	fs := NewFS("/proc")
	c := pollUnixClients(t, fs, pid, clients)
	assert.Equal(t, map[string]int{path: clients}, c.ByPath)
	assert.Equal(t, []string{path}, c.ListeningPaths)
	assert.Equal(t, clients, c.Established, "the child has no TCP connection")
	assert.Equal(t, clients, c.Inbound)

	viaProc, err := NewFS("/proc/").Connections(pid, 0)
	require.NoError(t, err)
	assert.Equal(t, c, viaProc)

	self, err := fs.Connections(os.Getpid(), 0)
	require.NoError(t, err)
	assert.Zero(t, self.UnixEstablished, "a client's sockets are not named after a path it listens on")
	assert.Empty(t, self.ListeningPaths)
}

// The parsers of /proc/net/unix and of unix_diag replies read what a
// target names its sockets: arbitrary bytes. Neither may panic, and names
// stay within sun_path's size.
func FuzzUnixSockets(f *testing.F) {
	b, err := os.ReadFile("testdata/net_unix")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("Num\n0000000028a240ff: 00000003 00000000 00000000 0001 03 11664 /tmp/mdb1/sock\n"))
	f.Add(unixDiagMsg(sockStream, tcpListen, 10784, "/tmp/mdb1/sock\x00"))
	f.Add(unixDiagMsg(sockStream, tcpEstablished, 10784, "\x00abstract"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(e unixEntry) {
			if len(e.name) > maxUnixName {
				t.Fatalf("name of %d bytes", len(e.name))
			}
			if e.listening && e.connected {
				t.Fatalf("listening and connected: %+v", e)
			}
		}
		scanUnix(b, check)
		if e, ok := parseUnixDiagMsg(append([]byte(nil), b...)); ok {
			check(e)
		}
	})
}
