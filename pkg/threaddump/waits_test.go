package threaddump

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIdleFrames(t *testing.T) {
	for _, tc := range []struct {
		class, method string
		idle          bool
	}{
		{"java.util.concurrent.LinkedBlockingQueue", "take", true},
		{"java.util.concurrent.ArrayBlockingQueue", "poll", true},
		{"java.util.concurrent.ArrayBlockingQueue", "put", false}, // back-pressure is a wait inside work
		{"java.util.concurrent.ThreadPoolExecutor", "getTask", true},
		{"java.util.concurrent.ForkJoinPool", "awaitWork", true},
		{"scala.concurrent.forkjoin.ForkJoinPool", "scan", true},
		{"java.util.TimerThread", "mainLoop", true},
		{"java.lang.ref.ReferenceQueue", "remove", true},
		{"org.apache.tomcat.util.threads.TaskQueue", "take", true},
		{"org.apache.derby.impl.store.raw.log.LogToFile", "flush", false},
	} {
		assert.Equal(t, tc.idle, idleFrame(Frame{Class: tc.class, Method: tc.method}), "%s.%s", tc.class, tc.method)
	}
	for _, tc := range []struct {
		method string
		idle   bool
	}{
		{"takeTask", true}, {"pollJob", true}, {"idle", true}, {"getNextEvent", true}, {"waitForTask", true},
		{"awaitWork", true}, {"nextJob", true},
		{"commit", false}, {"waitForThisToEnd", false}, {"flush", false}, {"awaitEnd", false},
	} {
		assert.Equal(t, tc.idle, fetchesWork(tc.method), tc.method)
	}
}

// HotSpot's "<no object reference available>" takes its object from the
// next "- locked" line; a BLOCKED thread there re-locks.
func TestResolveHiddenWait(t *testing.T) {
	hidden := func(state State) *Thread {
		return &Thread{State: state, Locks: []LockEvent{
			{Action: LockWaitingOn, Frame: 0},
			{Action: LockLocked, Lock: Lock{Address: "0x1", Class: "app.Log"}, Frame: 2},
			{Action: LockLocked, Lock: Lock{Address: "0x2", Class: "app.Outer"}, Frame: 4},
		}}
	}
	w := hidden(StateWaiting)
	resolveHiddenWait(w)
	assert.Equal(t, LockEvent{Action: LockWaitingOn, Lock: Lock{Address: "0x1", Class: "app.Log"}, Frame: 0, Inferred: true}, w.Locks[0])
	assert.Equal(t, []Lock{{Address: "0x2", Class: "app.Outer"}}, w.Holds(), "wait() released app.Log, not app.Outer")
	b := hidden(StateBlocked)
	resolveHiddenWait(b)
	assert.Equal(t, LockWaitingToRelock, b.Locks[0].Action)
	ev, ok := b.BlockedOn()
	assert.True(t, ok)
	assert.Equal(t, "0x1", ev.Lock.Address)
}
