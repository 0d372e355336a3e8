// Package testotelcol runs a real OpenTelemetry Collector for the tests of
// ctprof's OTLP profiles export: the collector of ./collector (the
// Collector's own modules at one release: its OTLP receiver, the
// contrib file exporter and bearer-token authenticator), built once by
// `make otelcol` into build/otelcol-ctprof-test, or by the first test that
// needs it. What the collector received is read back from its file
// exporter's OTLP JSON with the Collector's own pdata unmarshaler.
package testotelcol

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Options configure the collector's OTLP/HTTP receiver.
type Options struct {
	// CertFile and KeyFile, when set, make the receiver speak TLS.
	CertFile, KeyFile string
	// Token, when set, makes the receiver ask for "Authorization: Bearer
	// <Token>" (the bearertokenauth extension).
	Token string
	// Port, when not 0, is the receiver's port (a restart on the same
	// address); 0 picks a free one.
	Port int
}

// Collector is a running collector.
type Collector struct {
	// URL is the receiver's base URL (http or https, 127.0.0.1).
	URL  string
	Port int
	PID  int
	out  string
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
	mu   sync.Mutex
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// Binary returns the collector's binary, building it when it is missing
// (a minute or two the first time: the Collector's modules come from the
// module proxy).
func Binary(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "collector")
	buildOnce.Do(func() {
		out := filepath.Join(filepath.Dir(file), "..", "..", "build", "otelcol-ctprof-test")
		if p := os.Getenv("CTPROF_OTELCOL"); p != "" {
			out = p
		}
		if _, err := os.Stat(out); err == nil {
			buildOnce.path = out
			return
		}
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("build the test collector in %s (make otelcol): %v\n%s", src, err, b)
			return
		}
		buildOnce.path = out
	})
	require.NoError(t, buildOnce.err)
	return buildOnce.path
}

// Start runs a collector that receives OTLP profiles on 127.0.0.1 and
// writes them to a file, until the test ends (or Stop).
func Start(t testing.TB, o Options) *Collector {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	port := o.Port
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	c := &Collector{Port: port, out: filepath.Join(dir, "profiles.jsonl"), done: make(chan struct{}), log: &bytes.Buffer{}}
	scheme := "http"
	httpConf := "        endpoint: 127.0.0.1:" + strconv.Itoa(port) + "\n"
	if o.CertFile != "" {
		scheme = "https"
		httpConf += "        tls:\n          cert_file: " + strconv.Quote(o.CertFile) + "\n          key_file: " + strconv.Quote(o.KeyFile) + "\n"
	}
	ext, extList := "", "[]"
	if o.Token != "" {
		httpConf += "        auth:\n          authenticator: bearertokenauth\n"
		ext = "extensions:\n  bearertokenauth:\n    token: " + strconv.Quote(o.Token) + "\n"
		extList = "[bearertokenauth]"
	}
	conf := ext + `receivers:
  otlp:
    protocols:
      http:
` + httpConf + `exporters:
  file:
    path: ` + strconv.Quote(c.out) + `
service:
  extensions: ` + extList + `
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
`
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(conf), 0o600))
	c.URL = scheme + "://127.0.0.1:" + strconv.Itoa(port)
	c.cmd = exec.Command(bin, "--config", cfg, "--feature-gates=service.profilesSupport")
	c.cmd.Stdout, c.cmd.Stderr = lockedWriter{c}, lockedWriter{c}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, c.cmd.Start())
	c.PID = c.cmd.Process.Pid
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("the collector's log:\n%s", c.Log())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("the collector exited:\n%s", c.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not listen within 60 s:\n%s", c.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type lockedWriter struct{ c *Collector }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.log.Write(b)
}

// Log is what the collector printed so far.
func (c *Collector) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

// Stop stops the collector (SIGTERM, then SIGKILL) and waits for it.
func (c *Collector) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(c.PID, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(c.PID, syscall.SIGKILL)
		<-c.done
	}
}

// Received is every export request the collector wrote so far, in order.
func (c *Collector) Received(t testing.TB) []pprofile.Profiles {
	t.Helper()
	f, err := os.Open(c.out)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []pprofile.Profiles
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		p, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(sc.Bytes())
		if err != nil {
			// The exporter may be writing the last line now.
			continue
		}
		out = append(out, p)
	}
	return out
}

// WaitReceived waits until the collector has written at least n export
// requests, and returns them.
func (c *Collector) WaitReceived(t testing.TB, n int, timeout time.Duration) []pprofile.Profiles {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := c.Received(t)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector received %d export requests in %s, want %d; its log:\n%s", len(got), timeout, n, c.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Values reads an OTLP export back: by sample type ("type/unit"), the sum
// of the values of each stack (frames leaf first, "function:file:line",
// joined by ";"), with attrs the sample's attributes too, as
// "stack|k=v,k=v".
func Values(pd pprofile.Profiles, attrs bool) map[string]map[string]int64 {
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	out := map[string]map[string]int64{}
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				typ := str(p.SampleType().TypeStrindex()) + "/" + str(p.SampleType().UnitStrindex())
				if out[typ] == nil {
					out[typ] = map[string]int64{}
				}
				for _, s := range p.Samples().All() {
					var frames []string
					for _, li := range d.StackTable().At(int(s.StackIndex())).LocationIndices().All() {
						for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
							fn := d.FunctionTable().At(int(ln.FunctionIndex()))
							frames = append(frames, str(fn.NameStrindex())+":"+str(fn.FilenameStrindex())+":"+strconv.FormatInt(ln.Line(), 10))
						}
					}
					key := strings.Join(frames, ";")
					if attrs {
						var kvs []string
						for _, ai := range s.AttributeIndices().All() {
							kv := d.AttributeTable().At(int(ai))
							kvs = append(kvs, str(kv.KeyStrindex())+"="+kv.Value().AsString())
						}
						sort.Strings(kvs)
						key += "|" + strings.Join(kvs, ",")
					}
					for _, v := range s.Values().All() {
						out[typ][key] += v
					}
				}
			}
		}
	}
	return out
}

// PprofValues is Values of a pprof profile, with each label named by
// labelKey (nil: labels left out, as Values without attrs).
func PprofValues(p *profile.Profile, labelKey func(string) string) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for i, st := range p.SampleType {
		typ := st.Type + "/" + st.Unit
		for _, s := range p.Sample {
			if s.Value[i] == 0 {
				continue
			}
			var frames []string
			for _, l := range s.Location {
				for _, ln := range l.Line {
					frames = append(frames, ln.Function.Name+":"+ln.Function.Filename+":"+strconv.FormatInt(ln.Line, 10))
				}
			}
			key := strings.Join(frames, ";")
			if labelKey != nil {
				var kvs []string
				for k, vs := range s.Label {
					for _, v := range vs {
						kvs = append(kvs, labelKey(k)+"="+v)
					}
				}
				sort.Strings(kvs)
				key += "|" + strings.Join(kvs, ",")
			}
			if out[typ] == nil {
				out[typ] = map[string]int64{}
			}
			out[typ][key] += s.Value[i]
		}
	}
	return out
}

// SampleAttribute is every value the samples of pd carry for key.
func SampleAttribute(pd pprofile.Profiles, key string) map[string]bool {
	d := pd.Dictionary()
	out := map[string]bool{}
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					for _, ai := range s.AttributeIndices().All() {
						kv := d.AttributeTable().At(int(ai))
						if d.StringTable().At(int(kv.KeyStrindex())) == key {
							out[kv.Value().AsString()] = true
						}
					}
				}
			}
		}
	}
	return out
}
