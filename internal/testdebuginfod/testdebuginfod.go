// Package testdebuginfod runs a real debuginfod server (elfutils', Debian's
// package debuginfod, which make deps installs) over a directory of debug
// files for the tests of stripped binaries, and a slow front for it: a
// server that takes its time, as a remote one does, so that a binary's
// names arrive while ctprof samples.
package testdebuginfod

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Start runs debuginfod on a free port of 127.0.0.1 over dir (ELF and DWARF
// files) until the test ends, and returns its URL once it answers.
func Start(t testing.TB, dir string) string {
	t.Helper()
	bin, err := exec.LookPath("debuginfod")
	if err != nil {
		t.Fatalf("debuginfod is needed: apt-get install debuginfod (make deps installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-F", "-p", fmt.Sprint(port), "-d", filepath.Join(t.TempDir(), "db.sqlite"), "-t", "1", "-g", "0", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start debuginfod: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("debuginfod's log:\n%s", log.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	WaitListening(t, url)
	return url
}

// WaitListening waits until the server answers HTTP at all (any status):
// a test that asks it for a missing file must hear its 404, not a refused
// connection from a server still starting on a busy machine.
func WaitListening(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not answer within 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitServed waits until the server has indexed the debug file of the
// build-id id.
func WaitServed(t testing.TB, url, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/buildid/" + id + "/debuginfo") // it answers GET only
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not serve build-id %s within 60 s (last: %v)", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Slow is a front for a debuginfod server that holds each request for a
// while before it passes it on: Asked counts the requests it has had.
type Slow struct {
	URL   string
	asked atomic.Int64
}

// Asked is the number of requests the front has had.
func (s *Slow) Asked() int { return int(s.asked.Load()) }

// StartSlow puts a front on 127.0.0.1 before the server at url that waits
// delay before it asks the server, until the test ends.
func StartSlow(t testing.TB, url string, delay time.Duration) *Slow {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1: %v", err)
	}
	s := &Slow{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.asked.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		resp, err := http.Get(url + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// syncBuffer is a bytes.Buffer the server's output goroutines may write
// to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
