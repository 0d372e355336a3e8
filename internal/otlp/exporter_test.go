package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// someProfiles is a small OTLP export: two sample types of one stack.
func someProfiles(t *testing.T) pprofile.Profiles {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "pthread_mutex_lock", SystemName: "pthread_mutex_lock", Filename: "x.c"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 3}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "blocked", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "wall", Unit: "nanoseconds"}, Period: 1e9,
		Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{3, 3e9}, Label: map[string][]string{"state": {"BLOCKED"}, "thread": {"worker-N"}}}},
		Location: []*profile.Location{loc}, Function: []*profile.Function{fn},
	}
	pd, err := Convert(p, Resource{PID: 42, Executable: "app", Runtime: "native"}, "test")
	require.NoError(t, err)
	require.Equal(t, 2, pd.ProfileCount())
	return pd
}

// recorder is an OTLP endpoint whose answers the test scripts.
type recorder struct {
	mu      sync.Mutex
	times   []time.Time
	bodies  [][]byte
	headers []http.Header
	answer  func(n int, w http.ResponseWriter)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, _ = io.ReadAll(zr)
		}
	}
	r.mu.Lock()
	n := len(r.times)
	r.times = append(r.times, time.Now())
	r.bodies = append(r.bodies, b)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	r.answer(n, w)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.times)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.msgs = append(w.msgs, m); w.mu.Unlock() }
func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.msgs...)
}

// A 429 with Retry-After is tried again after that long (not sooner), with
// the same body, its headers and gzip; then it succeeds.
func TestExporterHonoursRetryAfter(t *testing.T) {
	rec := &recorder{answer: func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	var warn warnings
	e := New(Config{URL: srv.URL + ProfilesPath, Timeout: 5 * time.Second, Gzip: true, Headers: map[string]string{"Authorization": "Bearer t0k"}}, warn.add)
	require.NoError(t, e.Enqueue(someProfiles(t)))
	waitFor(t, "the second try", func() bool { return rec.count() >= 2 })
	lost, _ := e.Close(context.Background())
	assert.Zero(t, lost)
	assert.GreaterOrEqual(t, rec.times[1].Sub(rec.times[0]), 900*time.Millisecond, "Retry-After: 1 waited for")
	assert.Equal(t, rec.bodies[0], rec.bodies[1])
	assert.Equal(t, "Bearer t0k", rec.headers[1].Get("Authorization"))
	assert.Equal(t, "application/x-protobuf", rec.headers[1].Get("Content-Type"))
	req := pprofileotlp.NewExportRequest()
	require.NoError(t, req.UnmarshalProto(rec.bodies[1]))
	assert.Equal(t, 2, req.Profiles().ProfileCount())
	s := e.Stats()
	assert.Equal(t, uint64(1), s.Results[ResultRetryable])
	assert.Equal(t, uint64(1), s.Results[ResultSuccess])
	assert.Equal(t, uint64(2), s.Sent)
	assert.Len(t, warn.all(), 1, "one warning for the 429: %v", warn.all())
	assert.Equal(t, 1.0, counterValue(t, e, "ctprof_otlp_exports_total", "retryable_error"))
	assert.Equal(t, 1.0, counterValue(t, e, "ctprof_otlp_exports_total", "success"))
	assert.Equal(t, 0.0, counterValue(t, e, "ctprof_otlp_dropped_profiles_total", ""))
}

// counterValue is the exporter's counter name (with result, when not "")
// as Prometheus gathers it.
func counterValue(t *testing.T, e *Exporter, name, result string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if result == "" || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{result=%q}", name, result)
	return 0
}

// A refused request (400) is not retried: its profiles are dropped and
// counted, and the refusal is told once, with the endpoint's message.
func TestExporterRefusalIsDroppedAndToldOnce(t *testing.T) {
	rec := &recorder{answer: func(n int, w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("bad profiles\x1b[31m"))
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	var warn warnings
	e := New(Config{URL: srv.URL, Timeout: 5 * time.Second}, warn.add)
	require.NoError(t, e.Enqueue(someProfiles(t)))
	require.NoError(t, e.Enqueue(someProfiles(t)))
	waitFor(t, "two tries", func() bool { return rec.count() >= 2 })
	lost, last := e.Close(context.Background())
	assert.Equal(t, uint64(4), lost)
	require.Error(t, last)
	assert.Equal(t, 2, rec.count(), "not retried")
	require.Len(t, warn.all(), 1)
	assert.Contains(t, warn.all()[0], "400 Bad Request: bad profiles[31m", "the message without its escape")
	assert.Equal(t, uint64(2), e.Stats().Results[ResultRejected])
	assert.Equal(t, 4.0, counterValue(t, e, "ctprof_otlp_dropped_profiles_total", ""))
}

// A partial success is counted and told once per message.
func TestExporterPartialSuccess(t *testing.T) {
	rec := &recorder{answer: func(n int, w http.ResponseWriter) {
		resp := pprofileotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedProfiles(1)
		resp.PartialSuccess().SetErrorMessage("one sample type unsupported")
		b, _ := resp.MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	var warn warnings
	e := New(Config{URL: srv.URL, Timeout: 5 * time.Second}, warn.add)
	require.NoError(t, e.Enqueue(someProfiles(t)))
	require.NoError(t, e.Enqueue(someProfiles(t)))
	waitFor(t, "two exports", func() bool { return rec.count() >= 2 })
	lost, _ := e.Close(context.Background())
	assert.Equal(t, uint64(2), lost, "one rejected of each")
	assert.Equal(t, uint64(2), e.Stats().Results[ResultPartial])
	require.Len(t, warn.all(), 1)
	assert.Contains(t, warn.all()[0], "one sample type unsupported")
}

// A collector that does not answer in time never blocks Enqueue: the
// queue keeps the newest requests (the oldest dropped first), and Close
// gives up when its context ends, counting what was not delivered.
func TestExporterQueueBoundedWhileTheCollectorHangs(t *testing.T) {
	release := make(chan struct{})
	rec := &recorder{answer: func(n int, w http.ResponseWriter) { <-release }}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	defer close(release)
	e := New(Config{URL: srv.URL, Timeout: 30 * time.Second}, nil)
	start := time.Now()
	for i := 0; i < maxQueued+10; i++ {
		require.NoError(t, e.Enqueue(someProfiles(t)))
	}
	assert.Less(t, time.Since(start), 5*time.Second, "Enqueue does not wait for the collector")
	s := e.Stats()
	assert.LessOrEqual(t, s.Queued, 2*maxQueued)
	assert.GreaterOrEqual(t, s.Dropped, uint64(2*9), "the oldest dropped")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	lost, _ := e.Close(ctx)
	assert.Equal(t, uint64(2*(maxQueued+10)), lost, "nothing was delivered")
}

// A collector that is down: retried with backoff, and a closing run ends
// within its context, every profile counted as not delivered.
func TestExporterCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	var warn warnings
	e := New(Config{URL: "http://" + addr + ProfilesPath, Timeout: time.Second}, warn.add)
	require.NoError(t, e.Enqueue(someProfiles(t)))
	waitFor(t, "a failed try", func() bool { return e.Stats().Results[ResultRetryable] >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	lost, last := e.Close(ctx)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, uint64(2), lost)
	require.Error(t, last)
	require.Len(t, warn.all(), 1)
	assert.True(t, strings.Contains(warn.all()[0], "connection refused"), warn.all()[0])
}

func TestRetryAfter(t *testing.T) {
	assert.Equal(t, 3*time.Second, retryAfter("3"))
	assert.Zero(t, retryAfter(""))
	assert.Zero(t, retryAfter("soon"))
	d := retryAfter(time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat))
	assert.InDelta(t, 10, d.Seconds(), 2)
}
