package metrics

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/ctprof/ctprof/internal/testnative"
)

// startServer starts a Server on a free loopback port and stops it when
// the test ends, checking that Serve returned cleanly.
func startServer(t *testing.T, o ServerOptions) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	s, err := NewServer(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after cancel")
		}
	})
	return s
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

func TestServerEndpoints(t *testing.T) {
	p := testnative.Start(t, "many_threads", "4")
	s := startServer(t, ServerOptions{Version: "9.9.9"})
	agg, tgt := liveTarget(t, p.PID, 50*time.Millisecond)
	s.Register(TargetInfoOf(tgt), agg)
	// A hostile name on the landing page is escaped, never markup.
	s.SetUp(424242, false)
	s.Collector().Register(TargetInfo{PID: 424243, Name: `<script>alert("x")</script>`}, nil)
	base := "http://" + s.Addr()

	code, body, _ := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	code, body, hdr := get(t, base+"/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, hdr.Get("Content-Type"), "text/html")
	assert.Contains(t, body, `href="metrics"`)
	assert.Contains(t, body, "many_threads")
	assert.Contains(t, body, "9.9.9")
	assert.NotContains(t, body, "<script>")
	assert.Contains(t, body, "&lt;script&gt;")
	assert.NotRegexp(t, `(src|href)="(https?:)?//`, body, "no external resources")

	code, _, _ = get(t, base+"/no-such-page")
	assert.Equal(t, http.StatusNotFound, code)

	pid := strconv.Itoa(p.PID)
	var mfs map[string]*dto.MetricFamily
	require.NoError(t, poll(20*time.Second, func() error {
		code, body, _ := get(t, base+"/metrics")
		if code != http.StatusOK {
			return errors.New(body)
		}
		mfs = parseExposition(t, body)
		if v, _ := find(mfs, "ctprof_samples_total", map[string]string{"pid": pid, "target": "many_threads"}); v < 2 {
			return errNotYet
		}
		return nil
	}))
	up, _ := find(mfs, "ctprof_up", map[string]string{"pid": pid, "target": "many_threads"})
	assert.Equal(t, 1.0, up)
	up, ok := find(mfs, "ctprof_up", map[string]string{"pid": "424242", "target": ""})
	assert.True(t, ok && up == 0)
	bi, ok := find(mfs, "ctprof_build_info", map[string]string{"goversion": runtime.Version(), "version": "9.9.9"})
	assert.True(t, ok && bi == 1)
	// ctprof's own cost beside the targets'.
	assert.Contains(t, mfs, "process_cpu_seconds_total")
}

// parseExposition parses a text exposition as Prometheus would.
func parseExposition(t testing.TB, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return mfs
}

func TestServerListenErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	_, err = NewServer(ServerOptions{Addr: busy.Addr().String()})
	require.Error(t, err)
	assert.True(t, errors.Is(err, syscall.EADDRINUSE), "%v", err)
	assert.Equal(t, "listen "+busy.Addr().String()+": address already in use", err.Error())

	_, err = NewServer(ServerOptions{Addr: "localhost:http-ish"})
	assert.ErrorContains(t, err, "want host:port")

	_, err = NewServer(ServerOptions{Addr: "127.0.0.1:0", WebConfigFile: filepath.Join(t.TempDir(), "missing.yml")})
	assert.ErrorContains(t, err, "missing.yml")
}

func TestNormalizeAddr(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"", "127.0.0.1:9901", ""},
		{"9902", "127.0.0.1:9902", ""},
		{":9901", ":9901", ""},
		{"0.0.0.0:9901", "0.0.0.0:9901", ""},
		{"[::1]:9901", "[::1]:9901", ""},
		{"localhost", "", "want host:port"},
		{"-1", "", "want host:port"},
		{"127.0.0.1:99999", "", "want host:port"},
	}
	for _, tc := range tests {
		got, err := normalizeAddr(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got)
	}
}

func TestServerShutsDownOnCancel(t *testing.T) {
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	addr := s.Addr()
	require.NoError(t, poll(10*time.Second, func() error {
		_, err := http.Get("http://" + addr + "/healthz")
		return err
	}))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the port is released")
}

// TLS and basic auth through an exporter-toolkit web config: refused
// without credentials or with wrong ones, served with them, and only over
// TLS with the certificate the test made.
func TestServerTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSignedCert(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600))
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	cfg := "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: " + string(hash) + "\n"
	cfgPath := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	s := startServer(t, ServerOptions{WebConfigFile: cfgPath})
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	url := "https://" + s.Addr() + "/metrics"

	do := func(user, pass string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		var resp *http.Response
		require.NoError(t, poll(10*time.Second, func() error {
			var err error
			resp, err = client.Do(req)
			return err
		}))
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := do("", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = do("prometheus", "wrong")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body := do("prometheus", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ctprof_build_info")

	// Plain HTTP gets no metrics.
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.NotContains(t, string(b), "ctprof_build_info")
	}
	// A client that does not trust the certificate is refused.
	_, err = http.Get(url)
	assert.Error(t, err)
}

// selfSignedCert makes an ECDSA certificate for 127.0.0.1.
func selfSignedCert(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ctprof test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// promtool (Debian's prometheus package; `make deps` installs it) finds
// nothing to complain about in a live scrape of a contended process.
func TestPromtoolCheckMetricsOnALiveScrape(t *testing.T) {
	promtool := lookTool(t, "promtool")
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	s := startServer(t, ServerOptions{})
	agg, tgt := liveTarget(t, p.PID, 100*time.Millisecond)
	s.Register(TargetInfoOf(tgt), agg)
	var body string
	require.NoError(t, poll(20*time.Second, func() error {
		var code int
		code, body, _ = get(t, "http://"+s.Addr()+"/metrics")
		if code != http.StatusOK || !strings.Contains(body, `lock="futex contended_mutex"`) {
			return errNotYet
		}
		return nil
	}))
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	assert.NoError(t, err, "promtool check metrics:\n%s", out.String())
	assert.Empty(t, strings.TrimSpace(out.String()))
}

// lookTool finds a tool from Debian's prometheus package or fails saying
// how to get it.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: install Debian's prometheus package (apt-get install prometheus; `make deps` does it as root): %v", name, err)
	}
	return path
}

// A keep-alive connection that carries no further request is closed by the
// server after IdleTimeout: a scraper that vanished holds nothing forever.
func TestServerClosesIdleKeepAliveConnections(t *testing.T) {
	s := startServer(t, ServerOptions{IdleTimeout: time.Second})
	conn, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: ctprof\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "ok\n", string(body))
	assert.False(t, resp.Close, "the server keeps the connection alive after one request")

	// Now idle: the server, not our deadline, must end it.
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed by the server, not left open")
	assert.Less(t, time.Since(start), 15*time.Second)
}

func TestServerTimeoutsAreSet(t *testing.T) {
	s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, ReadHeaderTimeout, s.http.ReadHeaderTimeout)
	assert.Equal(t, ReadTimeout, s.http.ReadTimeout)
	assert.Equal(t, WriteTimeout, s.http.WriteTimeout)
	assert.Equal(t, DefaultIdleTimeout, s.http.IdleTimeout)
	assert.Greater(t, WriteTimeout, 30*time.Second, "longer than the scrape handler's own timeout")
}

// Basic auth over plain HTTP sends the password in clear text: the server
// says so instead of looking protected. With TLS it says nothing.
func TestServerWarnsOfBasicAuthWithoutTLS(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSignedCert(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600))
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	require.NoError(t, err)
	users := "basic_auth_users:\n  prometheus: " + string(hash) + "\n"
	tlsCfg := "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	tests := []struct {
		name, cfg string
		warn, tls bool
	}{
		{"auth without TLS", users, true, false},
		{"auth with TLS", tlsCfg + users, false, true},
		{"TLS only", tlsCfg, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yml")
			require.NoError(t, os.WriteFile(path, []byte(tc.cfg), 0o600))
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", WebConfigFile: path, Logger: logger})
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, tc.tls, s.TLS())
			if tc.warn {
				assert.Contains(t, logs.String(), "level=WARN")
				assert.Contains(t, logs.String(), "clear text")
			} else {
				assert.Empty(t, logs.String())
			}
		})
	}
}

func TestCheckAddrMarksMalformedAddresses(t *testing.T) {
	for _, addr := range []string{"abc", "127.0.0.1", "host:port", "127.0.0.1:70000", "-1"} {
		err := CheckAddr(addr)
		assert.ErrorIs(t, err, ErrAddress, addr)
		_, err = NewServer(ServerOptions{Addr: addr})
		assert.ErrorIs(t, err, ErrAddress, addr)
	}
	for _, addr := range []string{"", "9901", ":9901", "127.0.0.1:0", "[::1]:9901"} {
		assert.NoError(t, CheckAddr(addr), addr)
	}
}

// The scrapes served at once: node_exporter's 40 by default, as asked, or
// no bound (a negative MaxRequests; serve --max-requests 0).
func TestServerMaxRequests(t *testing.T) {
	for _, tc := range []struct{ asked, want int }{{0, DefaultMaxRequests}, {7, 7}, {-1, 0}} {
		s, err := NewServer(ServerOptions{Addr: "127.0.0.1:0", MaxRequests: tc.asked})
		require.NoError(t, err)
		assert.Equal(t, tc.want, s.maxRequests, "asked %d", tc.asked)
		require.NoError(t, s.listener.Close())
	}
}
