package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// ProfilesPath is the OTLP/HTTP path of the profiles signal this version
// speaks (opentelemetry-proto's v1development, as the Collector's
// pdata/pprofile v0.161 reads it).
const ProfilesPath = "/v1development/profiles"

// DefaultInterval is the time between exports of one target.
const DefaultInterval = 15 * time.Second

// defaultTimeout is an export's timeout when OTEL_EXPORTER_OTLP_TIMEOUT
// does not say (the specification's default).
const defaultTimeout = 10 * time.Second

// Config is where and how profiles are sent.
type Config struct {
	// URL is the profiles endpoint, ProfilesPath included.
	URL string
	// Headers go with every request (an authorization token, say).
	Headers map[string]string
	Timeout time.Duration
	Gzip    bool
	// TLS is the client's TLS configuration for an https URL (nil: the
	// system's roots).
	TLS *tls.Config
	// Resource are the resource attributes from the environment:
	// OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME and the Kubernetes
	// downward API's K8S_POD_NAME, K8S_NAMESPACE_NAME, K8S_NODE_NAME.
	Resource map[string]string
	// Interval is the time between exports of one target.
	Interval time.Duration
}

// FromEnv reads the OpenTelemetry exporter environment of ctprof itself
// (never a target's) through getenv. endpoint, when not empty, is
// --otlp-endpoint: it wins over the environment, and like
// OTEL_EXPORTER_OTLP_ENDPOINT is a base URL that ProfilesPath is added to
// (unless it ends in it already). enabled is false when neither names an
// endpoint: then nothing is sent.
func FromEnv(getenv func(string) string, endpoint string, interval time.Duration) (c Config, enabled bool, err error) {
	env := func(name string) string {
		// The signal's own variable wins over the general one.
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROFILES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	switch {
	case endpoint != "":
		c.URL, err = signalURL(endpoint, "--otlp-endpoint")
	case strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) != "":
		// The signal's endpoint is used as it is.
		c.URL, err = checkURL(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")), "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
	case strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "":
		c.URL, err = signalURL(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), "OTEL_EXPORTER_OTLP_ENDPOINT")
	default:
		return Config{}, false, nil
	}
	if err != nil {
		return Config{}, false, err
	}
	if p := env("PROTOCOL"); p != "" && p != "http/protobuf" {
		return Config{}, false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: ctprof sends OTLP profiles over http/protobuf only (the Collector's OTLP receiver takes it on port 4318)", p)
	}
	if c.Headers, err = parseHeaders(env("HEADERS")); err != nil {
		return Config{}, false, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err)
	}
	c.Timeout = defaultTimeout
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return Config{}, false, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: want a positive number of milliseconds", v)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := env("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.Gzip = true
	default:
		return Config{}, false, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%q: want gzip or none", v)
	}
	if c.TLS, err = tlsConfig(env("CERTIFICATE"), env("CLIENT_CERTIFICATE"), env("CLIENT_KEY")); err != nil {
		return Config{}, false, err
	}
	if c.Resource, err = resourceFromEnv(getenv); err != nil {
		return Config{}, false, err
	}
	c.Interval = interval
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Interval < time.Second {
		return Config{}, false, fmt.Errorf("--otlp-interval must be at least 1s, not %s", interval)
	}
	return c, true, nil
}

func checkURL(raw, what string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q: want an http:// or https:// URL, for example http://127.0.0.1:4318", what, raw)
	}
	return raw, nil
}

// signalURL adds the profiles path to a base URL.
func signalURL(base, what string) (string, error) {
	if _, err := checkURL(base, what); err != nil {
		return "", err
	}
	if strings.HasSuffix(base, ProfilesPath) {
		return base, nil
	}
	return strings.TrimSuffix(base, "/") + ProfilesPath, nil
}

// parseHeaders reads "key1=value1,key2=value2" with percent-encoded
// values, as the specification writes OTEL_EXPORTER_OTLP_HEADERS.
func parseHeaders(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %s: %v", k, err)
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("%q is not a header name", k)
		}
		if !httpguts.ValidHeaderFieldValue(dv) {
			return nil, fmt.Errorf("the value of %s holds a line break or a control character", k)
		}
		out[k] = dv
	}
	return out, nil
}

// tlsConfig builds the client's TLS from PEM files: a CA to trust, and a
// client certificate with its key (both or neither).
func tlsConfig(ca, cert, key string) (*tls.Config, error) {
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
		c.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the OTLP client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// k8sEnv are the downward API's variables (as the OpenTelemetry
// Operator names them) and the resource attributes they give.
var k8sEnv = [][2]string{
	{"K8S_POD_NAME", "k8s.pod.name"},
	{"K8S_NAMESPACE_NAME", "k8s.namespace.name"},
	{"K8S_NODE_NAME", "k8s.node.name"},
}

// resourceFromEnv reads OTEL_RESOURCE_ATTRIBUTES ("k=v,k2=v2",
// percent-encoded values), then OTEL_SERVICE_NAME and the Kubernetes
// variables, which win.
func resourceFromEnv(getenv func(string) string) (map[string]string, error) {
	out, err := parseHeaders(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if out == nil {
		out = map[string]string{}
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		out["service.name"] = v
	}
	for _, kv := range k8sEnv {
		if v := strings.TrimSpace(getenv(kv[0])); v != "" {
			out[kv[1]] = v
		}
	}
	return out, nil
}
