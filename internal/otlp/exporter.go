package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pprofile"
	collectorprofiles "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// Queue bounds: a collector that is down costs at most this much memory;
// past it the oldest request is dropped for the newest.
const (
	maxQueued      = 64
	maxQueuedBytes = 64 << 20
	// maxRetryFor is how long one request is retried before it is
	// dropped; maxBackoff bounds the wait between tries (a Retry-After
	// longer than it is cut to it).
	maxRetryFor = 5 * time.Minute
	maxBackoff  = 30 * time.Second
	// maxResponseBytes bounds what is read of a response body.
	maxResponseBytes = 64 << 10
)

// Results of an export attempt (ctprof_otlp_exports_total's result).
const (
	ResultSuccess   = "success"
	ResultPartial   = "partial_success"
	ResultRetryable = "retryable_error"
	ResultRejected  = "rejected"
)

// request is one export waiting to be sent: its encoded body.
type request struct {
	seq      uint64
	body     []byte
	profiles int
	queued   time.Time
}

// Exporter sends OTLP profiles in the background. Enqueue never blocks:
// sampling goes on whatever the collector does. It is a
// prometheus.Collector of its own counts.
type Exporter struct {
	cfg    Config
	client *http.Client
	warn   func(string)

	mu      sync.Mutex
	seq     uint64
	queue   []request
	bytes   int
	wake    chan struct{}
	closed  bool
	stop    chan struct{} // closed by Close when the flush time is over
	done    chan struct{}
	results map[string]uint64
	dropped uint64
	sent    uint64
	lastErr error
	// told are the kinds of trouble warned about once already.
	told map[string]bool

	exports *prometheus.Desc
	drops   *prometheus.Desc
}

// New starts an exporter to cfg.URL. warn is told of trouble once per
// kind (a refused request, a partial success, the collector down); it
// may be called from the exporter's goroutine.
func New(cfg Config, warn func(string)) *Exporter {
	if warn == nil {
		warn = func(string) {}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The default transport's proxy (HTTPS_PROXY and NO_PROXY from
	// ctprof's own environment) applies, as for any OTLP exporter.
	tr.TLSClientConfig = cfg.TLS
	e := &Exporter{
		cfg:     cfg,
		client:  &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		warn:    warn,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		results: map[string]uint64{},
		told:    map[string]bool{},
		exports: prometheus.NewDesc("ctprof_otlp_exports_total", "OTLP profile export attempts, by result (success, partial_success, retryable_error, rejected).", []string{"result"}, nil),
		drops:   prometheus.NewDesc("ctprof_otlp_dropped_profiles_total", "OTLP profiles never delivered: the queue was full (oldest dropped first), the endpoint refused them, or retries ran out.", nil, nil),
	}
	go e.run()
	return e
}

// Enqueue queues profiles for sending; when the queue is full the oldest
// request is dropped (and counted).
func (e *Exporter) Enqueue(pd pprofile.Profiles) error {
	n := pd.ProfileCount()
	if n == 0 {
		return nil
	}
	// Profiles is the export request itself (ExportProfilesServiceRequest).
	body, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
	if err != nil {
		return fmt.Errorf("encode OTLP profiles: %w", err)
	}
	if e.cfg.Gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	e.mu.Lock()
	if e.closed {
		e.dropped += uint64(n)
		e.mu.Unlock()
		return nil
	}
	e.seq++
	e.queue = append(e.queue, request{seq: e.seq, body: body, profiles: n, queued: time.Now()})
	e.bytes += len(body)
	for len(e.queue) > maxQueued || e.bytes > maxQueuedBytes && len(e.queue) > 1 {
		e.dropLocked(0)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

func (e *Exporter) dropLocked(i int) {
	e.dropped += uint64(e.queue[i].profiles)
	e.bytes -= len(e.queue[i].body)
	e.queue = append(e.queue[:i], e.queue[i+1:]...)
}

// run sends the queue, oldest first, until Close.
func (e *Exporter) run() {
	defer close(e.done)
	backoff := time.Second
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			closed := e.closed
			e.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-e.wake:
			case <-e.stop:
				return
			}
			continue
		}
		r := e.queue[0]
		e.mu.Unlock()
		retry, after := e.send(r)
		e.mu.Lock()
		// The request may have been dropped meanwhile (the queue overflowed):
		// only the same one leaves the head.
		head := len(e.queue) > 0 && e.queue[0].seq == r.seq
		switch {
		case !retry:
			if head {
				e.bytes -= len(r.body)
				e.queue = e.queue[1:]
			}
			backoff = time.Second
		case time.Since(r.queued) > maxRetryFor:
			if head {
				e.dropLocked(0)
			}
		}
		e.mu.Unlock()
		if !retry {
			continue
		}
		wait := backoff
		if after > 0 {
			wait = after
		}
		wait = min(wait, maxBackoff)
		backoff = min(backoff*2, maxBackoff)
		select {
		case <-time.After(wait):
		case <-e.stop:
			return
		}
	}
}

// send makes one attempt; retry says the request should be tried again
// (after, when the endpoint said how long to wait).
func (e *Exporter) send(r request) (retry bool, after time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeout)
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(r.body))
	if err != nil {
		e.result(ResultRejected, r.profiles, "request", err)
		return false, 0
	}
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "ctprof")
	if e.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.result(ResultRetryable, 0, "unreachable", fmt.Errorf("%s: %w", e.cfg.URL, errors.Unwrap(err)))
		return true, 0
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		e.partial(body, r.profiles)
		return false, 0
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		e.result(ResultRetryable, 0, "status "+strconv.Itoa(resp.StatusCode), fmt.Errorf("%s answered %s", e.cfg.URL, resp.Status))
		return true, retryAfter(resp.Header.Get("Retry-After"))
	}
	e.result(ResultRejected, r.profiles, "status "+strconv.Itoa(resp.StatusCode), fmt.Errorf("%s refused the profiles: %s%s", e.cfg.URL, resp.Status, statusMessage(resp.Header.Get("Content-Type"), body)))
	return false, 0
}

// partial counts a success, or a partial one the response body reports.
func (e *Exporter) partial(body []byte, profiles int) {
	// The response's message types come from the OTLP protobuf module
	// without gRPC (its "slim" build): ctprof speaks HTTP only.
	var resp collectorprofiles.ExportProfilesServiceResponse
	if len(body) > 0 && proto.Unmarshal(body, &resp) == nil {
		ps := resp.GetPartialSuccess()
		if ps.GetRejectedProfiles() > 0 || ps.GetErrorMessage() != "" {
			e.result(ResultPartial, int(ps.GetRejectedProfiles()), "partial: "+ps.GetErrorMessage(),
				fmt.Errorf("%s took the profiles in part: %d rejected: %s", e.cfg.URL, ps.GetRejectedProfiles(), ps.GetErrorMessage()))
			e.mu.Lock()
			e.sent += uint64(max(profiles-int(ps.GetRejectedProfiles()), 0))
			e.mu.Unlock()
			return
		}
	}
	e.mu.Lock()
	e.results[ResultSuccess]++
	e.sent += uint64(profiles)
	e.mu.Unlock()
}

// result counts an attempt; dropped profiles are lost for good; the
// first trouble of each kind is warned about.
func (e *Exporter) result(result string, dropped int, kind string, err error) {
	e.mu.Lock()
	e.results[result]++
	e.dropped += uint64(dropped)
	e.lastErr = err
	first := !e.told[kind] && len(e.told) < 64
	if first {
		e.told[kind] = true
	}
	e.mu.Unlock()
	if first {
		e.warn("OTLP profiles: " + err.Error())
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// statusMessage is an error response's message, for the warning: the
// message of the google.rpc.Status an OTLP endpoint sends as protobuf, or
// the start of a text body.
func statusMessage(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/x-protobuf") {
		var st status.Status
		if proto.Unmarshal(body, &st) == nil {
			body = []byte(st.GetMessage())
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	b := bytes.ToValidUTF8(body, []byte("?"))
	b = bytes.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, b)
	if len(b) > 200 {
		b = append(b[:200], "..."...)
	}
	return ": " + string(b)
}

// Close stops taking profiles and tries to deliver what is queued until
// ctx ends; it returns how many profiles were never delivered (dropped
// or still queued) and the last error seen.
func (e *Exporter) Close(ctx context.Context) (undelivered uint64, last error) {
	e.mu.Lock()
	already := e.closed
	e.closed = true
	e.mu.Unlock()
	if !already {
		select {
		case e.wake <- struct{}{}:
		default:
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			close(e.stop)
			<-e.done
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.queue {
		e.dropped += uint64(r.profiles)
	}
	e.queue, e.bytes = nil, 0
	return e.dropped, e.lastErr
}

// Timeout is an export's timeout, also the time a closing run gives the
// queue to drain.
func (e *Exporter) Timeout() time.Duration { return e.cfg.Timeout }

// Stats are the exporter's counts so far.
type Stats struct {
	Results   map[string]uint64
	Sent      uint64
	Dropped   uint64
	Queued    int
	LastError error
}

// Stats returns the counts so far.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := make(map[string]uint64, len(e.results))
	for k, v := range e.results {
		r[k] = v
	}
	q := 0
	for _, x := range e.queue {
		q += x.profiles
	}
	return Stats{Results: r, Sent: e.sent, Dropped: e.dropped, Queued: q, LastError: e.lastErr}
}

// Describe is prometheus.Collector's.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.exports
	ch <- e.drops
}

// Collect is prometheus.Collector's: every result, zero included.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	s := e.Stats()
	for _, r := range []string{ResultSuccess, ResultPartial, ResultRetryable, ResultRejected} {
		ch <- prometheus.MustNewConstMetric(e.exports, prometheus.CounterValue, float64(s.Results[r]), r)
	}
	ch <- prometheus.MustNewConstMetric(e.drops, prometheus.CounterValue, float64(s.Dropped))
}
