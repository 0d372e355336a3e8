//go:build linux && amd64

package testservers

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/procfs"
)

// memcached (Debian's, stripped, no debug symbols of its own), 8 worker
// threads on the machine's CPUs, under a load that makes its workers queue
// on its locks. 44 connections set and get random keys of 50,000 (each set
// relinks an item: the item's lock, then its slab class's LRU lock) while 4
// others run "stats cachedump" on the same slab class, which walks the
// class's LRU holding its lock: the setters queue on that LRU lock, and the
// setters that hold an item lock while they wait for it make the next ones
// queue on the item locks (a convoy of two levels). A plain set/get load on
// a few hot keys is not enough, even with 8 workers on 2 CPUs: its waits on
// the item locks last microseconds to a few milliseconds, a sample every
// 20 ms sees one in 1-2 % of samples, and the waiter has mostly woken
// before its stack is read (no wait site).

// MemcachedKeys is how many keys the load sets and gets.
const MemcachedKeys = 50000

// StartMemcached starts memcached with 8 workers under the LRU-contention
// load and returns it with its labels.
func StartMemcached(t testing.TB) *Server {
	t.Helper()
	mc := StartMemcachedUnderLoad(t, 8)
	return &Server{
		Name:  "memcached",
		PID:   mc.PID,
		Lang:  "C",
		Shape: "event loop per worker thread (libevent), thread pool",
		Label: memcachedLabel(mc.PID),
		// The waiters in memcached's own code right above
		// pthread_mutex_lock: a worker's set relinking its item into the
		// slab class's LRU, whose lock "stats cachedump" holds while it
		// walks the LRU.
		TopSite: memcachedLRUSite,
		TopRole: regexp.MustCompile(`^worker queued on the LRU lock`),
		// memcached counts no lock waiters: the labels are the truth.
		TopWaiters: nil,
		Notes: "Workers blocked in pthread_mutex_lock under a command (the LRU lock, the item locks behind it, a stats lock) " +
			"are contention; so is the LRU maintainer when it queues on an LRU lock. Workers and the listener in epoll_wait " +
			"(libevent's loop) are idle, also without a stack: only they call epoll_wait. The LRU crawler, the hash table's " +
			"and the slab rebalancer's threads waiting on their conditions for a request are idle; the LRU maintainer's and " +
			"the logger's usleep between rounds is sleep. A worker blocked in a socket read or write inside a command is io.",
	}
}

// memcachedLRUSite matches the wait sites of the LRU lock: memcached's own
// code right above pthread_mutex_lock, in Debian 12's stripped memcached
// 1.6.18 the return addresses into do_item_link_q/do_item_unlink_q
// (inlined into do_item_link and do_item_unlink) and lru_pull_tail.
// futexWait is FUTEX_WAIT, the operation without its flags.
const futexWait = 0

var memcachedLRUSite = regexp.MustCompile(`^memcached\+0x(` + memcachedLRUOffsets + `)\b`)

// Memcached is a memcached a test started.
type Memcached struct {
	PID  int
	Addr string
}

// StartMemcachedUnderLoad starts memcached with threads workers, fills it
// with MemcachedKeys keys and runs the LRU-contention load on it until the
// test ends.
func StartMemcachedUnderLoad(t testing.TB, threads int) *Memcached {
	t.Helper()
	mc := startMemcached(t, threads)
	cls := prefillMemcached(t, mc.Addr, MemcachedKeys)
	startMemcachedLoad(t, mc.Addr, cls)
	return mc
}

// startMemcached starts memcached on a free port of 127.0.0.1 with the
// given worker threads, waits until it accepts connections and kills it
// by its pid when the test ends.
func startMemcached(t testing.TB, threads int) *Memcached {
	t.Helper()
	bin, err := exec.LookPath("memcached")
	if err != nil {
		t.Fatalf("memcached is not installed: apt-get install memcached (scripts/deps.sh installs it)")
	}
	port := freePort(t)
	args := []string{"-U", "0", "-p", strconv.Itoa(port), "-l", "127.0.0.1", "-t", strconv.Itoa(threads), "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // our child: its pid is ours until reaped
		<-done
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("memcached exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "memcached did not accept connections on %s: %v; %s", addr, err, out.String())
	}
	// Its threads have started when it accepts: 1 listener, the workers,
	// and the maintenance threads.
	return &Memcached{PID: cmd.Process.Pid, Addr: addr}
}

// mcConn is a text-protocol connection.
type mcConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialMemcached(addr string) (*mcConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &mcConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriter(c)}, nil
}

// until reads lines up to one equal to end (e.g. "END"), returning them.
func (m *mcConn) until(end ...string) ([]string, error) {
	var lines []string
	for {
		l, err := m.r.ReadString('\n')
		if err != nil {
			return lines, err
		}
		l = strings.TrimRight(l, "\r\n")
		for _, e := range end {
			if l == e || strings.HasPrefix(l, e+" ") {
				return lines, nil
			}
		}
		if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "SERVER_ERROR") || strings.HasPrefix(l, "CLIENT_ERROR") {
			return lines, fmt.Errorf("memcached: %s", l)
		}
		lines = append(lines, l)
	}
}

var mcValue = strings.Repeat("v", 100)

// prefillMemcached sets keys k0…k<n-1> (100-byte values, pipelined,
// noreply) and returns the slab class that holds them.
func prefillMemcached(t testing.TB, addr string, n int) int {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			m, err := dialMemcached(addr)
			if err != nil {
				errs <- err
				return
			}
			defer m.c.Close()
			for k := g; k < n; k += 4 {
				fmt.Fprintf(m.w, "set k%d 0 0 %d noreply\r\n%s\r\n", k, len(mcValue), mcValue)
			}
			// A reply after the last set: every set was processed.
			fmt.Fprintf(m.w, "version\r\n")
			if err := m.w.Flush(); err != nil {
				errs <- err
				return
			}
			_ = m.c.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := m.until("VERSION"); err != nil {
				errs <- err
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	m, err := dialMemcached(addr)
	require.NoError(t, err)
	defer m.c.Close()
	fmt.Fprintf(m.w, "stats items\r\n")
	require.NoError(t, m.w.Flush())
	lines, err := m.until("END")
	require.NoError(t, err)
	cls, most := 0, 0
	for _, l := range lines {
		// STAT items:<class>:number <n>
		var c, num int
		if _, err := fmt.Sscanf(l, "STAT items:%d:number %d", &c, &num); err == nil && num > most {
			cls, most = c, num
		}
	}
	require.Greater(t, most, n/2, "the items are in no slab class: %q", lines)
	t.Logf("memcached: %d items in slab class %d", most, cls)
	return cls
}

// startMemcachedLoad runs 44 setters/getters on random keys and 4
// connections dumping slab class cls, until the test ends.
func startMemcachedLoad(t testing.TB, addr string, cls int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*mcConn
	for i := 0; i < 48; i++ {
		m, err := dialMemcached(addr)
		require.NoError(t, err)
		conns = append(conns, m)
	}
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		for _, m := range conns {
			m.c.Close() // unblocks the readers
		}
		mu.Unlock()
		wg.Wait()
	})
	for i, m := range conns {
		wg.Add(1)
		go func(i int, m *mcConn) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(i)))
			for ctx.Err() == nil {
				if i < 4 {
					fmt.Fprintf(m.w, "stats cachedump %d 0\r\n", cls)
				} else {
					k := rnd.Intn(MemcachedKeys)
					fmt.Fprintf(m.w, "set k%d 0 0 %d\r\n%s\r\nget k%d\r\n", k, len(mcValue), mcValue, k)
				}
				if m.w.Flush() != nil {
					return
				}
				if i >= 4 {
					if _, err := m.until("STORED"); err != nil {
						return
					}
				}
				if _, err := m.until("END"); err != nil {
					return
				}
			}
		}(i, m)
	}
}

// Wait sites in Debian 12's stripped memcached 1.6.18 (module+offset of
// the return address right above pthread_mutex_lock, then its caller),
// read from gdb's and ctprof's stacks of the workers under this load:
// item_link_q's lock of the slab class's LRU (called from do_item_link
// under do_store_item, 0x164d2) and store_item's item lock.
const (
	memcachedLRUOffsets = `1648b`
)

var (
	memcachedLRULock  = moduleOffset{"memcached", 0x1648b}
	memcachedItemLock = moduleOffset{"memcached", 0x19eb1}
)

// memcachedLabel labels memcached's threads. memcached names them
// (mc-worker, mc-lrumaint, …), the main thread, the listener, keeps the
// process's name; pid is its tid.
func memcachedLabel(pid int) func(t *procfs.Thread) Label {
	return func(t *procfs.Thread) Label {
		if t.State == 'R' {
			return Label{Running, "running"}
		}
		role := t.Name
		if t.TID == pid {
			role = "listener"
		}
		switch t.Syscall {
		case sysEpollWait, sysEpollPwait:
			// Only libevent's loops call epoll_wait: the listener's and
			// each worker's, waiting for their next event.
			return Label{Idle, role + " in its event loop"}
		case sysNanosleep, sysClockNanosleep:
			// The LRU maintainer's usleep between rounds.
			return Label{Sleep, role + " sleeping between rounds"}
		case sysFutex:
		case sysRead, sysWrite, sysRecvfrom, sysSendto, sysRecvmsg, sysSendmsg:
			return Label{IO, role + "'s socket I/O"}
		default:
			return Label{}
		}
		// A futex: pthread_mutex_lock waits with FUTEX_WAIT, a condition
		// with FUTEX_WAIT_BITSET (glibc 2.36).
		mutex := t.SyscallArgs[1]&0x7f == futexWait
		switch {
		case role == "mc-worker" && mutex:
			switch {
			case stackHasOffset(t.Stack, memcachedLRULock):
				return Label{Contention, "worker queued on the LRU lock"}
			case stackHasOffset(t.Stack, memcachedItemLock):
				return Label{Contention, "worker queued on an item lock"}
			}
			return Label{Contention, "worker queued on a lock"}
		case strings.HasPrefix(role, "mc-") && mutex:
			// The LRU maintainer's, crawler's or rebalancer's round
			// queued on an LRU or slabs lock.
			return Label{Contention, role + " queued on a lock"}
		case strings.HasPrefix(role, "mc-") && role != "mc-worker":
			// mc-assocmaint, mc-itemcrawler, mc-slabmaint, mc-log: a
			// condition wait at the top of the thread's loop, for a
			// request (expand the hash table, crawl, move a slab) or for
			// log watchers.
			return Label{Idle, role + " waiting for a request"}
		}
		return Label{}
	}
}
