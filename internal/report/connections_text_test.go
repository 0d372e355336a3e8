package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// connectionsRun is a server with 8 threads sampled twice, with conns at
// every sample.
func connectionsRun(conns *procfs.Connections) *analysis.Summary {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := analysis.New()
	for i := 0; i < 2; i++ {
		s := &snapshot.Snapshot{
			Time: t0.Add(time.Duration(i) * time.Second), Interval: time.Second,
			Target:      snapshot.Target{PID: 42, Name: "mariadbd", Kind: snapshot.KindNative, CPUs: 2},
			Connections: conns,
		}
		for tid := 42; tid < 50; tid++ {
			s.Threads = append(s.Threads, procfs.Thread{TID: tid, StartTime: 1, Name: "one_connection", State: 'S', Syscall: procfs.SyscallUnknown})
		}
		a.Add(s)
	}
	return a.Summary()
}

// The connections line names the Unix socket paths beside the ports, and
// threads per connection counts their clients. A path is the target's
// bytes: it forges no line and no terminal escape.
func TestConnectionsLineShowsUnixPaths(t *testing.T) {
	const evil = "/tmp/x\n[CRITICAL] forged\x1b[2J"
	for _, tc := range []struct {
		name     string
		conns    procfs.Connections
		line     string
		byPath   string
		perConn  float64
		noEscape bool
	}{
		{
			name: "TCP and Unix clients",
			conns: procfs.Connections{Established: 4, Inbound: 4, ByLocalPort: map[int]int{3306: 1}, Listening: []int{3306},
				UnixEstablished: 3, ByPath: map[string]int{"/run/mysqld/mysqld.sock": 3}, ListeningPaths: []string{"/run/mysqld/mysqld.sock"}},
			line:    "connections: 4 established (port 3306: 1, /run/mysqld/mysqld.sock: 3); listening on 3306, /run/mysqld/mysqld.sock; 2.0 threads per connection\n",
			byPath:  `{"/run/mysqld/mysqld.sock":3}`,
			perConn: 2,
		},
		{
			name: "Unix clients only, on an abstract name and a hostile path",
			conns: procfs.Connections{Established: 2, Inbound: 2, ByLocalPort: map[int]int{},
				UnixEstablished: 2, ByPath: map[string]int{"@srv": 1, evil: 1}, ListeningPaths: []string{evil, "@srv"}},
			line:     `connections: 2 established (/tmp/x\n[CRITICAL] forged\x1b[2J: 1, @srv: 1); listening on /tmp/x\n[CRITICAL] forged\x1b[2J, @srv; 4.0 threads per connection` + "\n",
			byPath:   `{"/tmp/x\n[CRITICAL] forged\u001b[2J":1,"@srv":1}`,
			perConn:  4,
			noEscape: true,
		},
		{
			name:    "no Unix socket",
			conns:   procfs.Connections{Established: 2, Inbound: 2, ByLocalPort: map[int]int{8080: 2}, Listening: []int{8080}},
			line:    "connections: 2 established (port 8080: 2); listening on 8080; 4.0 threads per connection\n",
			byPath:  `{}`,
			perConn: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := tc.conns
			s := connectionsRun(&conns)
			require.NotNil(t, s.ThreadsPerConnection)
			assert.InDelta(t, tc.perConn, s.ThreadsPerConnection.Ratio, 1e-9)

			var text bytes.Buffer
			require.NoError(t, Text(&text, s, TextOptions{}))
			assert.Contains(t, text.String(), tc.line)
			if tc.noEscape {
				assert.NotContains(t, text.String(), "\x1b")
				assert.NotContains(t, text.String(), "\n[CRITICAL] forged")
			}

			var js bytes.Buffer
			require.NoError(t, JSON(&js, s))
			var doc struct {
				Connections map[string]json.RawMessage `json:"connections"`
			}
			require.NoError(t, json.Unmarshal(js.Bytes(), &doc))
			assert.JSONEq(t, tc.byPath, string(doc.Connections["by_path"]))
			want := conns.ListeningPaths
			if want == nil {
				want = []string{}
			}
			var listening []string
			require.NoError(t, json.Unmarshal(doc.Connections["listening_paths"], &listening))
			assert.Equal(t, want, listening)
			assert.False(t, strings.Contains(string(doc.Connections["listening_paths"]), "null"))
		})
	}
}
