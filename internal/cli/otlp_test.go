package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/ctprof/ctprof/internal/otlp"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/ctprof/ctprof/internal/testotelcol"
)

// receivedSum adds up the values of every export the collector received of
// pid, by sample type, stack and sample attributes, and checks each names
// pid.
func receivedSum(t *testing.T, got []pprofile.Profiles, pid int) map[string]map[string]int64 {
	t.Helper()
	sum := map[string]map[string]int64{}
	for _, pd := range got {
		res := pd.ResourceProfiles().At(0).Resource().Attributes()
		v, ok := res.Get("process.pid")
		require.True(t, ok, "no process.pid")
		if v.Int() != int64(pid) {
			continue
		}
		for typ, stacks := range testotelcol.Values(pd, true) {
			if sum[typ] == nil {
				sum[typ] = map[string]int64{}
			}
			for k, n := range stacks {
				sum[typ][k] += n
			}
		}
	}
	return sum
}

func readPprof(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	p, err := profile.Parse(f)
	require.NoError(t, err)
	return p
}

// sampleAttributes are the attributes of every sample of pd, by key.
func sampleAttributes(pd pprofile.Profiles) []map[string]string {
	d := pd.Dictionary()
	var out []map[string]string
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					m := map[string]string{}
					for _, ai := range s.AttributeIndices().All() {
						kv := d.AttributeTable().At(int(ai))
						m[d.StringTable().At(int(kv.KeyStrindex()))] = kv.Value().AsString()
					}
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// anyStackWith reports whether a stack of values (its attributes after
// "|") holds every one of the function names.
func anyStackWith(values map[string]int64, names ...string) bool {
	for k := range values {
		k, _, _ = strings.Cut(k, "|")
		all := true
		for _, n := range names {
			all = all && strings.Contains(k, n+":")
		}
		if all {
			return true
		}
	}
	return false
}

// attach of a native lock convoy and of a JVM monitor convoy sends OTLP
// profiles to a real OpenTelemetry Collector every interval and at the
// end: their stacks name the waiting functions, their pid is the target's,
// their waiters' samples name the lock and the waiting thread, and the
// values of all exports add up to ctprof's own pprof profile of the same
// run, stack by stack and attribute by attribute.
func TestAttachSendsOTLPProfilesToACollector(t *testing.T) {
	col := testotelcol.Start(t, testotelcol.Options{})
	native := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	jvm := testjvm.Start(t, testjvm.JDK17(t), "SyncSingleton", "8")
	for _, tc := range []struct {
		name  string
		pid   int
		extra []string
		wait  []string
		lock  string
		// waiter matches the thread names the target gave its waiters.
		waiter string
		// duration is the run's: a JVM's first dumps are slow on a
		// loaded machine (one run of 8 s exported once in a make test
		// beside other heavy tests).
		duration string
	}{
		{"native", native.PID, []string{"--interval", "250ms"}, []string{"pthread_mutex_lock", "contender"}, "contended_mutex", `^contender-[0-3]$`, "8s"},
		{"jvm", jvm.PID, []string{"--interval", "500ms"}, []string{"SyncSingleton.handle"}, "SyncSingleton", `^request-[1-8]$`, "12s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := filepath.Join(t.TempDir(), "run.pb.gz")
			before := len(col.Received(t))
			args := append([]string{"attach", strconv.Itoa(tc.pid), "--duration", tc.duration, "--otlp-endpoint", col.URL, "--otlp-interval", "2s", "--pprof", pp}, tc.extra...)
			code, _, errOut := run(t, "", args...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, errOut, "sending OTLP profiles to "+col.URL+"/v1development/profiles every 2s")
			assert.NotContains(t, errOut, "not delivered")
			// Every 2 s and at the end: two exports at least over the run (a
			// loaded machine may sample less often than asked, and an
			// export comes with a sample; at 6 s a JVM's slow first dumps
			// left room for one). The run delivered
			// them all before it ended; the collector's file exporter may
			// still be writing the last.
			want := testotelcol.PprofValues(readPprof(t, pp), otlp.AttributeKey)
			require.NotEmpty(t, want["samples/count"])
			var sum map[string]map[string]int64
			var got []pprofile.Profiles
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				got = col.WaitReceived(t, before+2, 30*time.Second)
				if sum = receivedSum(t, got[before:], tc.pid); assert.ObjectsAreEqual(want, sum) || time.Now().After(deadline) {
					break
				}
			}
			assert.Equal(t, want, sum, "the exports add up to the run's pprof profile")
			// The waiters' samples name the lock's class, its resource
			// and the waiting thread, by the name the target gave it.
			locks, resources, waiters := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, pd := range got[before:] {
				for _, attrs := range sampleAttributes(pd) {
					if c, ok := attrs["ctprof.lock.class"]; ok {
						locks[c] = true
						resources[attrs["ctprof.resource"]] = true
						if c == tc.lock {
							waiters[attrs[otlp.AttrThreadName]] = true
						}
					}
				}
			}
			assert.True(t, locks[tc.lock], "lock classes %v, want %s", locks, tc.lock)
			assert.NotEmpty(t, resources)
			require.NotEmpty(t, waiters, "no sample of a waiter on %s", tc.lock)
			for name := range waiters {
				assert.Regexp(t, tc.waiter, name, "the waiters' thread.name: %v", waiters)
			}
			assert.True(t, anyStackWith(sum["samples/count"], tc.wait...), "no stack with %v: %v", tc.wait, sum["samples/count"])
		})
	}
}

// serve sends each target's profile every interval.
func TestServeSendsOTLPProfilesPerTarget(t *testing.T) {
	col := testotelcol.Start(t, testotelcol.Options{})
	a := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	b := testnative.Start(t, "many_threads", "3")
	startServe(t, "--pid", strconv.Itoa(a.PID), "--pid", strconv.Itoa(b.PID), "--interval", "250ms", "--otlp-endpoint", col.URL, "--otlp-interval", "1s")
	deadline := time.Now().Add(60 * time.Second)
	for {
		per := map[int64]int{}
		for _, pd := range col.Received(t) {
			v, _ := pd.ResourceProfiles().At(0).Resource().Attributes().Get("process.pid")
			per[v.Int()]++
		}
		if per[int64(a.PID)] >= 3 && per[int64(b.PID)] >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "exports per pid after 60 s: %v", per)
		time.Sleep(250 * time.Millisecond)
	}
}

// writeCert makes a self-signed certificate for 127.0.0.1 (PEM files).
func writeCert(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ctprof test collector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return cert, key
}

// Over TLS with a bearer token, as the collector's own TLS and
// bearertokenauth settings ask: the standard environment is enough; a
// wrong token is refused, said once, and the run still ends well.
func TestAttachOTLPOverTLSWithAToken(t *testing.T) {
	cert, key := writeCert(t)
	col := testotelcol.Start(t, testotelcol.Options{CertFile: cert, KeyFile: key, Token: "s3cret"})
	require.True(t, strings.HasPrefix(col.URL, "https://"))
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", cert)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20s3cret")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_SERVICE_NAME", "convoy-service")
	code, _, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "4", "--interval", "250ms")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "not delivered")
	got := col.WaitReceived(t, 1, 30*time.Second)
	v, _ := got[0].ResourceProfiles().At(0).Resource().Attributes().Get("service.name")
	assert.Equal(t, "convoy-service", v.Str())

	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20wrong")
	code, out, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "3", "--interval", "250ms")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "contended_mutex", "the summary")
	assert.Equal(t, 1, strings.Count(errOut, "ctprof: OTLP profiles: "+col.URL+"/v1development/profiles refused the profiles: 401 Unauthorized"), "said once:\n%s", errOut)
	assert.Regexp(t, `ctprof: warning: [1-9][0-9]* OTLP profiles were not delivered`, errOut)
}

// The collector stops in the middle of a run: sampling goes on, the
// failed exports are counted in /metrics, and the run ends with its
// summary, exit 0 and one warning saying how many were not delivered.
func TestAttachOTLPCollectorStopsMidRun(t *testing.T) {
	col := testotelcol.Start(t, testotelcol.Options{})
	p := testnative.Start(t, "mutex_contention", "4", "3", "3000")
	errOut := newLineWatcher(`serving metrics on http://([0-9.:]+)/metrics`)
	var out strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"attach", strconv.Itoa(p.PID), "--interval", "250ms", "--duration", "12s", "--listen", "127.0.0.1:0",
			"--otlp-endpoint", col.URL, "--otlp-interval", "1s"}, strings.NewReader(""), &out, errOut)
	}()
	var addr string
	select {
	case addr = <-errOut.found:
	case <-time.After(30 * time.Second):
		t.Fatalf("no listen address; stderr: %s", errOut.String())
	}
	col.WaitReceived(t, 1, 30*time.Second)
	col.Stop()
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(body, `ctprof_otlp_exports_total{result="retryable_error"} `) || strings.Contains(body, `ctprof_otlp_exports_total{result="retryable_error"} 0`) {
		require.True(t, time.Now().Before(deadline), "no failed export counted:\n%s", body)
		resp, err := http.Get("http://" + addr + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		time.Sleep(200 * time.Millisecond)
	}
	assert.Contains(t, body, "ctprof_otlp_dropped_profiles_total ")
	assert.Regexp(t, `ctprof_otlp_exports_total\{result="success"\} [1-9]`, body)
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end; stderr: %s", errOut.String())
	}
	require.Equal(t, 0, code, errOut.String())
	assert.Contains(t, out.String(), "contended_mutex", "the summary")
	assert.Regexp(t, `ctprof: warning: [1-9][0-9]* OTLP profiles were not delivered: `, errOut.String())
	assert.Equal(t, 1, strings.Count(errOut.String(), "not delivered"), errOut.String())
}

// A profile of a 4,000-thread JVM (threads with 20 frames of their own
// below their wait) is at most 1 MB before compression, with every sample
// naming its thread: a stack names at most 64 threads (the rest are
// analysis.OtherThreads), so its size follows the stacks, not the threads.
func TestOTLPProfileOf4000ThreadJVMIsUnder1MB(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "4000", "20")
	pp := filepath.Join(t.TempDir(), "run.pb.gz")
	code, _, errOut := run(t, "", "attach", strconv.Itoa(p.PID), "--count", "3", "--interval", "1s", "--pprof", pp)
	require.Equal(t, 0, code, errOut)
	prof := readPprof(t, pp)
	pd, err := otlp.Convert(prof, otlp.Resource{PID: p.PID, Executable: "java", Runtime: "jvm"}, "test")
	require.NoError(t, err)
	body, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	require.NoError(t, err)
	var threads int64
	for _, s := range prof.Sample {
		threads += s.Value[0]
	}
	t.Logf("OTLP export of a 4,000-thread JVM (%d thread samples, %d pprof samples): %d bytes", threads, len(prof.Sample), len(body))
	require.GreaterOrEqual(t, threads, int64(4000), "the profile covers every thread of a dump at least")
	assert.LessOrEqual(t, len(body), 1<<20)
}
