// Package testprio shields the workloads tests measure from the rest of the
// machine's load: they run at a raised priority, in a session of their own.
// The scaling tests need it most (they compare throughput at 1 and 2
// CPUs); testnative and testjvm start a program this way on request
// (Options.Prioritized), for tests whose figures a busy neighbour would
// move.
package testprio

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Nice is the priority prioritized workloads run at. A scaling test
// compares throughput at 1 and 2 CPUs; a neighbour busy on one of the
// two takes half of that CPU under the default fair share and hides the
// gain the test measures. At -15 the kernel weighs the workload's session
// about 28 times a neighbour's (CFS weights 29154 against 1024), so a busy
// neighbour keeps under a tenth of a CPU it shares with the workload, and
// gets the rest of the machine's time. The tests' own profiler, at nice 0,
// mostly sleeps and runs at once when it wakes.
const Nice = -15

// Prioritized returns command wrapped so that the workload runs at Nice.
// With autogroup scheduling (the default of most kernels) a thread's nice
// value only weighs against threads of its own session, and sessions share
// the CPUs equally: the wrapper starts a new session (setsid), sets that
// session's autogroup nice, and also lowers the process's own nice for
// kernels without autogroups. setsid, sh and nice all exec, so the pid
// ctprof starts and profiles is the workload's. Without the privilege to
// raise a priority (CAP_SYS_NICE or RLIMIT_NICE) the workload runs at the
// usual priority and the test says so in its log.
func Prioritized(t testing.TB, command ...string) []string {
	t.Helper()
	tools := map[string]string{}
	for _, name := range []string{"setsid", "sh", "nice"} {
		path, err := exec.LookPath(name)
		require.NoError(t, err, "%s is needed to run the scaling workloads at a raised priority", name)
		tools[name] = path
	}
	if !mayRaisePriority() {
		t.Logf("not allowed to run the workload at nice %d: it competes with the machine's other load as an equal", Nice)
	}
	n := strconv.Itoa(Nice)
	// An autogroup that cannot be reniced (no privilege, no autogroups) is
	// left as it is: the workload still runs.
	script := `{ echo ` + n + ` > /proc/$$/autogroup; } 2>/dev/null; exec "$0" -n ` + n + ` "$@"`
	return append([]string{tools["setsid"], tools["sh"], "-c", script, tools["nice"]}, command...)
}

// mayRaisePriority says whether this process may lower a nice value to
// Nice: root (CAP_SYS_NICE, by far the usual case here), or an RLIMIT_NICE
// of 20-Nice or more.
func mayRaisePriority() bool {
	if unix.Geteuid() == 0 {
		return true
	}
	var lim unix.Rlimit
	return unix.Getrlimit(unix.RLIMIT_NICE, &lim) == nil && lim.Cur >= uint64(20-Nice)
}
