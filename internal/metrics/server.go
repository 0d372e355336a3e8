package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
)

// DefaultAddr is where the exporter listens unless told otherwise: the
// loopback interface only. Listening on every interface takes an explicit
// ":9901".
const DefaultAddr = "127.0.0.1:9901"

// ServerOptions configure a Server.
type ServerOptions struct {
	// Addr is host:port to listen on (DefaultAddr when empty). A bare
	// port ("9901") means the loopback interface; ":9901" means all
	// interfaces; port 0 picks a free port (see Server.Addr).
	Addr string
	// WebConfigFile is an exporter-toolkit web configuration file (TLS,
	// basic auth with bcrypt hashes); empty serves plain HTTP.
	WebConfigFile string
	// Logger receives the server's messages; nil discards them.
	Logger *slog.Logger
	// Top and Version are passed to the Collector.
	Top     int
	Version string
	// IdleTimeout closes a keep-alive connection that carries no request
	// for this long (DefaultIdleTimeout when zero): a scraper that went
	// away must not hold a connection, and a goroutine, forever.
	IdleTimeout time.Duration
	// MaxRequests bounds the scrapes of /metrics served at once; one
	// more is answered 503 (DefaultMaxRequests when zero, no bound when
	// negative). Each scrape computes every target's summary.
	MaxRequests int
}

// DefaultMaxRequests is the scrapes served at once by default, as
// node_exporter's --web.max-requests.
const DefaultMaxRequests = 40

// Connection timeouts. A client gets ReadHeaderTimeout to send its request
// line and headers and ReadTimeout for the whole request (a GET has no
// body); WriteTimeout bounds one response and is well above the handler's
// 30-second scrape timeout, so a scrape of many targets with thousands of
// threads still completes.
const (
	ReadHeaderTimeout  = 10 * time.Second
	ReadTimeout        = 30 * time.Second
	WriteTimeout       = 2 * time.Minute
	DefaultIdleTimeout = 2 * time.Minute
)

// ErrAddress marks a listen address that is malformed (the caller's
// mistake), as opposed to one that cannot be bound.
var ErrAddress = errors.New("malformed listen address")

// Server serves /metrics, /healthz and a landing page for a Collector.
type Server struct {
	collector *Collector
	registry  *prometheus.Registry
	listener  net.Listener
	http      *http.Server
	webConfig string
	tls       bool
	logger    *slog.Logger
	// maxRequests is promhttp's MaxRequestsInFlight (0: no bound).
	maxRequests int

	closeOnce sync.Once
}

// NewServer checks the web configuration and binds the listen address, so
// a port in use or a bad configuration fails here, before any sampling
// starts. A port in use is an error wrapping syscall.EADDRINUSE.
func NewServer(o ServerOptions) (*Server, error) {
	addr, err := normalizeAddr(o.Addr)
	if err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var wc webConfigSummary
	if o.WebConfigFile != "" {
		if err := web.Validate(o.WebConfigFile); err != nil {
			// Not wrapped: the file's errors are the configuration's
			// problem, not a path for callers to act on.
			return nil, fmt.Errorf("web config %s: %v", o.WebConfigFile, err)
		}
		if wc, err = summarizeWebConfig(o.WebConfigFile); err != nil {
			return nil, fmt.Errorf("web config %s: %v", o.WebConfigFile, err)
		}
		if wc.auth && !wc.tls {
			// Basic auth over plain HTTP sends the password, base64 only,
			// with every scrape: anyone on the path can read it.
			logger.Warn("basic auth without TLS: the password travels in clear text with every scrape; add tls_server_config to the web config",
				"web_config", o.WebConfigFile)
		}
	}
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	c := NewCollector(CollectorOptions{Top: o.Top, Version: o.Version})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// ctprof's own CPU and memory: the cost of watching, next to the
	// targets' metrics.
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(collectors.NewGoCollector())

	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError(addr, err)
	}
	maxRequests := o.MaxRequests
	switch {
	case maxRequests == 0:
		maxRequests = DefaultMaxRequests
	case maxRequests < 0:
		maxRequests = 0 // promhttp: no bound
	}
	s := &Server{collector: c, registry: reg, listener: l, webConfig: o.WebConfigFile, tls: wc.tls, logger: logger, maxRequests: maxRequests}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// normalizeAddr applies the defaults: empty is DefaultAddr, a bare port
// is the loopback interface.
func normalizeAddr(addr string) (string, error) {
	switch {
	case addr == "":
		return DefaultAddr, nil
	case isPort(addr):
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || !isPort(port) {
		return "", fmt.Errorf("%w %q: want host:port, :port or port", ErrAddress, addr)
	}
	return addr, nil
}

// CheckAddr says whether addr is a well-formed listen address, without
// binding it, so a command can refuse a typo before any work.
func CheckAddr(addr string) error {
	_, err := normalizeAddr(addr)
	return err
}

// webConfigSummary is what the server needs to know of a web
// configuration beyond what exporter-toolkit checks: whether it turns TLS
// on and whether it asks for basic auth.
type webConfigSummary struct{ tls, auth bool }

func summarizeWebConfig(path string) (webConfigSummary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return webConfigSummary{}, err
	}
	// Only the keys that decide TLS and auth; exporter-toolkit has
	// validated the whole file already.
	var c struct {
		TLS struct {
			Cert     string `yaml:"cert"`
			Key      string `yaml:"key"`
			CertFile string `yaml:"cert_file"`
			KeyFile  string `yaml:"key_file"`
		} `yaml:"tls_server_config"`
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return webConfigSummary{}, err
	}
	t := c.TLS
	return webConfigSummary{tls: t.Cert != "" || t.Key != "" || t.CertFile != "" || t.KeyFile != "", auth: len(c.Users) > 0}, nil
}

// TLS says whether the server serves HTTPS.
func (s *Server) TLS() bool { return s.tls }

func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535 && s != "" && s[0] != '+' && s[0] != '-'
}

// listenError says plainly why the address could not be bound
// ("listen 127.0.0.1:9901: address already in use"), keeping the system
// error wrapped so callers can add a hint for syscall.EADDRINUSE.
func listenError(addr string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("listen %s: %w", addr, errno)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return fmt.Errorf("listen %s: %w", addr, op.Err)
	}
	return fmt.Errorf("listen %s: %w", addr, err)
}

// ListenHint adds what to do about a port in use or a privileged port.
func ListenHint(err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w; choose another with --listen", err)
	case errors.Is(err, syscall.EACCES):
		// Not wrapped: the generic permission hint is about files.
		return fmt.Errorf("%v; ports below 1024 need root or CAP_NET_BIND_SERVICE, choose another with --listen", err)
	}
	return err
}

// MaxRequestsOfFlag is ServerOptions.MaxRequests for --max-requests, whose
// 0 (no bound) is a negative bound there (0 is the default).
func MaxRequestsOfFlag(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// Collector is the server's collector, for callers that want its Targets.
func (s *Server) Collector() *Collector { return s.collector }

// MustRegister adds ctprof's own collectors to /metrics (the OTLP
// exporter's counts); a second collector of the same metrics panics.
func (s *Server) MustRegister(c prometheus.Collector) { s.registry.MustRegister(c) }

// Register starts exporting a target; see Collector.Register.
func (s *Server) Register(t TargetInfo, src SummarySource) { s.collector.Register(t, src) }

// SetUp marks a target up or down; see Collector.SetUp.
func (s *Server) SetUp(pid int, up bool) { s.collector.SetUp(pid, up) }

// Unregister stops exporting a target; see Collector.Unregister.
func (s *Server) Unregister(pid int) { s.collector.Unregister(pid) }

// Addr is the bound address ("127.0.0.1:41234" when port 0 was asked for).
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Handler serves /metrics, /healthz and the landing page at /, without the
// web configuration's TLS and authentication (Serve adds those).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: s.maxRequests,
		Timeout:             30 * time.Second,
	})
	mux.Handle("/metrics", promhttp.InstrumentMetricHandler(s.registry, metrics))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", s.landing)
	return mux
}

// Serve serves until ctx is cancelled, then shuts down gracefully (scrapes
// in flight may finish, for up to 5 seconds). It returns nil after a
// shutdown and the error otherwise.
func (s *Server) Serve(ctx context.Context) error {
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{s.Addr()},
		WebSystemdSocket:   new(bool),
		WebConfigFile:      &s.webConfig,
	}
	errc := make(chan error, 1)
	go func() { errc <- web.Serve(s.listener, s.http, flags, s.logger) }()
	select {
	case err := <-errc:
		s.Close()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve %s: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shut down %s: %w", s.Addr(), err)
	}
	return nil
}

// Close releases the listener of a server that is not serving (Serve
// closes it itself).
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.listener.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}
