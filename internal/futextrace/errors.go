package futextrace

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrUnavailable is wrapped by every error that means exact futex waits
// cannot be traced on this host or for this target (no privilege, no
// tracefs, no tracepoint): a caller falls back to sampling /proc.
var ErrUnavailable = errors.New("exact futex waits unavailable")

// Reason says why tracing is unavailable.
type Reason int

// Reasons an Error gives.
const (
	ReasonNoPrivilege Reason = iota + 1
	ReasonNoTracefs
	ReasonNoTracepoint
	ReasonPerf // perf_event_open refused for another reason
)

// Error is a sentence a user can act on; it wraps ErrUnavailable.
type Error struct {
	Reason Reason
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, ErrUnavailable) true.
func (e *Error) Unwrap() error { return ErrUnavailable }

func unavailable(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// errNoPrivilege names the paranoia level the host has, which is what
// decides whether an unprivileged user could trace its own processes.
func errNoPrivilege() *Error {
	level := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		level = strings.TrimSpace(string(b))
	}
	return unavailable(ReasonNoPrivilege, "exact futex waits need root or CAP_PERFMON (perf_event_paranoid is %s)", level)
}
