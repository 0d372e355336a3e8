package procs

import (
	"testing"

	"github.com/shirou/gopsutil/v4/process"
)

// BenchmarkList lists the live /proc as `ctprof ps` and --name do.
func BenchmarkList(b *testing.B) {
	l := New("")
	for b.Loop() {
		if _, err := l.List(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListGopsutil is the same listing through gopsutil's accessors,
// as `ctprof ps` read it before: the figure List is measured against.
func BenchmarkListGopsutil(b *testing.B) {
	for b.Loop() {
		procs, err := process.Processes()
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range procs {
			if _, err := p.Name(); err != nil {
				continue
			}
			_, _ = p.NumThreads()
			_, _ = p.Username()
			_, _ = p.Cmdline()
		}
	}
}
