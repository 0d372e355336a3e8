package follow_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/follow"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// bigDump is a 4,000-thread HotSpot dump with deep stacks: half the
// threads queue on 20 monitors, the others sleep.
func bigDump(at time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nFull thread dump OpenJDK 64-Bit Server VM (17.0.8+7-LTS mixed mode, sharing):\n\n", at.Format("2006-01-02 15:04:05"))
	for i := range 4000 {
		fmt.Fprintf(&b, "\"worker-%d\" #%d prio=5 os_prio=0 cpu=%d.00ms elapsed=100.00s tid=0x%x nid=0x%x ", i, i+20, i, 0x7f0000000000+i*0x1000, 1000+i)
		if i%2 == 0 {
			lock := i % 40
			if i < 40 {
				b.WriteString("runnable  [0x0]\n   java.lang.Thread.State: RUNNABLE\n")
				fmt.Fprintf(&b, "\tat com.example.Hot%d.work(Hot.java:10)\n\t- locked <0x%016x> (a com.example.Hot%d)\n", lock/2, 0x100000+lock, lock/2)
			} else {
				b.WriteString("waiting for monitor entry  [0x0]\n   java.lang.Thread.State: BLOCKED (on object monitor)\n")
				fmt.Fprintf(&b, "\tat com.example.Hot%d.work(Hot.java:10)\n\t- waiting to lock <0x%016x> (a com.example.Hot%d)\n", lock/2, 0x100000+lock-lock%2, lock/2)
			}
		} else {
			b.WriteString("waiting on condition  [0x0]\n   java.lang.Thread.State: TIMED_WAITING (sleeping)\n\tat java.lang.Thread.sleep(Native Method)\n")
		}
		for f := range 30 {
			fmt.Fprintf(&b, "\tat com.example.layer%d.Service.call(Service.java:%d)\n", f, f+1)
		}
		b.WriteString("\tat java.lang.Thread.run(java.base@17.0.8/Thread.java:833)\n\n")
	}
	b.WriteString("JNI global refs: 10, weak refs: 0\n\n")
	return b.String()
}

// BenchmarkFollowChange4000Threads is what analyze --follow adds per dump
// of a big JVM: the Summary after the dump and its comparison with the
// previous one, after 60 dumps.
//
//	go test -run '^$' -bench FollowChange ./internal/follow/
func BenchmarkFollowChange4000Threads(b *testing.B) {
	agg := analysis.New()
	var tr follow.Tracker
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var last *snapshot.Snapshot
	for i := range 60 {
		ds, err := threaddump.ParseString(bigDump(t0.Add(time.Duration(i) * 10 * time.Second)))
		if err != nil || len(ds) != 1 || len(ds[0].Threads) != 4000 {
			b.Fatalf("dump: %v", err)
		}
		last = &snapshot.Snapshot{Time: ds[0].Time, Source: "big.log", Dump: ds[0]}
		agg.Add(last)
	}
	b.ResetTimer()
	for range b.N {
		_ = tr.Next(agg.Summary(), "big.log", last.Time)
	}
}
