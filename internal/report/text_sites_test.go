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
			[]string{"CONTENTION SITES", "64 instances (up to 64 at once), at most 1 waiting on one; striped: one waiter per instance, no hot lock"}, nil},
		{"two hot instances", []analysis.ContentionSite{{Kind: "monitor", Class: "app.Account", WaitFrame: "app.A.enter(A.java:9)", Instances: 2, PeakInstances: 2, Waiters: 8, MaxInstanceWaiters: 5}},
			[]string{"8 waiting  monitor app.Account at app.A.enter(A.java:9)", "several contended instances"}, []string{"striped"}},
		// One instance per site adds nothing to the lock table: no section.
		{"single instances", []analysis.ContentionSite{{Kind: "monitor", Class: "app.One", WaitFrame: "x", Instances: 1, PeakInstances: 1, Waiters: 3, MaxInstanceWaiters: 3}},
			nil, []string{"CONTENTION SITES"}},
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
