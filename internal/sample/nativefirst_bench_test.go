package sample

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/testnative"
)

// BenchmarkFirstNativeSummary1000Threads times what a user waits for the
// first summary of a native process whose 1,000 threads queue on two
// mutexes (testdata/c/stacks.c with 500 waiters on each): `ctprof attach
// PID --count 1 --format json`, a fresh process each time (so the unwind
// tables and symbols are read cold), every waiter's stack unwound from
// /proc. Budget: under 1 s (docs/PERFORMANCE.md).
//
//	go test ./internal/sample -run '^$' -bench FirstNativeSummary1000Threads -benchtime 5x
func BenchmarkFirstNativeSummary1000Threads(b *testing.B) {
	bin := buildCtprof(b)
	p := testnative.Start(b, "stacks", "500")
	var walls []float64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		out, err := exec.Command(bin, "attach", strconv.Itoa(p.PID), "--count", "1", "--format", "json").Output()
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("ctprof attach: %v", err)
		}
		var sum struct {
			Locks []struct {
				WaitFrame  *string `json:"wait_frame"`
				WaitFrames []struct {
					Samples int `json:"samples"`
				} `json:"wait_frames"`
			} `json:"locks"`
		}
		if err := json.Unmarshal(out, &sum); err != nil {
			b.Fatalf("summary: %v", err)
		}
		stacks := 0
		for _, l := range sum.Locks {
			for _, f := range l.WaitFrames {
				stacks += f.Samples
			}
		}
		if stacks < 900 {
			b.Fatalf("only %d of the ~1,000 waiters had their stacks unwound: %.300s", stacks, out)
		}
		walls = append(walls, wall.Seconds())
	}
	sort.Float64s(walls)
	b.ReportMetric(walls[len(walls)/2], "s/first-summary")
	b.ReportMetric(walls[len(walls)-1], "s/slowest")
}
