// Package self is about ctprof's own process, not its target: Go profiles
// of ctprof itself for its developers, and the garbage collector's setting
// for a one-sample run.
package self

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
)

// StartProfiles writes Go profiles of ctprof itself when the developer
// asks for them in the environment: CTPROF_CPUPROFILE=FILE (a CPU profile
// of the whole run) and CTPROF_HEAPPROFILE=FILE (the heap at the end, with
// every allocation since the start: `go tool pprof -sample_index
// alloc_space`). They are how docs/PERFORMANCE.md's figures were
// explained. The files are created new (O_EXCL): an existing path is an
// error, not overwritten. The returned function stops and writes them.
func StartProfiles(errOut io.Writer) func() {
	cpuPath, heapPath := os.Getenv("CTPROF_CPUPROFILE"), os.Getenv("CTPROF_HEAPPROFILE")
	if cpuPath == "" && heapPath == "" {
		return func() {}
	}
	create := func(path string) *os.File {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			fmt.Fprintf(errOut, "ctprof: profile of ctprof itself: %v\n", err)
			return nil
		}
		return f
	}
	var cpu *os.File
	if cpuPath != "" {
		if cpu = create(cpuPath); cpu != nil {
			if err := pprof.StartCPUProfile(cpu); err != nil {
				fmt.Fprintf(errOut, "ctprof: profile of ctprof itself: %v\n", err)
				cpu.Close()
				cpu = nil
			}
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if heapPath == "" {
			return
		}
		if f := create(heapPath); f != nil {
			runtime.GC()
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				fmt.Fprintf(errOut, "ctprof: profile of ctprof itself: %v\n", err)
			}
			f.Close()
		}
	}
}

// CollectLessForOneSample lets the heap of a one-sample run grow to five
// times its live data before the garbage collector runs, within 256 MB
// (past it the collector runs as it must), unless GOGC or GOMEMLIMIT say
// otherwise. Such a run lives for one sample, whose dump is parsed and
// aggregated right after it arrives: a collection then took the second
// CPU from the parse, or slowed it with its write barriers, for garbage
// the exit drops anyway. The returned function restores the settings.
func CollectLessForOneSample() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(limit, oneSampleHeapLimit))
	percent := debug.SetGCPercent(400)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// oneSampleHeapLimit bounds the heap CollectLessForOneSample allows: well
// within the 512 MB that no input may make ctprof exceed.
const oneSampleHeapLimit = 256 << 20
