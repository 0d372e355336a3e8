package scale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Throughput is how a scaling run reads the workload's throughput.
type Throughput interface {
	// Begin and End bracket the measurement window.
	Begin(ctx context.Context) error
	End(ctx context.Context) (float64, error)
	// Describe says where the figure comes from, for messages.
	Describe() string
}

// RegexThroughput reads throughput from the workload's output: every line
// the expression matches gives a value (its first group, or the whole
// match), and the run's figure is the mean of the values printed during
// the measurement window.
type RegexThroughput struct {
	re *regexp.Regexp

	mu      sync.Mutex
	window  bool
	values  []float64
	lastOut []string
}

// NewRegexThroughput compiles expr; it must match a number.
func NewRegexThroughput(expr string) (*RegexThroughput, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("throughput regex: %w", err)
	}
	return &RegexThroughput{re: re}, nil
}

// Line feeds one line of the workload's output.
func (r *RegexThroughput) Line(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastOut = append(r.lastOut, line)
	if len(r.lastOut) > 10 {
		r.lastOut = r.lastOut[1:]
	}
	if !r.window {
		return
	}
	m := r.re.FindStringSubmatch(line)
	if m == nil {
		return
	}
	text := m[0]
	if len(m) > 1 {
		text = m[1]
	}
	if v, ok := parseNumber(text); ok {
		r.values = append(r.values, v)
	}
}

// parseNumber reads "1234", "1,234.5" or "1.2e6".
func parseNumber(s string) (float64, bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Begin starts collecting values.
func (r *RegexThroughput) Begin(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.window, r.values = true, nil
	return nil
}

// End returns the mean of the values seen since Begin.
func (r *RegexThroughput) End(context.Context) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.window = false
	if len(r.values) == 0 {
		return 0, fmt.Errorf("no line of the workload's output matched %q during the measurement; its last lines were:\n  %s",
			r.re.String(), strings.Join(r.lastOut, "\n  "))
	}
	sum := 0.0
	for _, v := range r.values {
		sum += v
	}
	return sum / float64(len(r.values)), nil
}

// Describe names the expression.
func (r *RegexThroughput) Describe() string { return fmt.Sprintf("output matching %q", r.re.String()) }

// Writer returns a writer that feeds the output line by line.
func (r *RegexThroughput) Writer() io.Writer { return &lineWriter{fn: r.Line} }

type lineWriter struct {
	fn  func(string)
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.fn(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line without end: keep memory bounded
		w.fn(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// MetricThroughput reads throughput from a Prometheus counter the workload
// serves: its rate over the measurement window (the sum over all series of
// the metric).
type MetricThroughput struct {
	URL    string
	Metric string
	Client *http.Client

	start float64
	t0    time.Time
}

// ParseMetricSpec splits "http://host:port/metrics#name".
func ParseMetricSpec(spec string) (*MetricThroughput, error) {
	u, name, ok := strings.Cut(spec, "#")
	if !ok || name == "" || !strings.HasPrefix(u, "http") {
		return nil, fmt.Errorf("throughput metric %q: want URL#metric_name, e.g. http://127.0.0.1:8080/metrics#requests_total", spec)
	}
	return &MetricThroughput{URL: u, Metric: name, Client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Begin records the counter at the window's start.
func (m *MetricThroughput) Begin(ctx context.Context) error {
	v, err := m.scrape(ctx)
	if err != nil {
		return err
	}
	m.start, m.t0 = v, time.Now()
	return nil
}

// End returns the counter's rate since Begin.
func (m *MetricThroughput) End(ctx context.Context) (float64, error) {
	v, err := m.scrape(ctx)
	if err != nil {
		return 0, err
	}
	dt := time.Since(m.t0).Seconds()
	if v < m.start {
		return 0, fmt.Errorf("counter %s went down (%g to %g): the workload restarted during the measurement", m.Metric, m.start, v)
	}
	return (v - m.start) / dt, nil
}

// Describe names the metric.
func (m *MetricThroughput) Describe() string {
	return fmt.Sprintf("the rate of %s at %s", m.Metric, m.URL)
}

func (m *MetricThroughput) scrape(ctx context.Context) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("throughput metric: %w", err)
	}
	resp, err := m.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", m.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape %s: %s", m.URL, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", m.URL, err)
	}
	fam, ok := families[m.Metric]
	if !ok {
		return 0, fmt.Errorf("scrape %s: no metric %s", m.URL, m.Metric)
	}
	sum := 0.0
	for _, mt := range fam.GetMetric() {
		switch {
		case mt.GetCounter() != nil:
			sum += mt.GetCounter().GetValue()
		case mt.GetUntyped() != nil:
			sum += mt.GetUntyped().GetValue()
		default:
			return 0, fmt.Errorf("%s is a %s, not a counter", m.Metric, fam.GetType())
		}
	}
	return sum, nil
}
