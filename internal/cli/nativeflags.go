package cli

import (
	"github.com/spf13/pflag"

	"github.com/ctprof/ctprof/internal/sample"
)

// nativeFlags are the flags of a native target's live sampling.
type nativeFlags struct {
	exactWaits   string
	tree, noTree bool
}

func (n *nativeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&n.exactWaits, "exact-waits", "auto", "native targets: count every futex wait with the kernel's tracepoints (needs root or CAP_PERFMON): auto, on or off")
	f.BoolVar(&n.tree, "tree", false, "native targets: sample the target and all its descendants as one server (PostgreSQL's backends, nginx's workers), followed as they start and exit; by default on when the target has a child running its own executable")
	f.BoolVar(&n.noTree, "no-tree", false, "native targets: sample the target process alone, not its descendants")
}

// treeMode is the sampler's setting for --tree and --no-tree.
func (n *nativeFlags) treeMode() sample.TreeMode {
	switch {
	case n.tree:
		return sample.TreeOn
	case n.noTree:
		return sample.TreeOff
	}
	return sample.TreeAuto
}

// validate checks the flags' values.
func (n *nativeFlags) validate() error {
	if n.tree && n.noTree {
		return usageErrorf("--tree and --no-tree contradict each other: give one")
	}
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
