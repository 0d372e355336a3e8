package serve

import (
	"fmt"
	"time"

	"github.com/ctprof/ctprof/internal/termtext"
)

// Message tells the user what happened to the target, as one line without
// its newline. Names and notes come from the target and are escaped.
func (ev Event) Message(interval time.Duration) string {
	name := termtext.Safe(ev.Target.Name)
	switch ev.Kind {
	case ListFailed:
		return fmt.Sprintf("ctprof: %v", ev.Err)
	case StartFailed:
		if ev.Explicit {
			return fmt.Sprintf("ctprof: %v; exporting ctprof_up{pid=\"%d\"} 0", ev.Err, ev.PID)
		}
		return fmt.Sprintf("ctprof: cannot sample pid %d: %v", ev.PID, ev.Err)
	case Noted:
		return fmt.Sprintf("ctprof: pid %d: %s", ev.PID, termtext.Safe(ev.Note))
	case Started:
		return fmt.Sprintf("ctprof: sampling pid %d (%s, %s) every %s", ev.PID, name, ev.Target.Kind, interval)
	case Exited:
		what := "exited"
		if ev.Exec {
			what = "exec'd another program"
		}
		if ev.Err != nil {
			what = fmt.Sprintf("could not be sampled any more (%v)", ev.Err)
		}
		if ev.Explicit {
			return fmt.Sprintf("ctprof: pid %d (%s) %s; exporting ctprof_up 0 for it", ev.PID, name, what)
		}
		return fmt.Sprintf("ctprof: pid %d (%s) %s; its series are dropped", ev.PID, name, what)
	}
	return fmt.Sprintf("ctprof: pid %d: event %d", ev.PID, ev.Kind)
}
