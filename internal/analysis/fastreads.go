package analysis

import (
	"fmt"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
)

// Fast reads (Snapshot.FastReads): without the kernel's count, the
// sampler reads the system calls of the threads that block most often
// many times between samples. A thread caught waiting on a futex in a
// share of its reads spent about that share of its time waiting there.

// FastReadWaits is what the fast reads caught of one futex lock.
type FastReadWaits struct {
	// Sightings of waiters among Reads reads of the threads read;
	// AvgWaiters is the waiters a read round caught on average (of the
	// threads read), Share the sightings' share of the reads.
	Sightings  int64   `json:"sightings"`
	Reads      int64   `json:"reads"`
	AvgWaiters float64 `json:"avg_waiters"`
	Share      float64 `json:"share"`
}

// FastReadsSummary describes the run's fast reads.
type FastReadsSummary struct {
	// Samples is the samples that had fast reads; Rounds and Reads their
	// totals; Threads the most threads read in one sample, and
	// BlocksPerSecond their voluntary switches a second, on average.
	Samples         int     `json:"samples"`
	Rounds          int64   `json:"rounds"`
	Reads           int64   `json:"reads"`
	Threads         int     `json:"threads"`
	BlocksPerSecond float64 `json:"blocks_per_second"`
	// SpacingMs is the time between rounds; CostSeconds the time the reads
	// took in all (ctprof's, not the target's).
	SpacingMs   float64 `json:"spacing_ms"`
	CostSeconds float64 `json:"cost_seconds"`
	// Caught is the share of reads that found a thread in a futex wait.
	Caught float64 `json:"caught"`
	// ExactWaitsMissing says the kernel's exact count was not available
	// (no root or CAP_PERFMON).
	ExactWaitsMissing bool `json:"exact_waits_missing"`
}

type fastAgg struct {
	sightings, reads, rounds int64
}

type fastRun struct {
	samples        int
	rounds, reads  int64
	caught         int64
	maxThreads     int
	blocks, blockN float64
	spacing        time.Duration
	took           time.Duration
}

// addFastReads folds one sample's fast reads in: each futex a lock's (or
// unknown), with the reads of that sample as its denominator.
func (a *Aggregator) addFastReads(fr *snapshot.FastReads) {
	if fr == nil || fr.Rounds == 0 || len(fr.Threads) == 0 {
		return
	}
	if a.fast == nil {
		a.fast = &fastRun{}
	}
	r := a.fast
	reads := int64(fr.Rounds * len(fr.Threads))
	r.samples++
	r.rounds += int64(fr.Rounds)
	r.reads += reads
	r.maxThreads = max(r.maxThreads, len(fr.Threads))
	r.spacing = fr.Spacing
	r.took += fr.Took
	for _, b := range fr.BlocksPerSecond {
		r.blocks += b
		r.blockN++
	}
	for i := range fr.Futexes {
		f := &fr.Futexes[i]
		r.caught += int64(f.Sightings)
		if f.Kind == snapshot.FutexCondition {
			continue
		}
		la := a.futexLock(f.Address, f.Location, f.Kind)
		if la.fast == nil {
			la.fast = &fastAgg{}
		}
		la.fast.sightings += int64(f.Sightings)
		la.fast.reads += reads
		la.fast.rounds += int64(fr.Rounds)
	}
}

// fastSummary reports what the fast reads caught of a lock; nil without.
func fastSummary(la *lockAgg) *FastReadWaits {
	f := la.fast
	if f == nil || f.reads == 0 {
		return nil
	}
	return &FastReadWaits{
		Sightings: f.sightings, Reads: f.reads,
		AvgWaiters: round3(float64(f.sightings) / float64(max(f.rounds, 1))),
		Share:      round3(float64(f.sightings) / float64(f.reads)),
	}
}

// fastRunSummary reports the run's fast reads; nil without any.
func (a *Aggregator) fastRunSummary() *FastReadsSummary {
	r := a.fast
	if r == nil {
		return nil
	}
	s := &FastReadsSummary{
		Samples: r.samples, Rounds: r.rounds, Reads: r.reads, Threads: r.maxThreads,
		SpacingMs: ms(r.spacing), CostSeconds: round6(r.took.Seconds()),
		ExactWaitsMissing: a.missing["futex-trace"],
	}
	if r.blockN > 0 {
		s.BlocksPerSecond = round3(r.blocks / r.blockN)
	}
	if r.reads > 0 {
		s.Caught = round3(float64(r.caught) / float64(r.reads))
	}
	return s
}

// fastHot says the fast reads caught threads waiting on a lock often
// enough to count: in fastHotShare of the reads of the threads that block
// most.
const fastHotShare = 0.02

// fastFutexFinding words the finding for a lock the fast reads caught
// threads waiting on, which the samples barely saw.
func fastFutexFinding(l LockSummary, s *Summary) Finding {
	f := l.FastReads
	name, where := futexSubject(l)
	fr := s.FastReads
	summary := fmt.Sprintf("Threads that block %.0f times a second wait on %s%s: reads of their system calls %s ms apart caught them waiting there in %.0f%% of the reads (%.2f threads at a time on average).",
		fr.BlocksPerSecond, name, where, fmtMs(fr.SpacingMs), 100*f.Share, f.AvgWaiters)
	ev := []string{
		fmt.Sprintf("%d of %d fast reads of up to %d threads, over %d samples; the samples themselves saw waiters in %s", f.Sightings, f.Reads, fr.Threads, fr.Samples, plural(l.DumpsSeen, "sample")),
	}
	if h := l.Holder; h != nil && h.TID != 0 {
		ev = append(ev, fmt.Sprintf("held by %q (tid %d), %s, at the sample with the most waiters", h.Thread, h.TID, h.Runs))
	}
	next := "Shorten the critical section or take the lock less often."
	if fr.ExactWaitsMissing {
		next += " Run ctprof as root (or with CAP_PERFMON) for exact waits: the kernel then counts every wait and its length."
	}
	sev := SeverityWarning
	if f.AvgWaiters >= exactCriticalWaiters {
		sev = SeverityCritical
	}
	return Finding{Kind: FindingLockHotspot, Subject: LockName(l), Severity: sev, Summary: summary, Evidence: ev, NextStep: next, impact: 1e6 + 1000*f.AvgWaiters}
}

// fastReadsWarning says, when the threads block more often than any
// sample can see and the kernel's count was missing, what the run could
// not measure, instead of letting "no lock" stand as a verdict; "" when
// it does not apply.
func fastReadsWarning(s *Summary) string {
	fr := s.FastReads
	if fr == nil || !fr.ExactWaitsMissing {
		return ""
	}
	return fmt.Sprintf("up to %d threads block about %.0f times a second each, too briefly for samples to count their waits; ctprof read their system calls %s ms apart between samples (they were in a futex wait in %.0f%% of the reads). Run ctprof as root (or with CAP_PERFMON) for exact waits: the kernel then counts every futex wait and its length",
		fr.Threads, fr.BlocksPerSecond, fmtMs(fr.SpacingMs), 100*fr.Caught)
}
