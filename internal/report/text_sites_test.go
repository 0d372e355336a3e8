package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
)

func TestTextContentionSites(t *testing.T) {
	tests := []struct {
		name  string
		sites []analysis.ContentionSite
		want  []string
		not   []string
	}{
		{"striped", []analysis.ContentionSite{{Kind: "monitor", Class: "app.Stripe", WaitFrame: "app.S.enter(S.java:3)", Instances: 64, PeakInstances: 64, Waiters: 64, MaxInstanceWaiters: 1, Striped: true}},
			[]string{"RESOURCES", "64 instances (up to 64 at once), at most 1 waiting on one; striped: one waiter per instance, each behind its own holder, no hot lock"}, nil},
		{"two hot instances", []analysis.ContentionSite{{Kind: "monitor", Class: "app.Account", WaitFrame: "app.A.enter(A.java:9)", Instances: 2, PeakInstances: 2, Waiters: 8, MaxInstanceWaiters: 5}},
			[]string{"8 waiting  monitor app.Account at app.A.enter(A.java:9)", "one queue at the resource"}, []string{"striped"}},
		// A latch per waiter: one queue, the pool and what the rest of it runs.
		{"convoy through a latch per waiter", []analysis.ContentionSite{{Kind: "synchronizer", Class: "db.Latch$Sync", WaitFrame: "db.Session.execute(Session.java:9)", Instances: 41, PeakInstances: 15, Waiters: 15, MaxInstanceWaiters: 1, Ownerless: true,
			Pool: "updater-N", PoolThreads: 16, PoolWaiting: 15, OthersRun: []analysis.FrameCount{{Frame: "db.Table.update(Table.java:3)", Samples: 1}}}},
			[]string{"15 waiting  synchronizer db.Latch$Sync at db.Session.execute(Session.java:9)", "one queue at the resource", "15 of 16 updater-N threads wait here; others work in db.Table.update(Table.java:3)", "nobody holds it: they wait for a signal or a hand-off"}, []string{"striped"}},
		// The resource leads even with one instance.
		{"single instance", []analysis.ContentionSite{{Kind: "monitor", Class: "app.One", WaitFrame: "x", Instances: 1, PeakInstances: 1, Waiters: 3, MaxInstanceWaiters: 3}},
			[]string{"RESOURCES", "one instance"}, []string{"striped"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, Text(&b, &analysis.Summary{Dumps: 1, ContentionSites: tc.sites}, TextOptions{}))
			for _, w := range tc.want {
				assert.Contains(t, b.String(), w)
			}
			for _, n := range tc.not {
				assert.NotContains(t, b.String(), n)
			}
		})
	}
}
