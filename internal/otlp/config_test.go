package otlp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		endpoint string
		on       bool
		url      string
		err      string
		check    func(t *testing.T, c Config)
	}{
		{name: "nothing set", on: false},
		{name: "general endpoint gets the signal's path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, on: true, url: "http://collector:4318/v1development/profiles"},
		{name: "signal endpoint as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "https://b/custom"}, on: true, url: "https://b/custom"},
		{name: "flag wins", env: map[string]string{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "https://b/custom"}, endpoint: "http://127.0.0.1:4318", on: true, url: "http://127.0.0.1:4318/v1development/profiles"},
		{name: "flag with the path", endpoint: "http://h:1/v1development/profiles", on: true, url: "http://h:1/v1development/profiles"},
		{name: "not a URL", endpoint: "collector:4318", err: "want an http:// or https:// URL"},
		{name: "grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: "http/protobuf only"},
		{name: "headers, percent-encoded, signal's win", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS": "Authorization=Bearer%20abc, x-tenant = t1"}, on: true, url: "http://c/v1development/profiles",
			check: func(t *testing.T, c Config) {
				assert.Equal(t, map[string]string{"Authorization": "Bearer abc", "x-tenant": "t1"}, c.Headers)
			}},
		{name: "a header line break refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=b%0D%0AX: y"}, err: "line break"},
		{name: "malformed header", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, err: "not key=value"},
		{name: "timeout and gzip", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, on: true, url: "http://c/v1development/profiles",
			check: func(t *testing.T, c Config) {
				assert.Equal(t, 2500*time.Millisecond, c.Timeout)
				assert.True(t, c.Gzip)
			}},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, err: "milliseconds"},
		{name: "bad compression", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: "gzip or none"},
		{name: "missing CA file", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, err: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{name: "client certificate without key", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/x.pem"}, err: "go together"},
		{name: "resource attributes, service name and pod", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=old", "OTEL_SERVICE_NAME": "shop", "K8S_POD_NAME": "shop-0", "K8S_NAMESPACE_NAME": "ns", "K8S_NODE_NAME": "n1"}, on: true, url: "http://c/v1development/profiles",
			check: func(t *testing.T, c Config) {
				assert.Equal(t, map[string]string{"deployment.environment": "prod", "service.name": "shop", "k8s.pod.name": "shop-0", "k8s.namespace.name": "ns", "k8s.node.name": "n1"}, c.Resource)
				assert.Equal(t, DefaultInterval, c.Interval)
				assert.Equal(t, defaultTimeout, c.Timeout)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, on, err := FromEnv(func(k string) string { return tc.env[k] }, tc.endpoint, 0)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.on, on)
			assert.Equal(t, tc.url, c.URL)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestFromEnvIntervalAtLeastASecond(t *testing.T) {
	_, _, err := FromEnv(func(string) string { return "" }, "http://c", 100*time.Millisecond)
	require.Error(t, err)
	c, _, err := FromEnv(func(string) string { return "" }, "http://c", 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, c.Interval)
}

func TestFromEnvCAWithoutCertificates(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(p, []byte("not a certificate"), 0o600))
	_, _, err := FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": p}[k]
	}, "", 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no PEM certificate")
}

func FuzzParseHeaders(f *testing.F) {
	f.Add("Authorization=Bearer%20x,a=b")
	f.Add("=,,=%zz")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders(s)
		if err != nil {
			return
		}
		for k, v := range h {
			if k == "" || strings.ContainsAny(k, " :\t") {
				t.Fatalf("header name %q", k)
			}
			for _, r := range k + v {
				if r == '\r' || r == '\n' {
					t.Fatalf("a line break in %q: %q", k, v)
				}
			}
		}
	})
}
