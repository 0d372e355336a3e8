package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/sample"
)

// jvmFlags are the thread-dump flags of every command that samples live
// JVMs (attach, serve, top, scale).
type jvmFlags struct {
	NoDumps      bool
	DumpInterval time.Duration
	PauseBudget  float64 // percent
	DumpMode     string
	Locks        bool
	DumpTimeout  time.Duration
}

func (j *jvmFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&j.NoDumps, "no-dumps", false, "JVMs: sample through /proc and hsperfdata only, no thread dumps")
	f.DurationVar(&j.DumpInterval, "dump-interval", 0, "JVMs: shortest time between thread dumps (0: every sample, within --pause-budget)")
	f.Float64Var(&j.PauseBudget, "pause-budget", 0.5, "JVMs: largest share of the JVM's time, in percent (above 0, below 100), that ctprof's dumps may stop it for")
	f.StringVar(&j.DumpMode, "dump-mode", "print", "JVMs: print (Thread.print, joined with OS threads) or file (Thread.dump_to_file, JDK 21+)")
	f.BoolVar(&j.Locks, "locks", false, "JVMs: include owners of java.util.concurrent locks (-l; scans the heap at the safepoint)")
	f.DurationVar(&j.DumpTimeout, "dump-timeout", jvm.DefaultTimeout, "JVMs: longest wait for the JVM to answer a request (attach handshake, thread dump, JFR start/read/stop; a first JFR start, which sets Flight Recorder up in the JVM, gets at least 30s); one it does not answer in time is abandoned, sampling goes on through /proc, and no other is sent until the JVM answers again")
}

func (j *jvmFlags) validate() error {
	if j.DumpMode != "print" && j.DumpMode != "file" {
		return usageErrorf("--dump-mode must be print or file, not %q", j.DumpMode)
	}
	// Written so NaN fails too: every comparison with NaN is false, and a
	// NaN budget would switch the pause limit off.
	if !(j.PauseBudget > 0 && j.PauseBudget < 100) {
		return usageErrorf("--pause-budget is a percentage above 0 and below 100, not %v", j.PauseBudget)
	}
	if j.DumpTimeout <= 0 {
		return usageErrorf("--dump-timeout must be positive, not %s", j.DumpTimeout)
	}
	if j.DumpInterval < 0 {
		return usageErrorf("--dump-interval must not be negative (0: every sample, within --pause-budget), not %s", j.DumpInterval)
	}
	return nil
}

func (j *jvmFlags) options() sample.JVMOptions {
	return sample.JVMOptions{NoDumps: j.NoDumps, DumpEvery: j.DumpInterval, PauseBudget: j.PauseBudget / 100, DumpToFile: j.DumpMode == "file", Locks: j.Locks, DumpTimeout: j.DumpTimeout}
}

// liveJVMFlags are jvmFlags and the Flight Recorder flags (jfrflags.go),
// for the commands that watch one live run: attach, serve and top. (scale
// profiles each level with dumps only.)
type liveJVMFlags struct {
	jvmFlags
	JFR jfrFlags
}

func (l *liveJVMFlags) register(f *pflag.FlagSet) {
	l.jvmFlags.register(f)
	l.JFR.register(f)
}

func (l *liveJVMFlags) validate() error {
	if err := l.jvmFlags.validate(); err != nil {
		return err
	}
	return l.JFR.validate()
}

func (l *liveJVMFlags) options() sample.JVMOptions { return l.JFR.apply(l.jvmFlags.options()) }
