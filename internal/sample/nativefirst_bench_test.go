package sample

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strconv"
	"strings"
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
	benchFirstNativeSummary(b, 500, 900)
}

// BenchmarkFirstNativeSummary10000Threads is the same for a server of
// 10,000 threads (5,000 waiters on each mutex). Issue 34's budget: the
// first summary still within 1 s. A first sample unwinds at most
// maxUnwindsPerTick stacks afresh; the benchmark fails when fewer waiters
// than that had a stack, or when either mutex's resource is missing.
//
//	go test ./internal/sample -run '^$' -bench FirstNativeSummary10000Threads -benchtime 5x
func BenchmarkFirstNativeSummary10000Threads(b *testing.B) {
	benchFirstNativeSummary(b, 5000, maxUnwindsPerTick)
}

// benchFirstNativeSummary starts stacks.c with waiters threads on each of
// its two mutexes and times fresh `ctprof attach --count 1` runs; each
// must have unwound at least minStacks waiters' stacks.
func benchFirstNativeSummary(b *testing.B, waiters, minStacks int) {
	bin := buildCtprof(b)
	p := testnative.Start(b, "stacks", strconv.Itoa(waiters))
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
			Sites []struct {
				Native    bool   `json:"native"`
				Waiters   int    `json:"waiters"`
				WaitFrame string `json:"wait_frame"`
			} `json:"contention_sites"`
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
		if stacks < minStacks {
			b.Fatalf("only %d of the ~%d waiters had their stacks unwound: %.300s", stacks, 2*waiters, out)
		}
		sites := 0
		for _, cs := range sum.Sites {
			if cs.Native && cs.Waiters >= waiters*9/10 && (strings.HasPrefix(cs.WaitFrame, "post_entry") || strings.HasPrefix(cs.WaitFrame, "take_global")) {
				sites++
			}
		}
		if sites != 2 {
			b.Fatalf("%d of the 2 mutexes' resources with ~%d waiters each: %.600s", sites, waiters, out)
		}
		walls = append(walls, wall.Seconds())
	}
	sort.Float64s(walls)
	b.ReportMetric(walls[len(walls)/2], "s/first-summary")
	b.ReportMetric(walls[len(walls)-1], "s/slowest")
}
