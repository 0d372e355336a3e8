package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// Version 8 keeps the clients on the target's Unix sockets, so a replay
// counts them as the run did; a version 7 file replays with its TCP
// counts alone (which is all a run of that version measured).
func TestUnixClientsRoundTripAndVersion7(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	target := snapshot.Target{PID: 4242, Name: "mariadbd", Kind: snapshot.KindNative, CPUs: 2}
	conns := []*procfs.Connections{
		{Established: 3, Inbound: 3, ByLocalPort: map[int]int{3306: 1}, Listening: []int{3306}, Peers: 1,
			UnixEstablished: 2, ByPath: map[string]int{"/run/mysqld/mysqld.sock": 2}, ListeningPaths: []string{"/run/mysqld/mysqld.sock", "@abstract\x1b"}},
		{Established: 5, Inbound: 5, ByLocalPort: map[int]int{3306: 1}, Listening: []int{3306}, Peers: 1,
			UnixEstablished: 4, ByPath: map[string]int{"/run/mysqld/mysqld.sock": 3, "@abstract\x1b": 1}, ListeningPaths: []string{"/run/mysqld/mysqld.sock", "@abstract\x1b"}},
		{Established: 0, Inbound: 0, ByLocalPort: map[int]int{}, ByPath: map[string]int{}},
	}
	var run []*snapshot.Snapshot
	for i, c := range conns {
		run = append(run, &snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Target: target, Source: "live", Interval: time.Second,
			Threads:     []procfs.Thread{{TID: 4242, StartTime: 1, Name: "mariadbd", State: 'S', Syscall: procfs.SyscallUnknown}},
			Connections: c, Host: &snapshot.Host{CPUs: 2}})
	}
	for _, version := range []byte{7, FormatVersion} {
		got, r := recordAtVersion(t, version, run...)
		assert.Empty(t, r.Warnings(), "version %d", version)
		require.Len(t, got, len(run))
		for i := range run {
			want := *run[i].Connections
			if version < 8 {
				want.UnixEstablished, want.ByPath, want.ListeningPaths = 0, nil, nil
			}
			assert.Equal(t, &want, got[i].Connections, "version %d, tick %d", version, i)
			assert.Equal(t, run[i].Host, got[i].Host, "version %d: what follows decodes", version)
		}
		replay := analysis.New()
		for _, s := range got[:2] {
			replay.Add(s)
		}
		cs := replay.Summary().Connections
		require.NotNil(t, cs)
		if version < 8 {
			assert.Equal(t, map[string]int{}, cs.ByPath)
			assert.Equal(t, []string{}, cs.ListeningPaths)
			continue
		}
		assert.Equal(t, map[string]int{"/run/mysqld/mysqld.sock": 3, "@abstract\x1b": 1}, cs.ByPath)
		assert.Equal(t, []string{"/run/mysqld/mysqld.sock", "@abstract\x1b"}, cs.ListeningPaths)
		assert.Equal(t, 5, cs.Established)
	}
}
