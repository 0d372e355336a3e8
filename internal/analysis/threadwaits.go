package analysis

import (
	"fmt"
	"strings"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// Verdicts of a thread's wait (ThreadWait.Verdict).
const (
	VerdictContention = "contention"
	VerdictIdle       = "idle"
	VerdictSleep      = "sleep"
	VerdictIO         = "io"
)

// ThreadWait is one thread of the last dump that is not running, and the
// wait model's verdict on it: contention (it cannot go on until another
// thread acts), idle (at the top of its run loop waiting for work), sleep
// or io, with the reason, and for contention the resource it waits for.
type ThreadWait struct {
	Thread string `json:"thread"`
	// TID is the OS thread id (the dump's nid); 0 when the dump has none.
	TID   int64  `json:"tid"`
	State string `json:"state"`
	// Verdict is "contention", "idle", "sleep" or "io".
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	// Resource is the ContentionSite ID, and Lock the LockSummary ID, a
	// contended thread waits for; empty otherwise.
	Resource string `json:"resource,omitempty"`
	Lock     string `json:"lock,omitempty"`
	// Frame is where the thread waits: the first frame of its own code
	// below the waiting machinery (or its top frame).
	Frame string `json:"frame,omitempty"`
}

// noteLastWaits keeps what threadWaits needs of the last dump: its lock
// table and which lock each contended thread was counted on.
func (a *Aggregator) noteLastWaits(locks []*threaddump.LockInfo, waitsOn map[*threaddump.Thread]string) {
	a.lastLocks, a.lastWaitsOn = locks, waitsOn
}

// threadWaits classes every thread of the last dump that is not running.
func (a *Aggregator) threadWaits() []ThreadWait {
	out := []ThreadWait{}
	d := a.lastDump
	if d == nil {
		if a.os.samples > 0 {
			return a.nativeThreadWaits()
		}
		return out
	}
	type entry struct {
		w  threaddump.Waiter
		li *threaddump.LockInfo
	}
	idle := map[*threaddump.Thread]entry{}
	queued := map[*threaddump.Thread]entry{}
	for _, li := range a.lastLocks {
		for _, w := range li.Waiting {
			idle[w.Thread] = entry{w, li}
		}
		for _, w := range li.Waiters {
			queued[w.Thread] = entry{w, li}
		}
	}
	program := d.ProgramOrganization()
	for _, t := range d.AllThreads() {
		if t.State == threaddump.StateNone || t.State == threaddump.StateNew || t.State == threaddump.StateTerminated {
			continue
		}
		tw := ThreadWait{Thread: t.Name, TID: t.OSThreadID, State: string(t.State)}
		if len(t.Frames) > 0 {
			tw.Frame = t.Frames[0].String()
		}
		switch {
		case a.lastWaitsOn[t] != "":
			id := a.lastWaitsOn[t]
			tw.Verdict, tw.Lock = VerdictContention, id
			if la := a.locks[id]; la != nil && la.kind != "futex" {
				tw.Resource = siteID(la.kind, la.class, la.site)
			}
			if e, ok := queued[t]; ok {
				tw.Reason = queuedReason(e.w, e.li)
				tw.Frame = waitFrame(e.w)
			}
		case t.State == threaddump.StateRunnable && a.native.jni[int(t.OSThreadID)].w.Verdict != "":
			// RUNNABLE in a native method, blocked in the library's code:
			// classed by its native stack (the native wait rule).
			v := a.native.jni[int(t.OSThreadID)]
			tw.Verdict, tw.Reason, tw.Resource = v.w.Verdict, v.w.Reason, v.resource
			if v.w.Site != "" {
				tw.Frame = v.w.Site
			}
			if tw.Verdict == VerdictContention {
				tw.Lock = a.native.jniLock[int(t.OSThreadID)]
			}
		case t.State == threaddump.StateRunnable:
			if len(t.Frames) == 0 || !isIdleFrame(t.Frames[0].String()) {
				continue // running
			}
			tw.Verdict, tw.Reason = VerdictIO, "RUNNABLE in a native wait for I/O or a selector: "+t.Frames[0].Function()
			if f := t.Frames[0]; threaddump.IsJDKClass(f.Class) && len(t.Frames) <= 3 && !strings.HasPrefix(f.Class, "sun.nio.") {
				// The JDK's own service threads wait in native code for
				// their next event (pending references, signals).
				tw.Verdict, tw.Reason = VerdictIdle, "a JDK service thread waiting in native code for its next event: "+f.Function()
			}
		case sleeping(t):
			tw.Verdict, tw.Reason = VerdictSleep, "in Thread.sleep"
		case t.ParkedWithoutBlocker() && queued[t].li == nil && idle[t].li == nil && !threaddump.ApplyWaitRule(t.Frames, 0, program).Idle:
			tw.Verdict, tw.Reason = VerdictSleep, "parked with no blocker, alone at its call site: a pause, like a sleep"
			if r := threaddump.ApplyWaitRule(t.Frames, 0, program); r.CallSite.Class != "" {
				tw.Frame = r.CallSite.String()
			}
		default:
			if e, ok := idle[t]; ok {
				tw.Verdict, tw.Reason = VerdictIdle, e.w.Rule.Reason()
				switch {
				case e.w.Rule.IO:
					tw.Verdict = VerdictIO
				case e.w.Rule.Sleep:
					tw.Verdict = VerdictSleep
				}
				tw.Frame = waitFrame(e.w)
				break
			}
			if e, ok := queued[t]; ok {
				// Queued on a lock the aggregate left out (a suspect
				// entry of a forged name): still contention.
				tw.Verdict, tw.Reason = VerdictContention, queuedReason(e.w, e.li)
				break
			}
			r := threaddump.ApplyWaitRule(t.Frames, 0, program)
			tw.Verdict, tw.Reason = VerdictIdle, r.Reason()
			if !r.Idle {
				// A wait the lock table has no object for (a timed park in
				// a loop with no blocker it could name): contention by
				// the rule, with nothing to count it on.
				tw.Verdict = VerdictContention
			}
			if r.CallSite.Class != "" {
				tw.Frame = r.CallSite.String()
			}
		}
		out = append(out, tw)
	}
	return out
}

// sleeping reports a thread whose top frames are Thread.sleep.
func sleeping(t *threaddump.Thread) bool {
	for i, f := range t.Frames {
		if i == 3 {
			break
		}
		if f.Class == "java.lang.Thread" && strings.HasPrefix(f.Method, "sleep") {
			return true
		}
	}
	return false
}

// queuedReason says why a waiter counts as contention.
func queuedReason(w threaddump.Waiter, li *threaddump.LockInfo) string {
	owner := ""
	if li.Owner != nil {
		owner = fmt.Sprintf(" held by %q", li.Owner.Name)
	}
	class := li.Lock.Class
	if class == "" {
		class = "an object"
	}
	switch w.Kind {
	case threaddump.WaitMonitor:
		return "queued to enter the monitor of " + class + owner
	case threaddump.WaitRelock:
		return "queued to re-enter the monitor of " + class + " after wait()" + owner
	case threaddump.WaitSynchronizer:
		return "parked to acquire " + class + owner
	case threaddump.WaitClassInit:
		return "waits for another thread's static initializer of " + class
	}
	if !w.Rule.Idle && (w.Rule.CallSite.Class != "" || w.Rule.Work.Class != "") {
		return w.Rule.Reason()
	}
	if w.Thread.HoldsOtherThan(li.Lock.Address) {
		return "waits on " + class + " while holding a lock: whoever needs that lock waits too"
	}
	return "waits on " + class + " inside work"
}
