package cli

import (
	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/sample"
)

// nativeFlags are the flags of a native target's live sampling.
type nativeFlags struct {
	exactWaits string
}

func (n *nativeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&n.exactWaits, "exact-waits", "auto", "native targets: count every futex wait with the kernel's tracepoints (needs root or CAP_PERFMON): auto, on or off")
}

// validate checks the flags' values.
func (n *nativeFlags) validate() error {
	switch n.exactWaits {
	case "auto", "on", "off":
		return nil
	}
	return usageErrorf("--exact-waits must be auto, on or off, not %q", n.exactWaits)
}

// mode is the sampler's setting for --exact-waits.
func (n *nativeFlags) mode() sample.ExactWaits {
	switch n.exactWaits {
	case "on":
		return sample.ExactOn
	case "off":
		return sample.ExactOff
	}
	return sample.ExactAuto
}
