package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/otlp"
	"github.com/ctprof/ctprof/internal/report"
)

// otlpFlags are the flags of the OTLP profiles export (attach, serve).
type otlpFlags struct {
	endpoint string
	interval time.Duration
}

func (o *otlpFlags) register(f *pflag.FlagSet) {
	f.StringVar(&o.endpoint, "otlp-endpoint", "", "send contention profiles as OTLP profiles over HTTP/protobuf to this OpenTelemetry Collector (base URL, e.g. http://127.0.0.1:4318; the path "+otlp.ProfilesPath+" is added); OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT do the same, and the other OTEL_EXPORTER_OTLP_* variables apply (docs/otlp.md)")
	f.DurationVar(&o.interval, "otlp-interval", otlp.DefaultInterval, "time between OTLP profile exports of each target (each sends what was sampled since the last)")
}

// validate checks the flags and the OTEL_* environment before any work.
func (o *otlpFlags) validate() error {
	if _, _, err := otlp.FromEnv(os.Getenv, o.endpoint, o.interval); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// open starts the exporter when an endpoint is configured (nil when
// none); it speaks on errOut.
func (o *otlpFlags) open(errOut io.Writer) (*otlp.Exporter, error) {
	return otlp.Open(os.Getenv, o.endpoint, o.interval, func(msg string) { fmt.Fprintf(errOut, "ctprof: %s\n", report.Terminal(msg)) })
}
