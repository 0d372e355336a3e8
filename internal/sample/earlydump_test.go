package sample_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// startLoggingDumps starts ManyThreads with n threads and the JVM's
// safepoint log (Process.ThreadDumpsLogged). jcmd dumps it once
// first (the truth the tests compare with), which also starts its attach
// listener: early dumps go only to a JVM whose listener runs.
func startLoggingDumps(t *testing.T, jdk testjvm.JDK, n string) (*testjvm.Process, []byte) {
	t.Helper()
	p := testjvm.StartWith(t, jdk, "ManyThreads", testjvm.Options{SafepointLog: true}, n)
	truth := p.WaitForDump(t, 20*time.Second, func(d []byte) bool { return bytes.Contains(d, []byte("conn-1-reader")) })
	return p, truth
}

// A one-shot's dump asked for while the binary started (jvm.EarlyDump,
// what cmd/ctprof does for `attach PID --count 1`) is the first tick's
// dump: the JVM prints its threads once, the tick's counters are the ones
// read before that request (the dump's safepoint comes after them), and
// the dump lists the threads jcmd lists.
func TestSamplerTakesOverTheEarlyDump(t *testing.T) {
	for _, jdk := range testjvm.All(t) {
		t.Run(jdk.Name, func(t *testing.T) {
			p, truth := startLoggingDumps(t, jdk, "60")
			before := p.ThreadDumpsLogged(t, 1)
			jd, err := threaddump.ParseBytes(truth)
			require.NoError(t, err)

			jvm.StartEarlyDump("/proc", p.PID)
			s, err := sample.NewSampler(sample.Options{PID: p.PID, Count: 1})
			require.NoError(t, err)
			defer s.Close()
			assert.Empty(t, s.Notes())
			snap, err := s.Take(context.Background())
			require.NoError(t, err)

			require.NotNil(t, snap.DumpCost)
			assert.True(t, snap.DumpCost.Early, "the early request's dump")
			assert.Positive(t, snap.DumpCost.Pause, "its pause, from the counters around it")
			require.NotNil(t, snap.Dump)
			assert.Equal(t, threadNames(jd[0]), threadNames(snap.Dump), "the threads jcmd lists")
			require.NotNil(t, snap.JVM)
			info, err := jvm.Inspect("/proc", p.PID)
			require.NoError(t, err)
			pd, err := info.ReadPerfData()
			require.NoError(t, err)
			assert.Greater(t, pd.Counters().Safepoints, snap.JVM.Safepoints, "the tick's counters precede the dump's safepoint")

			assert.Equal(t, before+1, p.ThreadDumpsLogged(t, before+1), "one dump, not a second one of the sampler's own")
			time.Sleep(200 * time.Millisecond) // a second dump would be logged by now
			assert.Equal(t, before+1, p.ThreadDumpsLogged(t, before+1))
		})
	}
}

// Options that ask for another kind of dump (here -l) do not take over
// the early one: the sampler takes its own and says the JVM paused once
// for nothing. The binary never gets there (it asks early only for a
// plain one-shot), but the sampler does not rely on that.
func TestSamplerLeavesAnEarlyDumpOfAnotherKind(t *testing.T) {
	jdk := testjvm.JDK17(t)
	p, _ := startLoggingDumps(t, jdk, "20")
	before := p.ThreadDumpsLogged(t, 1)

	jvm.StartEarlyDump("/proc", p.PID)
	s, err := sample.NewSampler(sample.Options{PID: p.PID, Count: 1, JVM: sample.JVMOptions{Locks: true}})
	require.NoError(t, err)
	defer s.Close()
	assert.Contains(t, strings.Join(s.Notes(), "\n"), "a thread dump asked for while ctprof started was not used")
	snap, err := s.Take(context.Background())
	require.NoError(t, err)
	require.NotNil(t, snap.DumpCost)
	assert.False(t, snap.DumpCost.Early)
	require.NotNil(t, snap.Dump)
	assert.Equal(t, before+2, p.ThreadDumpsLogged(t, before+2), "the early dump and the sampler's own")

	// An early dump of a process that is not a JVM asks nothing.
	jvm.StartEarlyDump("/proc", os.Getpid())
	s2, err := sample.NewSampler(sample.Options{PID: os.Getpid(), Count: 1})
	require.NoError(t, err)
	defer s2.Close()
	assert.Empty(t, s2.Notes())
	assert.Nil(t, jvm.TakeEarlyDump(os.Getpid()), "taken over by the sampler")
}

func threadNames(d *threaddump.Dump) []string {
	var names []string
	for _, th := range d.Threads {
		if strings.HasPrefix(th.Name, "conn-") {
			names = append(names, th.Name)
		}
	}
	return names
}

// Ctrl-C while the JVM does not answer the early request (here, stopped
// by SIGSTOP after its listener started) ends the wait: the tick goes on
// without a dump rather than wait for the JVM or ask it again.
func TestSamplerStopsWaitingForAnEarlyDump(t *testing.T) {
	p, _ := startLoggingDumps(t, testjvm.JDK17(t), "20")
	require.NoError(t, syscall.Kill(p.PID, syscall.SIGSTOP))
	defer syscall.Kill(p.PID, syscall.SIGCONT)
	// SIGSTOP takes effect thread by thread: until every thread is
	// stopped, the attach listener may still answer (a clean-clone CI run
	// got the dump 4 ms later).
	require.Eventually(t, func() bool {
		ts := testjvm.ThreadStates(p.PID)
		for _, th := range ts {
			if th.State != 'T' && th.State != 't' {
				return false
			}
		}
		return len(ts) > 0
	}, 10*time.Second, 10*time.Millisecond, "every thread of the JVM stopped")

	jvm.StartEarlyDump("/proc", p.PID)
	s, err := sample.NewSampler(sample.Options{PID: p.PID, Count: 1})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	snap, err := s.Take(ctx)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "the wait ended with the context")
	assert.Nil(t, snap.DumpCost, "no dump: the JVM never answered")
	assert.NotEmpty(t, snap.Threads, "the tick's /proc sweep is there")
}
