package cli

import (
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

const jfrFlagsHelp = `JVMs: --jfr also records the JVM's lock waits with Java Flight Recorder
(JDK 11+): monitor enters, Object.wait, parks, virtual-thread pinning and GC,
each with its exact duration, stack and the thread that held the lock before.
ctprof starts a recording named ctprof-<its pid>-<n> over the attach socket
(no jcmd), with only those events and waits of at least --jfr-threshold, reads
its new data every 5 s (a dump into a private directory in the JVM's /tmp,
removed after reading) and stops it when the run ends, also after Ctrl-C. The
recording is bounded (2 minutes, 32 MB) and renewed while ctprof runs, so if
ctprof is killed it ends by itself within 2 minutes (or the run's --duration
and 30 s, if shorter) and writes no file; the next ctprof that records the
JVM removes the private directory a killed one left. A recording of the JVM's own (a
user's) at a lower threshold makes the JVM record shorter waits for both:
ctprof leaves those out, and says so once.`

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
