//go:build linux && amd64

package analysis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/sample"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testservers"
)

// The native wait model on real servers nobody here wrote, from Debian's
// packages under the load generators people use with them
// (internal/testservers): every thread of every sample is labelled by the
// server's own thread roles (rules written from its source and debugger
// stacks, never from ctprof's verdicts), and ctprof's verdict in waits[]
// is scored against the label. On each server the top resource must be
// the one the load makes hot, with its average waiters within 25 % of the
// server's own count (or of the labels' count where the server keeps
// none); over the corpus precision and recall of "contention" are checked
// (below). docs/PERFORMANCE.md, "Accuracy of the native wait model",
// gives the figures and the command:
//
//	go test ./internal/analysis -run TestNativeServerCorpus -v
func TestNativeServerCorpus(t *testing.T) {
	servers := []struct {
		name  string
		start func(testing.TB) *testservers.Server
	}{
		{"mariadb", testservers.StartMariaDB},
		{"memcached", testservers.StartMemcached},
		{"redis", testservers.StartRedis},
		{"apache", testservers.StartApache},
		{"varnish", testservers.StartVarnish},
		{"rocksdb", testservers.StartRocksDB},
		{"haproxy", testservers.StartHAProxy},
	}
	var all nativeScore
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			srv := sv.start(t)
			sc := scoreNativeServer(t, srv)
			all.add(sc)
		})
	}
	t.Logf("corpus: %s", all)
	if all.labelled == 0 {
		t.Fatal("no labelled thread")
	}
	// Issue 34 asks for 95 % of both. The threads still missed are
	// those whose stack moved on every read in a sample and that were
	// never read in that wait before (docs/PERFORMANCE.md).
	assert.GreaterOrEqual(t, all.precision(), 0.95, "precision of contention over the corpus")
	assert.GreaterOrEqual(t, all.recall(), 0.95, "recall of contention over the corpus")
}

// nativeScore counts one server's (or the corpus's) labelled threads.
type nativeScore struct {
	tp, fp, fn, labelled, unknown int
	// confusion counts label → verdict.
	confusion map[string]int
}

func (c *nativeScore) add(o nativeScore) {
	c.tp += o.tp
	c.fp += o.fp
	c.fn += o.fn
	c.labelled += o.labelled
	c.unknown += o.unknown
	if c.confusion == nil {
		c.confusion = map[string]int{}
	}
	for k, v := range o.confusion {
		c.confusion[k] += v
	}
}

func (c nativeScore) precision() float64 {
	if c.tp+c.fp == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fp)
}

func (c nativeScore) recall() float64 {
	if c.tp+c.fn == 0 {
		return 1
	}
	return float64(c.tp) / float64(c.tp+c.fn)
}

func (c nativeScore) String() string {
	keys := make([]string, 0, len(c.confusion))
	for k := range c.confusion {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.confusion[k]))
	}
	return fmt.Sprintf("%d labelled thread-samples (%d unknown), contention precision %.3f recall %.3f (tp %d fp %d fn %d); label→verdict: %s",
		c.labelled, c.unknown, c.precision(), c.recall(), c.tp, c.fp, c.fn, strings.Join(parts, ", "))
}

// corpusSampleTime is how long each server is sampled, corpusInterval how
// often.
const (
	corpusSampleTime = 3 * time.Second
	corpusInterval   = 50 * time.Millisecond
)

// scoreNativeServer samples srv, scores every labelled thread of every
// sample and checks its top resource.
func scoreNativeServer(t *testing.T, srv *testservers.Server) nativeScore {
	t.Helper()
	smp, err := sample.NewSampler(sample.Options{PID: srv.PID, Interval: corpusInterval, Duration: corpusSampleTime, ExactWaits: sample.ExactOff})
	require.NoError(t, err)
	defer smp.Close()
	if srv.TopWaiters != nil {
		srv.TopWaiters() // the server's count from here on
	}
	a := New()
	sc := nativeScore{confusion: map[string]int{}}
	// Per sample, the futex words of the threads labelled with the top
	// resource's role, and of those labelled contention without a stack
	// (the rules could not name their role): a word the first kind waited
	// on anywhere in the run makes the second kind a waiter there too.
	type wordSample struct{ top, unnamed []uint64 }
	var perSample []wordSample
	_, err = smp.Run(context.Background(), func(s *snapshot.Snapshot) {
		a.Add(s)
		verdicts := map[int64]ThreadWait{}
		for _, w := range a.Summary().Waits {
			verdicts[w.TID] = w
		}
		var ws wordSample
		for i := range s.Threads {
			th := &s.Threads[i]
			want := testservers.Label{Verdict: testservers.Running, Role: "running"}
			if th.State != 'R' {
				want = srv.Label(th)
			}
			if want.Verdict == "" {
				sc.unknown++
				continue
			}
			got := testservers.Running
			if w, ok := verdicts[int64(th.TID)]; ok {
				got = w.Verdict
			}
			sc.labelled++
			sc.confusion[want.Verdict+"→"+got]++
			switch {
			case want.Verdict != testservers.Contention || srv.TopRole == nil:
			case srv.TopRole.MatchString(want.Role):
				ws.top = append(ws.top, th.SyscallArgs[0])
			case len(th.Stack) == 0:
				ws.unnamed = append(ws.unnamed, th.SyscallArgs[0])
			}
			switch {
			case want.Verdict == testservers.Contention && got == VerdictContention:
				sc.tp++
			case want.Verdict == testservers.Contention:
				sc.fn++
				t.Logf("missed: tid %d %s (%s): %s", th.TID, want.Role, th.Name, verdicts[int64(th.TID)].Reason)
			case got == VerdictContention:
				sc.fp++
				t.Logf("false contention: tid %d %s (%s): %s at %s", th.TID, want.Role, th.Name, verdicts[int64(th.TID)].Reason, verdicts[int64(th.TID)].Frame)
			}
		}
		perSample = append(perSample, ws)
	})
	require.NoError(t, err)
	truth := -1.0
	if srv.TopWaiters != nil {
		truth = srv.TopWaiters()
	}
	topWords := map[uint64]bool{}
	for _, ws := range perSample {
		for _, w := range ws.top {
			topWords[w], topWords[w^4] = true, true // a condition's two signal words
		}
	}
	labelled := make([]float64, 0, len(perSample))
	for _, ws := range perSample {
		n := len(ws.top)
		for _, w := range ws.unnamed {
			if topWords[w] {
				n++
			}
		}
		labelled = append(labelled, float64(n))
	}
	s := a.Summary()
	t.Logf("%s (%s, %s): %s", srv.Name, srv.Lang, srv.Shape, sc)
	checkTopResource(t, srv, s, truth, labelled)
	return sc
}

// checkTopResource checks that the top native resource is the one the
// load makes hot, with its average waiters within 25 % of the server's own
// count (truth ≥ 0), else of the threads labelled with the resource's role
// (Server.TopRole) per sample, with the contended threads the rules could
// not name for want of a stack that wait on a futex word a thread of that
// role waited on.
func checkTopResource(t *testing.T, srv *testservers.Server, s *Summary, truth float64, labelled []float64) {
	t.Helper()
	var top *ContentionSite
	for i := range s.ContentionSites {
		if s.ContentionSites[i].Native {
			top = &s.ContentionSites[i]
			break
		}
	}
	for i, cs := range s.ContentionSites {
		if i == 5 {
			break
		}
		t.Logf("  resource %d: %s avg %.2f peak %d", i+1, cs.ID, cs.AvgWaiters, cs.Waiters)
	}
	if srv.TopSite == nil {
		for _, f := range s.Findings {
			if f.Kind == FindingLockHotspot {
				assert.NotEqual(t, SeverityCritical, f.Severity, "%s: no contended resource expected, yet: %s", srv.Name, f.Summary)
			}
		}
		return
	}
	require.NotNil(t, top, "%s: no native resource", srv.Name)
	assert.Regexp(t, srv.TopSite, top.WaitFrame, "%s: the top resource", srv.Name)
	if truth < 0 {
		sum := 0.0
		for _, n := range labelled {
			sum += n
		}
		if len(labelled) > 0 {
			truth = sum / float64(len(labelled))
		}
	}
	t.Logf("%s: top resource %s avg %.2f waiters, truth %.2f", srv.Name, top.ID, top.AvgWaiters, truth)
	assert.InEpsilon(t, truth, top.AvgWaiters, 0.25, "%s: the top resource's average waiters", srv.Name)
	assert.NotRegexp(t, `0x[0-9a-f]{9,}`, top.ID, "%s: no runtime address in the key", srv.Name)
}
