package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// startDevProfiles writes Go profiles of ctprof itself when the developer
// asks for them in the environment: CTPROF_CPUPROFILE=FILE (a CPU profile
// of the whole run) and CTPROF_HEAPPROFILE=FILE (the heap at the end, with
// every allocation since the start: `go tool pprof -sample_index
// alloc_space`). They are how docs/PERFORMANCE.md's figures were
// explained. The files are created new (O_EXCL): an existing path is an
// error, not overwritten. The returned function stops and writes them.
func startDevProfiles(errOut io.Writer) func() {
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
