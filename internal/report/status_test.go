package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/symbolize"
)

// The progress line shows the latest sample as it is, its hottest lock
// (not a condition wait) escaped for the terminal.
func TestStatusLine(t *testing.T) {
	snap := &snapshot.Snapshot{
		Threads:     make([]snapshot.OSThread, 3),
		Connections: &snapshot.Connections{Established: 2},
		Futexes: []snapshot.FutexWait{
			{Kind: snapshot.FutexCondition, TIDs: []int{1, 2}},
			{Kind: snapshot.FutexLock, TIDs: []int{3}, Location: symbolize.Location{Address: 0x10, Module: "app", Symbol: "lock\x1b[2J"}},
		},
	}
	got := StatusLine(1500*time.Millisecond, 4, snap)
	assert.Contains(t, got, "2s  4 samples  3 threads  2 connections  hottest: futex ")
	assert.Contains(t, got, "(1 waiting)")
	assert.NotContains(t, got, "\x1b")
}
