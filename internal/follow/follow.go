// Package follow says what each new dump of a followed log changed: the
// findings of the run that appeared or went away, and the resources threads
// wait on now. It reads only the Aggregator's Summary after each dump, as
// every sink does; analyze --follow prints its Changes (report.FollowText,
// or JSON Lines).
package follow

import (
	"sort"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
)

// Change is what one dump changed, one JSON Lines record of
// analyze --follow --format json (docs/json.md).
type Change struct {
	Event  string `json:"event"` // "dump"
	Dump   int    `json:"dump"`  // how many dumps so far, this one included
	Source string `json:"source"`
	// Time is the dump's own time (the line before its header), nil when
	// it has none.
	Time    *time.Time     `json:"time"`
	Threads int            `json:"threads"`
	States  map[string]int `json:"states"`
	// Appeared and Gone are the findings of the run that this dump made
	// and undid; Findings counts those that hold now.
	Appeared []analysis.Finding `json:"appeared"`
	Gone     []analysis.Finding `json:"gone"`
	Findings int                `json:"findings"`
	// Resources are the resources threads wait on in this dump, most
	// waiters first.
	Resources []Resource `json:"resources"`
}

// Resource is a contention site (analysis.ContentionSite) with waiters in
// the latest dump.
type Resource struct {
	ID             string  `json:"id"`
	Kind           string  `json:"kind"`
	Class          string  `json:"class"`
	WaitFrame      string  `json:"wait_frame"`
	CurrentWaiters int     `json:"current_waiters"`
	AvgWaiters     float64 `json:"avg_waiters"`
	DumpsSeen      int     `json:"dumps_seen"`
}

// Tracker keeps what the next dump is compared with: the findings of the
// run so far, by what they are about. It holds no dump.
type Tracker struct {
	keys     []string
	findings map[string]analysis.Finding
}

// Next returns what the latest dump changed, from the Summary after it;
// source names the input and at is the dump's own time (zero: none).
func (t *Tracker) Next(s *analysis.Summary, source string, at time.Time) Change {
	ch := Change{Event: "dump", Dump: s.Dumps, Source: source, Threads: s.Threads, States: s.States,
		Appeared: []analysis.Finding{}, Gone: []analysis.Finding{}, Resources: []Resource{}}
	if !at.IsZero() {
		ch.Time = &at
	}
	keys, findings := []string{}, map[string]analysis.Finding{}
	for _, f := range s.Findings {
		k := analysis.FindingKey(f)
		if _, dup := findings[k]; dup {
			continue
		}
		keys, findings[k] = append(keys, k), f
		if _, ok := t.findings[k]; !ok {
			ch.Appeared = append(ch.Appeared, f)
		}
	}
	for _, k := range t.keys {
		if _, ok := findings[k]; !ok {
			ch.Gone = append(ch.Gone, t.findings[k])
		}
	}
	t.keys, t.findings = keys, findings
	ch.Findings = len(keys)
	for _, c := range s.ContentionSites {
		if c.CurrentWaiters > 0 {
			ch.Resources = append(ch.Resources, Resource{ID: c.ID, Kind: c.Kind, Class: c.Class, WaitFrame: c.WaitFrame, CurrentWaiters: c.CurrentWaiters, AvgWaiters: c.AvgWaiters, DumpsSeen: c.DumpsSeen})
		}
	}
	sort.SliceStable(ch.Resources, func(i, j int) bool { return ch.Resources[i].CurrentWaiters > ch.Resources[j].CurrentWaiters })
	return ch
}
