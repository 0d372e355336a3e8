//go:build linux && amd64

package testservers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// MariaDB under sysbench's oltp_write_only on 16 rows: most connection
// threads queue on row locks; the server's own threads wait for work.
func TestMariaDBLabels(t *testing.T) {
	srv := StartMariaDB(t)
	rowLock := func(look []rlThread) int {
		return rlCount(look)[Label{Contention, "row-lock wait"}]
	}
	// A waiter granted and queued again while its stack was read is not
	// unwound; the labels learn its wait from an earlier look: a look is
	// taken again while many are unknown.
	look := rlLookUntil(t, srv, func(l []rlThread) bool {
		return rowLock(l) >= 10 && float64(rlCount(l)[Label{}]) <= 0.1*float64(len(l))
	})
	rlCheck(t, look, rlMaxUnknown)
	roles := rlCount(look)
	t.Logf("the server counted %.1f row-lock waiters meanwhile", srv.TopWaiters())
	assert.GreaterOrEqual(t, rowLock(look), 10, "connection threads labelled contention at the row lock")
	assert.GreaterOrEqual(t, roles[Label{Idle, "tpool worker waiting for a task"}], 1, "tpool workers waiting for a task")
	assert.Equal(t, 1, roles[Label{Idle, "listener waiting for a connection"}], "the listener")
	assert.Equal(t, 1, roles[Label{Idle, "signal handler waiting for a signal"}], "the signal handler")
	assert.GreaterOrEqual(t, roles[Label{Idle, "InnoDB page cleaner waiting for its next period"}]+roles[Label{Running, "running"}], 1, "the page cleaner")
}
