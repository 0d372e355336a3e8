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

// idleWait reports whether a wait for a signal is, by its frames, a
// worker idle between tasks. The frames from the wait down to the first
// frame of the program say what the thread waits for: a queue's take or
// poll, an executor's getTask, a fork-join pool's awaitWork, a timer's or
// the reference handler's loop, or a program method that fetches work
// (takeTask, pollJob, awaitWork, idle...).
//
// The rest of the rule is in Locks: a thread that holds a lock while it
// waits is never idle (whoever needs that lock waits too); any other wait
// for a signal is contention only when a thread works in the same code
// without waiting (releaser), the one the waiters wait for. A thread
// waiting alone on an object nobody works with is idle.
func idleWait(t *Thread, ev LockEvent) bool {
	for i := max(ev.Frame, 0); i < len(t.Frames); i++ {
		f := t.Frames[i]
		if idleFrame(f) {
			return true
		}
		if !IsJDKClass(f.Class) {
			return fetchesWork(f.Method)
		}
	}
	return len(t.Frames) > 0 // only JDK frames: a JDK service thread
}

// idleFrame matches the JDK (and common framework) frames where a worker
// waits for its next task.
func idleFrame(f Frame) bool {
	m := f.Method
	switch m {
	case "getTask", "awaitWork", "mainLoop", "waitForReferencePendingList":
		return true
	}
	c := f.Class
	if strings.Contains(c, "Queue") || strings.Contains(c, "Deque") || strings.Contains(c, "TransferStack") {
		// take and poll wait for an element; put and offer on a full
		// bounded queue are back-pressure, which is a wait inside work.
		for _, p := range []string{"take", "poll", "transfer", "xfer", "awaitMatch", "awaitFulfill", "remove", "next"} {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
	}
	if strings.HasSuffix(c, "ForkJoinPool") {
		// java.util.concurrent's and the copies in Scala and others: an
		// idle worker scans for work, then parks.
		switch m {
		case "runWorker", "scan", "awaitWork", "idleAwaitWork", "tryAwaitWork":
			return true
		}
	}
	return c == "jdk.internal.ref.CleanerImpl"
}

// fetchesWork reports a program method that, by its name, waits for work
// (takeTask, pollJob, nextTask, awaitWork, waitForTask, getJob, ...).
func fetchesWork(method string) bool {
	m := strings.ToLower(method)
	for _, p := range []string{"take", "poll", "fetch", "dequeue", "idle", "getnext", "waitget", "receive", "awaitnext"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	if strings.Contains(m, "task") || strings.Contains(m, "work") || strings.Contains(m, "job") {
		for _, p := range []string{"await", "wait", "get", "next", "idle"} {
			if strings.HasPrefix(m, p) {
				return true
			}
		}
	}
	return false
}

// holdsOther reports whether t holds a lock other than addr.
func holdsOther(t *Thread, addr string) bool {
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

// IdleStack reports whether a thread waiting for a signal with the given
// stack (top first) is, by its frames alone, a worker idle between tasks:
// the frame part of the rule Locks applies (idleWait).
func IdleStack(frames []Frame) bool { return idleWait(&Thread{Frames: frames}, LockEvent{}) }
