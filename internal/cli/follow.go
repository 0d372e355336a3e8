package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/source"
)

// followResources bounds the resources printed after each dump.
const followResources = 5

// followRun is analyze --follow: one Aggregator over a log that is still
// being written. After each complete dump it prints what changed; when
// SIGINT or SIGTERM ends it (or a followed pipe closes), it prints the
// summary of every dump seen and writes the output files, as analyze does.
func followRun(ctx context.Context, opts *AnalyzeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := opts.Files[0]
	src, err := source.Follow(name, opts.IO.In)
	if err != nil {
		return err
	}
	defer src.Close()

	agg := analysis.New()
	var prev *followState
	var werr error
	n, err := agg.Drain(ctx, src, func(s *snapshot.Snapshot) {
		sum := agg.Summary()
		cur := followStateOf(sum)
		ch := cur.since(prev)
		ch.Dump, ch.Source, ch.Time = sum.Dumps, src.Name(), dumpTime(s)
		prev = cur
		if werr == nil {
			werr = writeFollowChange(opts.IO.Out, ch, opts.Format)
		}
	})
	if werr != nil {
		return werr
	}
	if n == 0 {
		if ctx.Err() != nil {
			// Ended by the user before any dump: nothing to sum up.
			fmt.Fprintf(opts.IO.ErrOut, "ctprof: no complete thread dump in %s yet\n", src.Name())
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%s: no thread dump", src.Name())
		}
		return err
	}
	if opts.Format == "json" {
		if err := json.NewEncoder(opts.IO.Out).Encode(struct {
			Event   string            `json:"event"`
			Summary *analysis.Summary `json:"summary"`
		}{"summary", agg.Summary()}); err != nil {
			return fmt.Errorf("write JSON summary: %w", err)
		}
	} else {
		fmt.Fprintln(opts.IO.Out)
		if err := writeSummary(opts.IO.Out, agg, "text", opts.Top); err != nil {
			return err
		}
	}
	if err := opts.Out.write(opts.IO.ErrOut, agg, []string{src.Name()}); err != nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "ctprof: %v (the summary covers the dumps read before it)\n", err)
		return silentError{code: ExitFailure}
	}
	return nil
}

func dumpTime(s *snapshot.Snapshot) *time.Time {
	if s.Time.IsZero() {
		return nil
	}
	t := s.Time
	return &t
}

// followChange is what one dump changed, one JSON Lines record of
// analyze --follow --format json (docs/json.md).
type followChange struct {
	Event  string `json:"event"` // "dump"
	Dump   int    `json:"dump"`  // how many dumps so far, this one included
	Source string `json:"source"`
	// Time is the dump's own time (the line before its header), null when
	// it has none.
	Time    *time.Time     `json:"time"`
	Threads int            `json:"threads"`
	States  map[string]int `json:"states"`
	// Appeared and Gone are the findings of the run that this dump made
	// and undid; Findings counts those that hold now.
	Appeared []analysis.Finding `json:"appeared"`
	Gone     []analysis.Finding `json:"gone"`
	Findings int                `json:"findings"`
	// Resources are the resources threads wait for in this dump, most
	// waiters first.
	Resources []followResource `json:"resources"`
}

type followResource struct {
	ID             string  `json:"id"`
	Kind           string  `json:"kind"`
	Class          string  `json:"class"`
	WaitFrame      string  `json:"wait_frame"`
	CurrentWaiters int     `json:"current_waiters"`
	AvgWaiters     float64 `json:"avg_waiters"`
	DumpsSeen      int     `json:"dumps_seen"`
}

// followState is what the next dump is compared with: the findings of the
// run so far by subject, and the resources waited on now.
type followState struct {
	keys      []string
	findings  map[string]analysis.Finding
	threads   int
	states    map[string]int
	resources []followResource
}

func followStateOf(s *analysis.Summary) *followState {
	st := &followState{findings: map[string]analysis.Finding{}, threads: s.Threads, states: s.States}
	for _, f := range s.Findings {
		k := findingKey(f, s)
		if _, dup := st.findings[k]; dup {
			continue
		}
		st.keys = append(st.keys, k)
		st.findings[k] = f
	}
	for _, c := range s.ContentionSites {
		if c.CurrentWaiters > 0 {
			st.resources = append(st.resources, followResource{ID: c.ID, Kind: c.Kind, Class: c.Class, WaitFrame: c.WaitFrame, CurrentWaiters: c.CurrentWaiters, AvgWaiters: c.AvgWaiters, DumpsSeen: c.DumpsSeen})
		}
	}
	sort.SliceStable(st.resources, func(i, j int) bool { return st.resources[i].CurrentWaiters > st.resources[j].CurrentWaiters })
	return st
}

// since says what changed from prev (nil: the first dump).
func (st *followState) since(prev *followState) followChange {
	ch := followChange{Event: "dump", Threads: st.threads, States: st.states, Appeared: []analysis.Finding{}, Gone: []analysis.Finding{}, Findings: len(st.keys), Resources: st.resources}
	if ch.Resources == nil {
		ch.Resources = []followResource{}
	}
	for _, k := range st.keys {
		if prev == nil {
			ch.Appeared = append(ch.Appeared, st.findings[k])
		} else if _, ok := prev.findings[k]; !ok {
			ch.Appeared = append(ch.Appeared, st.findings[k])
		}
	}
	if prev != nil {
		for _, k := range prev.keys {
			if _, ok := st.findings[k]; !ok {
				ch.Gone = append(ch.Gone, prev.findings[k])
			}
		}
	}
	return ch
}

var (
	quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	digitsRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
)

// findingKey names what a finding is about, so that the same finding after
// the next dump (its counts, its owner and its wording moved on) is known
// as the same: a lock finding by the resource it names, a deadlock by its
// threads, a stuck thread by its state and frame, any other by its kind
// and pool (and its sentence without numbers, failing those).
func findingKey(f analysis.Finding, s *analysis.Summary) string {
	key := f.Kind + "|" + f.Pool + "|"
	switch f.Kind {
	case analysis.FindingDeadlock:
		return key + strings.Join(quotedRE.FindAllString(f.Summary, -1), ",")
	case analysis.FindingStuck:
		i := strings.LastIndex(f.Summary, " at ")
		who := ""
		if strings.HasPrefix(f.Summary, "Thread ") {
			who = quotedRE.FindString(f.Summary)
		}
		if i >= 0 {
			return key + who + f.Severity + f.Summary[i:]
		}
	case analysis.FindingLockHotspot, analysis.FindingSerialization:
		best := ""
		for _, c := range s.ContentionSites {
			if c.WaitFrame != "" && len(c.WaitFrame) > len(best) && strings.Contains(f.Summary, c.WaitFrame) {
				best = c.WaitFrame
				key = f.Kind + "|" + f.Pool + "|" + c.ID
			}
		}
		if best != "" {
			return key
		}
		for _, l := range s.Locks {
			if n := analysis.LockName(l); strings.Contains(f.Summary, n) {
				return key + n + strings.Join(quotedRE.FindAllString(f.Summary, -1), ",")
			}
		}
	case analysis.FindingThreadPerConnection, analysis.FindingWakeupStorm, analysis.FindingCPUSaturation:
		return key
	}
	return key + digitsRE.ReplaceAllString(f.Summary, "#")
}

// writeFollowChange prints one dump's change: a JSON Lines record, or a
// few lines of text with every name from the log escaped.
func writeFollowChange(w io.Writer, ch followChange, format string) error {
	if format == "json" {
		if err := json.NewEncoder(w).Encode(ch); err != nil {
			return fmt.Errorf("write JSON line: %w", err)
		}
		return nil
	}
	T := report.Terminal
	var b strings.Builder
	when := "no timestamp"
	if ch.Time != nil {
		when = ch.Time.Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(&b, "dump %d of %s, %s: %d threads", ch.Dump, T(ch.Source), when, ch.Threads)
	if len(ch.States) > 0 {
		fmt.Fprintf(&b, " (%s)", formatJavaStates(ch.States))
	}
	b.WriteString("\n")
	for _, f := range ch.Appeared {
		fmt.Fprintf(&b, "  + %-8s %s\n", strings.ToUpper(f.Severity), T(f.Summary))
	}
	for _, f := range ch.Gone {
		fmt.Fprintf(&b, "  - gone     %s\n", T(f.Summary))
	}
	if len(ch.Resources) == 0 {
		b.WriteString("  waiting now: no thread waits on a resource\n")
	}
	for i, r := range ch.Resources {
		if i == followResources {
			fmt.Fprintf(&b, "               … %d more\n", len(ch.Resources)-i)
			break
		}
		lead := "  waiting now:"
		if i > 0 {
			lead = strings.Repeat(" ", len(lead))
		}
		fmt.Fprintf(&b, "%s %3d on %s %s at %s (avg %.2f)\n", lead, r.CurrentWaiters, r.Kind, T(r.Class), T(r.WaitFrame), r.AvgWaiters)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatJavaStates prints "BLOCKED 8, RUNNABLE 3" in the order of the
// text report, a state the log made up escaped.
func formatJavaStates(m map[string]int) string {
	order := []string{"BLOCKED", "RUNNABLE", "WAITING", "TIMED_WAITING", "NEW", "TERMINATED"}
	var parts []string
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	var rest []string
	for k, v := range m {
		if !seen[k] && v > 0 {
			rest = append(rest, fmt.Sprintf("%s %d", report.Terminal(k), v))
		}
	}
	sort.Strings(rest)
	return strings.Join(append(parts, rest...), ", ")
}
