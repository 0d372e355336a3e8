package threaddump

import "strings"

// The wait rule: idle by rule, contention by default.
//
// A wait is idle when no frame of work lies between the thread's run loop
// and the wait: below the waiting machinery, every frame down to the
// thread's start was written by the same organization as the run loop (the
// thread's outermost frame), so the loop is asking for its next unit of
// work and is not running one. In the program's own code, where one
// organization writes both the loop and the work, the loop's own class must
// call the wait. Any other wait is called from inside work and is
// contention, whatever its classes are called.
//
// A task is a loop of its own: a Runnable or Callable that a run loop of
// another organization runs (the thread's outermost run(), such as an
// executor's worker below a pool's idle remover or a framework's
// consumer), or that a wrapper runs, is idle at the
// top of its own run() when the rule above holds with that run() as the
// loop and it asks for its next item (a queue, a condition, a monitor, a
// semaphore) rather than for another thread's result (a latch, a future, a
// barrier, an exchanger, a phaser, a thread's end). A wrapper that runs one
// task (a run() that calls another class's run() directly) is plumbing, not
// the loop: what it runs is a task.
//
// The rule reads three things of a stack, each defined by the data below
// and nothing else: which frames are the waiting machinery (the top of the
// stack), which are thread-start plumbing (the bottom), and which
// organization wrote a frame.

// WaitRule is the verdict of the rule on one wait, with the frames it
// rests on, so a report can say why.
type WaitRule struct {
	Idle bool
	// IO marks a wait for something outside the JVM that a monitor
	// stands for: the JDK's Process waits on its own object until the
	// child process exits (ChildProcessWait). Idle is set too: it is no
	// contention.
	IO bool
	// Sleep marks a timed Object.wait() on an object no other thread of
	// the dump uses (none waits on it, holds it or has locked it), with no
	// working thread named to release it: a pause between polls, like a
	// sleep (a scheduler's job polling a remote job). Idle is set too.
	Sleep bool
	// CallSite is the first frame below the waiting machinery: where the
	// waiting thread's own code calls into it. Empty when every frame is
	// machinery or plumbing (a JDK service thread, a JDK pool's worker).
	CallSite Frame
	// Loop is the thread's outermost frame above its start plumbing: its
	// run loop. Empty when the stack has none.
	Loop Frame
	// Task is set when the loop is a task's run() that a loop of another
	// organization or a wrapper runs (the task is a loop of its own).
	Task bool
	// Work, for a wait called from inside work, is the frame of work
	// between the loop and the wait that decided it (the outermost frame
	// of another organization than the loop's, or, in the program's own
	// code, the first frame between the loop and the call site).
	Work Frame
}

// Reason says in a sentence why the wait was classed so.
func (r WaitRule) Reason() string {
	switch {
	case r.IO:
		return "waits for a child process to exit: I/O on something outside the JVM, not contention"
	case r.Sleep:
		return "a timed wait on an object no other thread uses: a pause between polls, like a sleep"
	case r.Idle && r.Loop.Class == "":
		return "waits in the JDK's own machinery with no program frame: a JDK service or pool thread waiting for work"
	case r.Idle && r.Task:
		return "at the top of its task's own loop " + r.Loop.Function() + ": the task asks for its next item, no frame of work between its run() and the wait"
	case r.Idle:
		return "at the top of its run loop " + r.Loop.Function() + ": no frame of work between the loop and the wait"
	case r.Work.Class != "":
		return "waits inside work: " + r.Work.Function() + " runs between its loop " + r.Loop.Function() + " and the wait"
	}
	return "waits inside work"
}

// waitMachineryTypes are the simple-name endings of concurrency types
// outside the JDK that a thread waits inside (a library's own queue,
// future or latch): like the JDK's, they say how the thread waits, not
// where in the program.
var waitMachineryTypes = []string{
	"Queue", "Deque", "Future", "Promise", "Latch", "Semaphore", "Barrier",
	"Condition", "Exchanger", "Phaser",
}

// resultWaitTypes are the simple-name endings of the waiting machinery
// that waits for another thread's result or arrival rather than for the
// next item of a stream: a task that waits in one is inside work, not at
// the top of a loop of its own.
var resultWaitTypes = []string{"Latch", "Future", "Promise", "Barrier", "Exchanger", "Phaser"}

// jdkWaitingClasses are the JDK's waiting machinery: its concurrency
// package, parking, Object.wait, Thread.sleep and join, reference queues
// (a name ending in "." is a package). The JDK's other code (its HTTP
// client, its I/O) is code of the JDK's organization like any library's:
// a program that waits inside it waits inside work.
var jdkWaitingClasses = []string{
	"java.util.concurrent.", "jdk.internal.misc.", "jdk.internal.vm.", "java.lang.ref.",
	"sun.misc.Unsafe", "java.lang.Object", "java.lang.Thread", "java.lang.VirtualThread",
}

// jdkPackages are the JDK's own packages: one organization.
var jdkPackages = []string{"java.", "javax.", "jdk.", "sun.", "com.sun."}

// startPlumbingPackages hold the frames that start a thread or mount a
// virtual one (Thread.run, Thread.runWith, VirtualThread.run,
// Continuation.enter, InnocuousThread.run, a Finalizer's thread), and the
// JVM's bridges to lambdas and method references ("$$Lambda" classes):
// they are below every run loop and say nothing of it.
var startPlumbingPackages = []string{"java.lang.", "jdk.internal."}

// isMachinery reports a frame of the waiting machinery: the JDK's, or a
// concurrency type of a library.
func isMachinery(f Frame) bool {
	for _, p := range jdkWaitingClasses {
		if strings.HasSuffix(p, ".") && strings.HasPrefix(f.Class, p) ||
			f.Class == p || strings.HasPrefix(f.Class, p+"$") {
			return true
		}
	}
	name := outerSimpleName(f.Class)
	for _, s := range waitMachineryTypes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// isStartPlumbing reports a frame that starts the thread (bottom of the
// stack) rather than a run loop.
func isStartPlumbing(f Frame) bool {
	if strings.Contains(f.Class, "$$Lambda") {
		return true // the JVM's bridge to a lambda or method reference
	}
	for _, p := range startPlumbingPackages {
		if strings.HasPrefix(f.Class, p) {
			return true
		}
	}
	return false
}

// Organization names who wrote a class: "jdk" for the JDK, else its first
// two package names ("org.apache", "io.netty", "com.zaxxer"), or its only
// one, or "" for the default package.
func Organization(class string) string {
	for _, p := range jdkPackages {
		if strings.HasPrefix(class, p) {
			return "jdk"
		}
	}
	first := strings.IndexByte(class, '.')
	if first < 0 {
		return ""
	}
	second := strings.IndexByte(class[first+1:], '.')
	if second < 0 {
		return class[:first]
	}
	return class[:first+1+second]
}

// outerSimpleName is a class's simple name without its nested parts:
// "org.x.BlockingArrayQueue$Node" is "BlockingArrayQueue".
func outerSimpleName(class string) string {
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		class = class[i+1:]
	}
	if i := strings.IndexByte(class, '$'); i >= 0 {
		class = class[:i]
	}
	return class
}

// ApplyWaitRule classes the wait of a thread whose stack is frames (top
// first) and whose wait is at frame from (0 when unknown). program is the
// organization of the program's own code (ProgramOrganization), or "?"
// when the dump does not tell.
func ApplyWaitRule(frames []Frame, from int, program string) WaitRule {
	return applyWaitRule(frames, from, program, "", "", "")
}

// ApplyMonitorWaitRule is ApplyWaitRule for a thread in Object.wait() on an
// object of the given class. When the object is of another organization
// than the thread's loop, its class (the outer class, with its nested
// classes) is a structure the loop waits inside (a library's bounded
// buffer under the JDK executor's getTask), so for the verdict its frames
// are machinery too. The call site still names the first frame outside
// the JDK, usually the object's own method (a log's flush).
func ApplyMonitorWaitRule(frames []Frame, from int, program, object string) WaitRule {
	return applyWaitRule(frames, from, program, "", outerClass(object), object)
}

// ApplyParkRule is ApplyWaitRule for a thread parked on a blocker of the
// given class: the blocker's own package is waiting machinery too (a
// library's future and the helpers it parks through), so the call site
// is where the thread's code asks for the future, not inside it.
func ApplyParkRule(frames []Frame, from int, program, blocker string) WaitRule {
	pkg := ""
	if i := strings.LastIndexByte(blocker, '.'); i > 0 && !IsJDKClass(blocker) {
		pkg = blocker[:i+1]
	}
	return applyWaitRule(frames, from, program, pkg, "", blocker)
}

// outerClass is a class name without its nested parts:
// "org.x.BoundedBuffer$GetQueueLock" is "org.x.BoundedBuffer".
func outerClass(class string) string {
	if i := strings.IndexByte(class, '$'); i > 0 {
		return class[:i]
	}
	return class
}

// applyWaitRule is the rule; blockerPkg (a park's blocker's package) and
// object (the outer class of the monitor waited on) are machinery besides
// the rule's own; waited is the class of the blocker or object waited on
// (empty when unknown).
func applyWaitRule(frames []Frame, from int, program, blockerPkg, object, waited string) WaitRule {
	from = max(from, 0)
	var r WaitRule
	// The loop: the outermost frame above the start plumbing.
	bottom := len(frames) - 1
	for bottom >= from && isStartPlumbing(frames[bottom]) {
		bottom--
	}
	if object != "" && bottom >= from && Organization(object) == Organization(frames[bottom].Class) {
		// A structure of the loop's own organization is its own code
		// (a program's log whose commit its writers call): not machinery.
		object = ""
	}
	call, named := -1, -1
	for i := from; i < len(frames); i++ {
		f := frames[i]
		inBlocker := blockerPkg != "" && strings.HasPrefix(f.Class, blockerPkg) && !strings.Contains(f.Class[len(blockerPkg):], ".")
		if isMachinery(f) || inBlocker {
			continue
		}
		if named < 0 {
			named = i
		}
		if object == "" || IsJDKClass(object) || outerClass(f.Class) != object {
			call = i
			break
		}
	}
	if named >= 0 {
		r.CallSite = frames[named]
	}
	if call < 0 || bottom < call {
		// Only machinery and plumbing: the JDK's own loop (an executor's
		// getTask, a fork-join awaitWork, a timer, the finalizer) or a
		// library's queue with nothing of the program on the stack.
		if bottom >= from {
			r.Loop = frames[bottom]
		}
		if r.Loop.Class == "" || !IsJDKClass(r.Loop.Class) {
			r.Loop = Frame{}
		}
		r.Idle = true
		return r
	}
	r.Loop = frames[bottom]
	if entry := unwrap(frames, bottom, call); entry != bottom {
		// The thread's outermost frame is a wrapper that runs one task:
		// plumbing, and the task it runs is judged as a task.
		r = taskRule(r, frames, from, call, entry, program, waited)
		r.Task = false // the task is the thread's own run loop
		return r
	}
	if w := workFrame(frames, bottom, call, program); w >= 0 {
		r.Work = frames[w]
		if entry, ok := taskEntry(frames, w, call); ok && isTaskMethod(r.Loop) && Organization(frames[w].Class) != Organization(r.Loop.Class) {
			// The work is a task the loop runs: it may be a loop of
			// its own, asking for its next item.
			return taskRule(r, frames, from, call, entry, program, waited)
		}
		return r
	}
	r.Idle = true
	return r
}

// workFrame is the frame of work between the loop at frames[loop] and the
// call site at frames[call], or -1 when there is none: the outermost frame
// of another organization than the loop's, or, in the program's own code,
// the first frame of another class than the loop's (the program's loop and
// its helpers are one class; the JVM's bridge to a lambda or method
// reference a class defines, "X$$Lambda…", is X's code: a loop that runs
// its own class's lambda, or reaches its own method through one, runs no
// other code).
func workFrame(frames []Frame, loop, call int, program string) int {
	org := Organization(frames[loop].Class)
	for i := loop - 1; i >= call; i-- {
		if Organization(frames[i].Class) != org {
			return i
		}
	}
	if program != "?" && org == program && org != "jdk" {
		for i := loop - 1; i >= call; i-- {
			if lambdaHost(frames[i].Class) != lambdaHost(frames[loop].Class) {
				return i
			}
		}
	}
	return -1
}

// lambdaHost is the class that defines a lambda bridge class
// ("app.Server$$Lambda$14/0x…" and JDK 21's "app.Server$$Lambda/0x…" are
// app.Server's); any other class is itself.
func lambdaHost(class string) string {
	if i := strings.Index(class, "$$Lambda"); i > 0 {
		return class[:i]
	}
	return class
}

// isTaskMethod reports the entry of a task handed to a loop: the run()
// of a Runnable or the call() of a Callable.
func isTaskMethod(f Frame) bool { return f.Method == "run" || f.Method == "call" }

// unwrap goes up from a task's entry at frames[i] through wrappers that
// run one task (a run() or call() whose next frame up is another class's
// run() or call()), at most to the call site, and returns the entry of the
// task they run (i itself when frames[i] wraps nothing).
func unwrap(frames []Frame, i, call int) int {
	for i > call && isTaskMethod(frames[i]) && isTaskMethod(frames[i-1]) &&
		outerClass(frames[i].Class) != outerClass(frames[i-1].Class) {
		i--
	}
	return i
}

// taskEntry reports whether the frame of work at frames[w] is a task a loop
// runs, and returns the task's entry: its run() or call() (through the
// JVM's bridge to a lambda, the lambda's body), past any wrapper.
func taskEntry(frames []Frame, w, call int) (int, bool) {
	if strings.Contains(frames[w].Class, "$$Lambda") {
		if w == call {
			return w, false
		}
		return unwrap(frames, w-1, call), true
	}
	if !isTaskMethod(frames[w]) {
		return w, false
	}
	return unwrap(frames, w, call), true
}

// taskRule judges a task whose entry is frames[entry] as a loop of its own:
// idle when no frame of work lies between its entry and the wait (the
// rule, with the entry as the loop) and the wait asks for a next item,
// not for another thread's result. r comes with the thread's loop; it
// leaves with the task's entry as the loop, and the work that decided a
// contention.
func taskRule(r WaitRule, frames []Frame, from, call, entry int, program, waited string) WaitRule {
	if w := workFrame(frames, entry, call, program); w >= 0 {
		r.Loop, r.Work = frames[entry], frames[w]
		return r
	}
	if waitsForResult(frames[from:call], waited) {
		// A latch, a future or a thread's end inside a task: the task
		// waits for another thread's result, inside its work.
		r.Work = frames[entry]
		return r
	}
	r.Loop, r.Work, r.Task, r.Idle = frames[entry], Frame{}, true, true
	return r
}

// waitsForResult reports a wait in machinery that waits for another
// thread's result or arrival (resultWaitTypes, Thread.join) rather than
// for a next item: machinery holds the frames above the call site, waited
// the class of the blocker or object waited on.
func waitsForResult(machinery []Frame, waited string) bool {
	names := []string{outerSimpleName(waited)}
	for _, f := range machinery {
		if f.Class == "java.lang.Thread" && f.Method == "join" {
			return true
		}
		names = append(names, outerSimpleName(f.Class))
	}
	for _, n := range names {
		for _, s := range resultWaitTypes {
			if n != "" && strings.HasSuffix(n, s) {
				return true
			}
		}
	}
	return false
}

// ProgramOrganization is the organization of the program's own code: the
// one of the class whose main method the "main" thread runs, or "?" when
// the dump has no such thread (the main method returned).
func (d *Dump) ProgramOrganization() string {
	for i := range d.Threads {
		t := &d.Threads[i]
		if t.Name != "main" || len(t.Frames) == 0 {
			continue
		}
		for j := len(t.Frames) - 1; j >= 0; j-- {
			f := t.Frames[j]
			if f.Method == "main" && !IsJDKClass(f.Class) {
				return Organization(f.Class)
			}
		}
	}
	return "?"
}

// ChildProcessWait says a thread in Object.wait() on an object of class
// waits for a child process: the JDK's Process implementation
// (java.lang.ProcessImpl; UNIXProcess up to JDK 8) waits on itself until
// its reaper thread sees the process exit and notifies it.
func ChildProcessWait(class string) bool {
	return class == "java.lang.ProcessImpl" || class == "java.lang.UNIXProcess"
}
