package sample

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ctprof/ctprof/internal/jfrsnap"
	"github.com/ctprof/ctprof/internal/jvm"
	"github.com/ctprof/ctprof/internal/procfs"
	"github.com/ctprof/ctprof/internal/snapshot"
)

// JFRLiveOptions turn on a Java Flight Recorder recording of the JVM's
// lock waits for the run (ctprof attach --jfr): its new data is read every
// ReadEvery and its waits put on that tick's Snapshot.Waits.
type JFRLiveOptions struct {
	Enabled bool
	// Threshold is the shortest wait recorded; 0 records every wait (the
	// command line's --jfr-threshold, whose default is
	// jvm.DefaultJFRThreshold).
	Threshold time.Duration
	// Duration is how long each recording runs before ctprof renews it,
	// the longest it outlives a killed ctprof (0: the run's --duration and
	// a margin, at most jvm.DefaultJFRDuration).
	Duration time.Duration
	// ReadEvery is the time between reads of new data (0: 5 s). Each read
	// makes the JVM close its current chunk, which costs it metadata and
	// constant pools written again.
	ReadEvery time.Duration
	// Settings says how the event settings reach the JVM (tests).
	Settings jvm.SettingsMode
}

// DefaultJFRReadEvery is the time between reads of a live recording.
const DefaultJFRReadEvery = 5 * time.Second

// maxLiveWaits bounds the waits one read puts on a Snapshot: the recording
// is bounded in bytes, but a wait costs more in memory than on disk.
const maxLiveWaits = 200_000

// jfrLive is a Sampler's recording state.
type jfrLive struct {
	rec  *jvm.Recording
	next time.Time
	// off is set once the recording cannot be had (attach disabled, an old
	// JDK): said once, not retried.
	off bool
	// takes and first (the first tick's time) tell the run's last tick,
	// which reads whatever is left.
	takes int
	first time.Time
	// shortSeen says a read held waits under the recording's threshold,
	// which another recording of the JVM asked for: said once.
	shortSeen bool
}

// lastTick reports whether Run will end after this tick (--count or
// --duration reached), judged as Run does from the first tick's time.
func (s *Sampler) lastTick(snap *snapshot.Snapshot) bool {
	st := &s.jfr
	if s.opts.Count > 0 && st.takes >= s.opts.Count {
		return true
	}
	return s.opts.Duration > 0 && snap.Time.Add(s.opts.Interval).After(st.first.Add(s.opts.Duration))
}

// jfrRecordingDuration is how long each recording runs: short enough that
// a killed ctprof leaves little behind, long enough to renew rarely.
func (s *Sampler) jfrRecordingDuration() time.Duration {
	o := s.opts.JVM.JFR
	if o.Duration > 0 {
		return o.Duration
	}
	d := jvm.DefaultJFRDuration
	if s.opts.Duration > 0 {
		// The run's length is known: one recording covers it, with a
		// margin for a slow start.
		d = min(d, s.opts.Duration+30*time.Second)
	}
	return d
}

// takeJFR starts the recording on the first tick and reads its new data
// when due. Failures are the snapshot's errors; a target that exited is
// left to the /proc sweep to notice.
func (s *Sampler) takeJFR(ctx context.Context, snap *snapshot.Snapshot) {
	o := s.opts.JVM.JFR
	st := &s.jfr
	if !o.Enabled || s.jvm == nil || st.off {
		return
	}
	st.takes++
	if st.first.IsZero() {
		st.first = snap.Time
	}
	// Half an interval early is on time: ticks jitter, and a read put off
	// by a whole interval for a millisecond would stretch the cadence.
	// The run's last tick reads what is left.
	if snap.Time.Add(s.opts.Interval/2).Before(st.next) && !(st.rec != nil && s.lastTick(snap)) {
		return
	}
	if !s.mayAsk(snap) {
		return // a stopped process, or a JVM that has not answered yet (hung.go)
	}
	every := o.ReadEvery
	if every <= 0 {
		every = DefaultJFRReadEvery
	}
	st.next = snap.Time.Add(every)
	if st.rec == nil {
		if !s.jvm.DumpPossible() {
			st.off = true
			snap.Errors = append(snap.Errors, "no JFR recording: the JVM cannot be attached to")
			return
		}
		// Starting Flight Recorder stops the JVM too (on JDK 17, a first
		// start redefines classes at a safepoint: 0.3 s on a loaded host):
		// that pause is ctprof's, and counts against the budget.
		var rec *jvm.Recording
		var err error
		snap.JFRPause += s.pauseOf(func() {
			rec, err = jvm.StartRecording(ctx, s.jvm, jvm.RecordingOptions{
				Threshold: o.Threshold, Duration: s.jfrRecordingDuration(), Settings: o.Settings,
			})
		})
		switch {
		case err == nil:
			st.rec = rec
			s.answered()
		case errors.Is(err, procfs.ErrProcessGone) || errors.Is(err, jvm.ErrTargetStopped) || ctx.Err() != nil:
			// Gone, stopped (try again once it runs) or interrupted.
		case timedOut(err):
			s.unanswered(snap, "JFR start", s.opts.JVM.DumpTimeout)
			snap.Errors = append(snap.Errors, "JFR recording not started: "+err.Error())
		case errors.Is(err, jvm.ErrAttachFailed):
			// Perhaps a slow JVM: try again at the next read.
			snap.Errors = append(snap.Errors, "JFR recording not started: "+err.Error())
		default:
			st.off = true
			snap.Errors = append(snap.Errors, "no JFR recording: "+err.Error())
		}
		return
	}
	b, err := s.readJFR(ctx, st.rec, every, snap)
	if timedOut(err) {
		s.unanswered(snap, "JFR read", s.opts.JVM.DumpTimeout)
	}
	if err != nil {
		if !errors.Is(err, procfs.ErrProcessGone) && ctx.Err() == nil {
			snap.Errors = append(snap.Errors, "JFR read failed: "+err.Error())
		}
		return
	}
	s.answered()
	if len(b) == 0 {
		return
	}
	s.addJFR(snap, b, st.rec.Threshold())
}

// readJFR reads the recording's new data and puts the pause the read
// caused on snap: JFR.dump makes the JVM close its chunk at a safepoint,
// and that pause is ctprof's as much as a thread dump's is (hsperfdata's
// safepoint and sync time around the read; unknown without counters).
func (s *Sampler) readJFR(ctx context.Context, rec *jvm.Recording, margin time.Duration, snap *snapshot.Snapshot) ([]byte, error) {
	before, berr := s.jvm.ReadPerfData()
	b, err := rec.Read(ctx, margin)
	if berr == nil {
		if after, aerr := s.jvm.ReadPerfData(); aerr == nil {
			a, p := after.Counters(), before.Counters()
			if d := a.SafepointTime - p.SafepointTime + a.SafepointSyncTime - p.SafepointSyncTime; d > 0 {
				snap.JFRPause += d
			}
		}
	}
	return b, err
}

// addJFR puts the waits and GC pauses of a read on snap. Waits shorter
// than threshold, ctprof's recording's, were recorded for another
// recording of the JVM (a user's, at a lower threshold): left out, so the
// counts and totals mean what --jfr-threshold says.
func (s *Sampler) addJFR(snap *snapshot.Snapshot, b []byte, threshold time.Duration) {
	r := jfrsnap.NewReader(bytes.NewReader(b), fmt.Sprintf("JFR recording of pid %d", s.opts.PID), jfrsnap.Options{Program: s.program, ProgramKnown: s.programKnown})
	dropped, short := 0, 0
	for {
		batch, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				snap.Errors = append(snap.Errors, err.Error())
			}
			break
		}
		kept := batch.Waits[:0]
		for _, w := range batch.Waits {
			// A microsecond for the ticks-to-nanoseconds rounding of a
			// wait the JVM kept at exactly the threshold.
			if w.Duration+time.Microsecond < threshold {
				short++
				continue
			}
			kept = append(kept, w)
		}
		batch.Waits = kept
		if room := maxLiveWaits - len(snap.Waits); len(batch.Waits) > room {
			dropped += len(batch.Waits) - room
			batch.Waits = batch.Waits[:room]
		}
		snap.Waits = append(snap.Waits, batch.Waits...)
		snap.GCPauses = append(snap.GCPauses, batch.GCPauses...)
	}
	if dropped > 0 {
		snap.Errors = append(snap.Errors, fmt.Sprintf("JFR: %d waits beyond %d in one read were left out; raise --jfr-threshold", dropped, maxLiveWaits))
	}
	if short > 0 && !s.jfr.shortSeen {
		s.jfr.shortSeen = true
		snap.Errors = append(snap.Errors, fmt.Sprintf("JFR: another recording of the JVM records waits under ctprof's threshold (%v); %d such waits were left out of this read, and later ones will be too", threshold, short))
	}
	if snap.Waits == nil {
		// A read happened: the waits are known to be none, not unknown.
		snap.Waits = []snapshot.WaitEvent{}
	}
}

// flushJFR reads what the recording holds since the last read when the
// run is interrupted (Ctrl-C), so the waits of its last seconds are not
// lost, and hands them on as a Snapshot that carries only waits (the
// Aggregator adds their waits and counts no sample). The run's context is
// cancelled by then, so the read gets its own, bounded.
func (s *Sampler) flushJFR(fn func(*snapshot.Snapshot)) {
	rec := s.jfr.rec
	if rec == nil || !s.answering() {
		return // a JVM that does not answer would hold Ctrl-C for its timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap := &snapshot.Snapshot{Time: time.Now(), Target: s.target, Interval: s.opts.Interval, Waits: []snapshot.WaitEvent{}}
	b, err := s.readJFR(ctx, rec, 0, snap)
	if err != nil {
		if !errors.Is(err, procfs.ErrProcessGone) {
			snap.Errors = append(snap.Errors, "JFR read at the end failed: "+err.Error())
			fn(snap)
		}
		return
	}
	if len(b) == 0 {
		return
	}
	s.addJFR(snap, b, rec.Threshold())
	if len(snap.Waits) > 0 || len(snap.GCPauses) > 0 || len(snap.Errors) > 0 {
		fn(snap)
	}
}

// stopJFR stops and removes the recording: at the end of Run, and on
// Close. Ctrl-C has cancelled the run's context by then, so it gets its
// own, bounded.
func (s *Sampler) stopJFR() error {
	rec := s.jfr.rec
	if rec == nil {
		return nil
	}
	s.jfr.rec = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !s.answering() {
		// Ask nothing of a JVM that does not answer: the recording ends
		// by itself (its duration), and Stop still removes ctprof's
		// directory.
		cancel()
		_ = rec.Stop(ctx)
		return nil
	}
	return rec.Stop(ctx)
}

// JFRRecording is the name of the run's current recording, as JFR.check
// lists it; empty when none runs.
func (s *Sampler) JFRRecording() string {
	if s.jfr.rec == nil {
		return ""
	}
	return s.jfr.rec.Name()
}
