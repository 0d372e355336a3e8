package otlp

import (
	"strconv"
	"time"

	"github.com/google/pprof/profile"
)

// Stream exports one target's profiles: every interval what was sampled
// since the last export, and at the end what remains. Its methods are
// called from the goroutine that drains the target's samples.
type Stream struct {
	e        *Exporter
	res      Resource
	version  string
	interval time.Duration
	// build is the target's profile of everything sampled so far (the
	// Aggregator's, as --pprof writes it).
	build func() (*profile.Profile, error)
	// last is the last export's time; start the window's start.
	last  time.Time
	start time.Time
	prev  *profile.Profile
	warn  func(string)
	told  bool
}

// Stream starts a target's export; build gives its cumulative profile.
func (e *Exporter) Stream(res Resource, version string, build func() (*profile.Profile, error)) *Stream {
	now := time.Now()
	// The environment's resource attributes, then the target's; a target
	// without OTEL_SERVICE_NAME is the service its executable names.
	attrs := make(map[string]string, len(e.cfg.Resource)+1)
	for k, v := range e.cfg.Resource {
		attrs[k] = v
	}
	for k, v := range res.Attributes {
		attrs[k] = v
	}
	if attrs["service.name"] == "" && res.Executable != "" {
		attrs["service.name"] = res.Executable
	}
	res.Attributes = attrs
	return &Stream{e: e, res: res, version: version, interval: e.cfg.Interval, build: build, last: now, start: now, warn: e.warn}
}

// Tick exports when an interval has passed since the last export.
func (s *Stream) Tick(now time.Time) {
	if s == nil || now.Sub(s.last) < s.interval {
		return
	}
	s.export(now)
}

// Final exports what was sampled since the last export.
func (s *Stream) Final(now time.Time) {
	if s != nil {
		s.export(now)
	}
}

func (s *Stream) export(now time.Time) {
	s.last = now
	cur, err := s.build()
	if err == nil && cur == nil {
		return
	}
	if err == nil {
		delta := Delta(s.prev, cur, s.start, now)
		s.start = now
		s.prev = cur
		if len(delta.Sample) == 0 {
			return
		}
		pd, cerr := Convert(delta, s.res, s.version)
		if err = cerr; err == nil {
			err = s.e.Enqueue(pd)
		}
	}
	if err != nil && !s.told {
		s.told = true
		s.warn("OTLP profiles of pid " + strconv.Itoa(s.res.PID) + ": " + err.Error())
	}
}
