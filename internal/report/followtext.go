package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctprof/ctprof/internal/follow"
)

// followResources bounds the resources printed after each dump.
const followResources = 5

// FollowText writes what one dump of a followed log changed, in a few
// lines: the dump, the findings that appeared (+) or went away (-), and the
// resources waited on now. Every name from the log is escaped.
func FollowText(w io.Writer, ch follow.Change) error {
	T := Terminal
	var b strings.Builder
	when := "no timestamp"
	if ch.Time != nil {
		when = ch.Time.Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(&b, "dump %d of %s, %s: %d threads", ch.Dump, T(ch.Source), when, ch.Threads)
	if len(ch.States) > 0 {
		fmt.Fprintf(&b, " (%s)", formatStates(ch.States))
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
