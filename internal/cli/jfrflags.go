package cli

import (
	_ "embed"
	"time"

	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/sample"
)

// jfrFlags are the Flight Recorder flags of attach and serve.
type jfrFlags struct {
	Enabled   bool
	Threshold time.Duration
	// Duration is each recording's length before renewal, the longest one
	// outlives a killed ctprof (hidden: tests and the unusual case).
	Duration time.Duration
	set      func(name string) bool
}

//go:embed help/jfr-flags-help.txt
var jfrFlagsHelp string

func (j *jfrFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&j.Enabled, "jfr", false, "JVMs: also record exact lock waits with Java Flight Recorder (JDK 11+)")
	f.DurationVar(&j.Threshold, "jfr-threshold", jvm.DefaultJFRThreshold, "JVMs with --jfr: record waits at least this long (0: every wait, at a higher cost)")
	f.DurationVar(&j.Duration, "jfr-duration", 0, "JVMs with --jfr: length of each recording before ctprof renews it (0: 2m, or --duration+30s if shorter)")
	_ = f.MarkHidden("jfr-duration")
	j.set = func(name string) bool { return f.Changed(name) }
}

func (j *jfrFlags) validate() error {
	if !j.Enabled {
		for _, name := range []string{"jfr-threshold", "jfr-duration"} {
			if j.set != nil && j.set(name) {
				return usageErrorf("--%s needs --jfr", name)
			}
		}
	}
	if j.Threshold < 0 {
		return usageErrorf("--jfr-threshold must not be negative (0: every wait), not %s", j.Threshold)
	}
	if j.Duration != 0 && j.Duration < 15*time.Second {
		return usageErrorf("--jfr-duration must be at least 15s (three reads), not %s", j.Duration)
	}
	return nil
}

// apply adds the recording to the sampler's JVM options.
func (j *jfrFlags) apply(o sample.JVMOptions) sample.JVMOptions {
	if !j.Enabled {
		return o
	}
	o.JFR = sample.JFRLiveOptions{Enabled: true, Threshold: j.Threshold, Duration: j.Duration}
	return o
}
