package threaddump

import "strings"

// WaitKind says what a thread waits for. A wait is contention when the
// thread cannot go on until another thread acts; the kinds below are the
// ways a Java thread shows that in a dump. A pool's idle workers waiting for
// tasks are not contention: Locks puts them in LockInfo.Waiting, apart.
type WaitKind string

// Wait kinds.
const (
	// WaitMonitor: blocked entering a monitor ("waiting to lock").
	WaitMonitor WaitKind = "monitor"
	// WaitRelock: notified (or timed out) in Object.wait() and blocked
	// re-acquiring the monitor ("waiting to re-lock in wait()", or on JDK
	// 17 a BLOCKED thread in Object.wait()).
	WaitRelock WaitKind = "relock"
	// WaitObject: in Object.wait() inside work (a group commit, a row lock
	// held by another transaction), not an idle worker waiting for a task.
	WaitObject WaitKind = "wait"
	// WaitSynchronizer: parked on a java.util.concurrent lock
	// (ReentrantLock, ReentrantReadWriteLock, StampedLock, Semaphore).
	WaitSynchronizer WaitKind = "synchronizer"
	// WaitCondition: parked on a Condition (or another park blocker that is
	// not a lock) inside work.
	WaitCondition WaitKind = "condition"
	// WaitFuture: waiting inside work for another thread's result: a
	// future, a latch, a barrier, a phaser or Thread.join.
	WaitFuture WaitKind = "future"
	// WaitClassInit: waiting for another thread to finish a class's static
	// initializer.
	WaitClassInit WaitKind = "class-init"
)

// waitKindOrder ranks kinds for ties: the kinds that queue behind an
// owner come first.
var waitKindOrder = map[WaitKind]int{
	WaitMonitor: 1, WaitRelock: 2, WaitSynchronizer: 3, WaitClassInit: 4,
	WaitObject: 5, WaitCondition: 6, WaitFuture: 7,
}

// WaitKindRank orders wait kinds (lower first) for stable output; unknown
// kinds come last.
func WaitKindRank(k WaitKind) int {
	if r, ok := waitKindOrder[k]; ok {
		return r
	}
	return len(waitKindOrder) + 1
}

// IsJDKClass reports classes of the JDK itself, whose frames say how a
// thread waits but not where in the program.
func IsJDKClass(class string) bool {
	for _, p := range []string{"java.", "javax.", "jdk.", "sun.", "com.sun."} {
		if strings.HasPrefix(class, p) {
			return true
		}
	}
	return false
}

// blockedKind is the kind of a queued wait BlockedOn returned.
func blockedKind(ev LockEvent) WaitKind {
	switch ev.Action {
	case LockWaitingToRelock:
		return WaitRelock
	case LockParking:
		return WaitSynchronizer
	case LockClassInit:
		return WaitClassInit
	}
	return WaitMonitor
}

// signalKind is the kind of a wait for a signal WaitsOn returned: a
// monitor's Object.wait(), or a park on something that is not a lock,
// told apart by the blocker's class and the frames that parked.
func signalKind(t *Thread, ev LockEvent) WaitKind {
	if ev.Action == LockWaitingOn {
		if joinsThread(t, ev.Frame) {
			return WaitFuture
		}
		return WaitObject
	}
	c := ev.Lock.Class
	for _, s := range []string{"Future", "Latch", "CyclicBarrier", "Phaser", "Exchanger", "ForkJoinTask", "Promise", "java.lang.Thread", "VirtualThread"} {
		if strings.Contains(c, s) {
			return WaitFuture
		}
	}
	for i := max(ev.Frame, 0); i < len(t.Frames) && i < ev.Frame+8; i++ {
		f := t.Frames[i]
		if strings.Contains(f.Class, "CountDownLatch") || strings.Contains(f.Class, "CyclicBarrier") ||
			strings.Contains(f.Class, "Phaser") || strings.Contains(f.Class, "Future") ||
			f.Class == "java.lang.Thread" && f.Method == "join" {
			return WaitFuture
		}
		if !IsJDKClass(f.Class) {
			break
		}
	}
	return WaitCondition
}

// joinsThread reports an Object.wait() that is Thread.join (the JDK waits
// on the Thread object until it ends).
func joinsThread(t *Thread, from int) bool {
	for i := max(from, 0); i < len(t.Frames) && i < from+4; i++ {
		if f := t.Frames[i]; f.Class == "java.lang.Thread" && f.Method == "join" {
			return true
		}
	}
	return false
}

// HoldsOtherThan reports whether t holds a lock other than the one at
// addr: a thread that waits while it holds one is contention whatever it
// waits for, since whoever needs that lock waits too.
func (t *Thread) HoldsOtherThan(addr string) bool {
	for _, l := range t.Holds() {
		if l.Address != addr {
			return true
		}
	}
	return false
}

// resolveHiddenWait fills in the object of "- waiting on <no object
// reference available>". HotSpot prints that for Object.wait() when the
// native frame has no locals (JDK 17 and others), whether the thread still
// waits or, BLOCKED, re-acquires the monitor after a notify; the monitor
// is the one the calling frame entered, printed as the next "- locked".
// Without this the waiter would look like the monitor's owner.
func resolveHiddenWait(t *Thread) {
	for i := range t.Locks {
		ev := &t.Locks[i]
		if ev.Action != LockWaitingOn || ev.Lock.Address != "" {
			continue
		}
		for j := i + 1; j < len(t.Locks); j++ {
			if l := t.Locks[j]; l.Action == LockLocked && l.Lock.Address != "" {
				ev.Lock = l.Lock
				ev.Inferred = true
				if t.State == StateBlocked {
					ev.Action = LockWaitingToRelock
				}
				break
			}
		}
		return // only the top frame waits
	}
}

// ParkKind is the wait kind of a thread parked on a blocker of the given
// class, with its stack (top first, the park frames included), by the
// rule a dump's parked threads follow: WaitSynchronizer for a lock, else
// WaitFuture or WaitCondition. For sources that give one wait without a
// dump around it (JFR's jdk.ThreadPark).
func ParkKind(class string, frames []Frame) WaitKind {
	if isLockBlocker(class) {
		return WaitSynchronizer
	}
	return signalKind(&Thread{Frames: frames}, LockEvent{Action: LockParking, Lock: Lock{Class: class}})
}

// ObjectWaitKind is the wait kind of a thread in Object.wait() with the
// given stack: WaitFuture for Thread.join, else WaitObject.
func ObjectWaitKind(frames []Frame) WaitKind {
	return signalKind(&Thread{Frames: frames}, LockEvent{Action: LockWaitingOn})
}
