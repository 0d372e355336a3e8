//go:build linux && amd64

package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testservers"
)

var rerecord = flag.Bool("rerecord", false, "record the real servers' runs under testdata/recordings afresh (then run with -update to rewrite their goldens)")

// serverRecording is the run of a real server that the golden text and
// JSON summaries below are replayed from: MariaDB 10.11 from Debian's
// packages under sysbench oltp_write_only (32 clients updating 16 rows over
// its Unix socket), the case issue 34 was filed on. It was recorded with
//
//	go test ./internal/cli -run TestRealServerGolden -rerecord -update
//
// which starts the server and its load (internal/testservers), attaches
// `ctprof attach PID --duration 3s --interval 250ms --record FILE`, and
// rewrites the goldens from the new recording.
const serverRecording = "mariadb-oltp-rowlocks"

// TestRealServerGolden pins what ctprof says of a real native server's
// recorded run, text and JSON, so that a change in the native wait model,
// the resources or the findings shows in review; and checks, whatever the
// goldens hold, that it leads with InnoDB's row-lock wait as a resource
// whose key holds no address, with the connection threads waiting there as
// contention in waits[] and the clients counted on the Unix socket.
func TestRealServerGolden(t *testing.T) {
	rec := filepath.Join("testdata", "recordings", serverRecording+".ctprof")
	if *rerecord {
		srv := testservers.StartMariaDB(t)
		require.NoError(t, os.MkdirAll(filepath.Dir(rec), 0o755))
		code, _, errOut := run(t, "", "attach", strconv.Itoa(srv.PID), "--duration", "3s", "--interval", "250ms", "--record", rec, "--format", "json")
		require.Equal(t, 0, code, errOut)
	}
	code, out, errOut := run(t, "", "report", "--format", "json", rec)
	require.Equal(t, 0, code, errOut)
	golden(t, serverRecording+".json", []byte(out))
	var doc struct {
		Sites []struct {
			ID        string  `json:"id"`
			Native    bool    `json:"native"`
			Kind      string  `json:"kind"`
			Avg       float64 `json:"avg_waiters"`
			WaitFrame string  `json:"wait_frame"`
			Pool      string  `json:"pool"`
		} `json:"contention_sites"`
		Waits []struct {
			Verdict  string `json:"verdict"`
			Resource string `json:"resource"`
		} `json:"waits"`
		Connections struct {
			ByPath map[string]int `json:"by_path"`
		} `json:"connections"`
		Findings []struct {
			Kind    string `json:"kind"`
			Subject string `json:"subject"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotEmpty(t, doc.Sites, "no resource")
	top := doc.Sites[0]
	assert.True(t, top.Native)
	assert.Equal(t, "condition", top.Kind)
	assert.Regexp(t, `^condition\|mariadbd\|mariadbd\+0x[0-9a-f]{1,8}( ← mariadbd\+0x[0-9a-f]{1,8})?$`, top.ID, "a site in the binary, no runtime address")
	assert.Greater(t, top.Avg, 8.0, "the row-lock waiters")
	assert.Equal(t, "handle_one_connection", top.Pool)
	atTop := 0
	for _, w := range doc.Waits {
		if w.Resource == top.ID {
			assert.Equal(t, "contention", w.Verdict)
			atTop++
		}
	}
	assert.Greater(t, atTop, 4, "connection threads waiting at the row-lock site in waits[]")
	clients := 0
	for _, n := range doc.Connections.ByPath {
		clients += n
	}
	assert.GreaterOrEqual(t, clients, 32, "sysbench's 32 clients on the Unix socket: %v", doc.Connections.ByPath)
	require.NotEmpty(t, doc.Findings)
	assert.Equal(t, "resource "+top.ID, doc.Findings[0].Subject, "the first finding is the row-lock wait")

	code, out, errOut = run(t, "", "report", rec)
	require.Equal(t, 0, code, errOut)
	golden(t, serverRecording+".txt", []byte(out))
	assert.Contains(t, out, top.WaitFrame)
}
