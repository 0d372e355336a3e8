package sample

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The budget's arithmetic, without a JVM: the first dump is free, the next
// waits for its pause to be paid, Flight Recorder pauses count too, and a
// bounded run takes no dump whose pause its remaining time cannot pay.
func TestPauseLedgerSpacesDumps(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := &Sampler{opts: Options{Interval: time.Second, JVM: JVMOptions{PauseBudget: 0.01}}}

	assert.False(t, s.countDumpTick(at(0), true))
	assert.True(t, s.withinBudget(at(0)), "the first dump is always allowed")
	s.budget.addDumpPause(at(0), 50*time.Millisecond, 0.01) // paid back after 5 s
	assert.True(t, s.countDumpTick(at(time.Second), true), "1 s after a 50 ms pause: held back")
	assert.False(t, s.withinBudget(at(4*time.Second)))
	assert.True(t, s.withinBudget(at(5*time.Second)))

	// A Flight Recorder start of 100 ms holds the next dump for 10 s more.
	s.budget.addJFRPause(100 * time.Millisecond)
	assert.False(t, s.withinBudget(at(14*time.Second)))
	assert.True(t, s.withinBudget(at(15*time.Second)))
	assert.False(t, s.countDumpTick(at(15*time.Second), true))
	assert.False(t, s.countDumpTick(at(16*time.Second), false), "no dump wanted: not counted")
	assert.Equal(t, 3, s.budget.asked)
	assert.Equal(t, 1, s.budget.heldBack)
	assert.Equal(t, "the pause budget (1 %) allowed 2 of the 3 dumps asked for; raise --pause-budget or --dump-interval"+
		" (the JFR recording's start and reads paused the JVM 100ms of the 150ms ctprof paused it)", s.budgetWarning())

	// --duration 10s at 1 %: 100 ms in all. After a 60 ms dump the next,
	// expected to cost as much, does not fit however long the wait.
	b := &Sampler{opts: Options{Interval: time.Second, Duration: 10 * time.Second, JVM: JVMOptions{PauseBudget: 0.01}}}
	b.countDumpTick(at(0), true)
	b.budget.addDumpPause(at(0), 60*time.Millisecond, 0.01)
	assert.False(t, b.withinBudget(at(9*time.Second)))
	// A 30 ms one does: 60 ms are within the budget after 6 s.
	c := &Sampler{opts: Options{Interval: time.Second, Count: 11, JVM: JVMOptions{PauseBudget: 0.01}}}
	c.countDumpTick(at(0), true)
	c.budget.addDumpPause(at(0), 30*time.Millisecond, 0.01)
	assert.False(t, c.withinBudget(at(2*time.Second)))
	assert.True(t, c.withinBudget(at(3*time.Second)))
	c.budget.addDumpPause(at(3*time.Second), 30*time.Millisecond, 0.01)
	c.budget.addDumpPause(at(6*time.Second), 30*time.Millisecond, 0.01)
	assert.False(t, c.withinBudget(at(10*time.Second)), "a fourth 30 ms pause would pass the 100 ms of the run")
}
