package otlp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// Open starts an exporter when ctprof's environment or endpoint
// (--otlp-endpoint) names one, and says so through say, which also hears
// the exporter's warnings; nil when none is named.
func Open(getenv func(string) string, endpoint string, interval time.Duration, say func(string)) (*Exporter, error) {
	cfg, on, err := FromEnv(getenv, endpoint, interval)
	if err != nil || !on {
		return nil, err
	}
	say(fmt.Sprintf("sending OTLP profiles to %s every %s", cfg.URL, cfg.Interval))
	return New(cfg, say), nil
}

// ResourceOf describes a sampled process for OTLP.
func ResourceOf(t snapshot.Target) Resource {
	host, _ := os.Hostname()
	return Resource{PID: t.PID, Executable: filepath.Base(t.Name), Runtime: string(t.Kind), Host: host}
}

// Target starts the profile stream of a sampled process; build gives its
// profile of everything sampled so far. A nil exporter gives a nil
// stream, whose methods do nothing.
func (e *Exporter) Target(t snapshot.Target, version string, build func() (*profile.Profile, error)) *Stream {
	if e == nil {
		return nil
	}
	return e.Stream(ResourceOf(t), version, build)
}

// Shutdown delivers what is queued within the export timeout, and warns
// when profiles were not delivered. A nil exporter does nothing.
func (e *Exporter) Shutdown() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Timeout)
	defer cancel()
	if lost, last := e.Close(ctx); lost > 0 {
		why := ""
		if last != nil {
			why = ": " + last.Error()
		}
		e.warn(fmt.Sprintf("warning: %d OTLP profiles were not delivered%s", lost, why))
	}
}

// URL is where the exporter sends.
func (e *Exporter) URL() string { return e.cfg.URL }

// Interval is the time between exports of one target.
func (e *Exporter) Interval() time.Duration { return e.cfg.Interval }
