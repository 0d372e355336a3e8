package scale

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// AllowedCPUs lists the CPUs ctprof itself may run on, ascending: the
// levels of a CPU scaling run are prefixes of this list.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// startBound starts cmd bound to cpus from its first instruction. Affinity
// is inherited at fork from the forking thread, so the goroutine locks
// itself to one OS thread, narrows that thread's affinity, starts the child
// and restores the thread: no other goroutine runs there meanwhile, and
// ctprof's other threads keep all their CPUs. (Letting the thread die
// instead of restoring it would fire the child's parent-death signal, which
// Linux ties to the forking thread.)
func startBound(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved, want unix.CPUSet
	if err := unix.SchedGetaffinity(0, &saved); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	for _, c := range cpus {
		want.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		return fmt.Errorf("bind to CPUs %v: %w", cpus, err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &saved); err != nil {
		// The narrowed thread must not run other goroutines: leave this
		// goroutine locked to it.
		runtime.LockOSThread()
		return fmt.Errorf("restore CPU affinity: %w", err)
	}
	return startErr
}
