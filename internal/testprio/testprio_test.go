package testprio

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The wrapped command runs in a session of its own at Nice, its autogroup
// too, as the same process (each wrapper execs).
func TestPrioritizedRunsTheCommandAtNice(t *testing.T) {
	require.True(t, mayRaisePriority(), "this test needs the privilege to raise a priority (root or CAP_SYS_NICE)")
	probe := `echo pid=$$; cat /proc/$$/autogroup; cut -d' ' -f6,19 /proc/$$/stat`
	cmd := Prioritized(t, "sh", "-c", probe)
	c := exec.Command(cmd[0], cmd[1:]...)
	out, err := c.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 3, string(out))
	pid := strings.TrimPrefix(lines[0], "pid=")
	assert.Equal(t, strconv.Itoa(c.Process.Pid), pid, "every wrapper execs: the pid started is the workload's")
	n := strconv.Itoa(Nice)
	assert.True(t, strings.HasSuffix(lines[1], " nice "+n), "autogroup: %s", lines[1])
	assert.Equal(t, pid+" "+n, lines[2], "session id (a new session) and nice")
}
