// Package sample holds the Snapshot model: what ctprof knows about a target
// at one instant. Every mode (live attach, recording replay, dump files)
// produces Snapshots, and the one Aggregator in internal/analysis consumes
// them.
package sample

import (
	"time"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// TargetKind says whether the target is a JVM or a native process.
type TargetKind string

// Target kinds.
const (
	KindJVM    TargetKind = "jvm"
	KindNative TargetKind = "native"
)

// Target identifies the profiled process.
type Target struct {
	PID  int
	Name string
	Kind TargetKind
}

// Snapshot is one tick of one target.
type Snapshot struct {
	// Time is when the snapshot was taken (for dump files, the dump's own
	// timestamp; zero when the dump has none).
	Time   time.Time
	Target Target
	// Source names where the snapshot came from (a file name for offline
	// analysis), for messages.
	Source string
	// Dump is the thread dump taken at this tick; nil on ticks without one.
	Dump *threaddump.Dump
}
