package sample_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// A JVM without shared hsperfdata (-XX:+PerfDisableSharedMem, shipped by
// some databases, or -XX:-UsePerfData) is still a JVM that attach can dump,
// as jcmd shows. The sampler recognises it by its libjvm mapping, dumps it,
// and says which counters are missing, at the start and in the summary.
func TestSamplerDumpsJVMWithoutPerfData(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		for _, flag := range []string{"-XX:+PerfDisableSharedMem", "-XX:-UsePerfData"} {
			t.Run(jdk.Name+flag, func(t *testing.T) {
				p := testjvm.StartWith(t, jdk, "SyncSingleton", testjvm.Options{JVMFlags: []string{flag}}, "6")
				// The truth, from jcmd on the same process: threads are
				// queued on the singleton's monitor.
				truth := p.WaitForDump(t, 20*time.Second, func(d []byte) bool {
					return testjvm.CountLines(d, "- waiting to lock", "(a SyncSingleton)") > 0
				})
				jd, err := threaddump.ParseBytes(truth)
				require.NoError(t, err)
				require.NotEmpty(t, jd[0].Locks())

				s, err := sample.NewSampler(sample.Options{PID: p.PID, Interval: 100 * time.Millisecond, Duration: 20 * time.Second})
				require.NoError(t, err)
				defer s.Close()
				assert.Equal(t, snapshot.KindJVM, s.Target().Kind)
				assert.Equal(t, "SyncSingleton", s.Target().Name, "the main class, from the command line")
				notes := strings.Join(s.Notes(), "\n")
				assert.Contains(t, notes, "no hsperfdata file (it runs with "+flag+")")
				assert.Contains(t, notes, "no JVM counters")

				agg := analysis.New()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				blocked := 0
				_, err = s.Run(ctx, func(sn *snapshot.Snapshot) {
					agg.Add(sn)
					assert.Nil(t, sn.JVM, "no counters without hsperfdata")
					if sn.Dump != nil {
						require.NotNil(t, sn.DumpCost)
						require.NotNil(t, sn.DumpLocks, "worked out while the snapshot was finished")
						assert.Equal(t, sn.Dump.Locks(), sn.DumpLocks, "the dump's own lock table")
						for _, l := range sn.DumpLocks {
							if l.Lock.Class == "SyncSingleton" {
								blocked += len(l.Waiters)
							}
						}
						if blocked > 0 {
							cancel()
						}
					}
				})
				require.NoError(t, err)
				assert.Positive(t, blocked, "a dump through attach shows the threads queued on SyncSingleton, as jcmd does")
				assert.False(t, p.Exited())

				sum := agg.Summary()
				assert.Contains(t, strings.Join(sum.Warnings, "\n"), "no JVM counters")
				require.NotEmpty(t, sum.Locks)
				assert.Equal(t, "SyncSingleton", sum.Locks[0].Class)
			})
		}
	}
}
