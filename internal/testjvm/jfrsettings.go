package testjvm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// JFRLockSettings is a Flight Recorder configuration for tests: every lock
// wait (threshold 0) with its stack, every GC, a thread dump and a CPU load
// sample each second.
const JFRLockSettings = `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="ctprof tests">
  <event name="jdk.JavaMonitorEnter"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.JavaMonitorWait"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.ThreadPark"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.VirtualThreadPinned"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.GarbageCollection"><setting name="enabled">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.ThreadDump"><setting name="enabled">true</setting><setting name="period">1 s</setting></event>
  <event name="jdk.CPULoad"><setting name="enabled">true</setting><setting name="period">1 s</setting></event>
</configuration>
`

// JFRLockSettingsFile writes JFRLockSettings into the test's temporary
// directory and returns the file, for -XX:StartFlightRecording=settings=.
func JFRLockSettingsFile(t testing.TB) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "locks.jfc")
	require.NoError(t, os.WriteFile(f, []byte(JFRLockSettings), 0o644))
	return f
}
