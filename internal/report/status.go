package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// StatusLine is the one-line progress shown on a terminal. It shows the
// latest sample as it is; statistics are the Aggregator's, at the end.
func StatusLine(elapsed time.Duration, n int, snap *snapshot.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %d samples  %d threads", elapsed.Round(time.Second), n, len(snap.Threads))
	if c := snap.Connections; c != nil {
		fmt.Fprintf(&b, "  %d connections", c.Established)
	}
	for _, fw := range snap.Futexes {
		if fw.Kind == snapshot.FutexCondition {
			continue
		}
		name := "futex " + fw.Location.String()
		fmt.Fprintf(&b, "  hottest: %s (%d waiting)", Terminal(name), len(fw.TIDs))
		break
	}
	return b.String()
}
